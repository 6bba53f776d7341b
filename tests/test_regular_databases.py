"""Every database opened by name outside the query child refuses a FIFO (as the database or as
its `-journal`) with the reason, at once: SQLite and DuckDB open by name and block, so a FIFO
held the open, or the first query, for ever (`file_digests.regular_database`)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from querybench import store
from querybench.engines.load import read_source
from querybench.engines.load_targets import open_writer
from querybench.engines.sqlite import SQLiteEngine
from querybench.envs import bird_data
from querybench.errors import DataError, EngineError
from querybench.file_digests import regular_database
from querybench.tasks.spider1_sql import SpiderSchema

# A refusal takes a few system calls; a hang never ends.
WITHIN_S = 10.0


def within(call: Callable[[], Any], fifos: list[Path]) -> Any:
    """`call`'s value or exception, from a thread given `WITHIN_S`; a call still blocked then
    fails the test (its FIFOs are opened for writing, so the thread ends)."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(WITHIN_S)
    if thread.is_alive():
        for fifo in fifos:  # a reader blocked in open() wakes when a writer comes
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(WITHIN_S)
        pytest.fail(f"still blocked after {WITHIN_S} s on {[str(f) for f in fifos]}")
    return outcome[0]


def database(path: Path) -> Path:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.executescript("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);")
    return path


@pytest.fixture
def fifo_database(tmp_path: Path) -> Iterator[Path]:
    fifo = tmp_path / "db" / "db.sqlite"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    yield fifo


@pytest.fixture
def fifo_journal(tmp_path: Path) -> Iterator[Path]:
    """A regular database whose `-journal` is a FIFO (SQLite reads it as a hot journal)."""
    path = database(tmp_path / "j.sqlite")
    os.mkfifo(tmp_path / "j.sqlite-journal")
    yield path


def test_the_bird_prompt_refuses_a_fifo_database(fifo_database: Path) -> None:
    bird_data.create_statements.cache_clear()
    error = within(lambda: bird_data.create_statements(fifo_database), [fifo_database])
    assert isinstance(error, DataError)
    assert str(error) == f"{fifo_database}: cannot read the schema: not a regular file"


def test_the_bird_prompt_refuses_a_fifo_journal(fifo_journal: Path) -> None:
    bird_data.create_statements.cache_clear()
    journal = Path(f"{fifo_journal}-journal")
    error = within(lambda: bird_data.create_statements(fifo_journal), [journal])
    assert isinstance(error, DataError) and "not a regular file" in str(error)


def test_the_bird_prompt_still_reads_a_regular_database(tmp_path: Path) -> None:
    bird_data.create_statements.cache_clear()
    assert bird_data.create_statements(database(tmp_path / "ok.sqlite")) == (
        "CREATE TABLE t (a INTEGER)",
    )


def test_the_spider_schema_refuses_a_fifo(fifo_database: Path, fifo_journal: Path) -> None:
    for path, fifo in (
        (fifo_database, fifo_database),
        (fifo_journal, Path(f"{fifo_journal}-journal")),
    ):
        error = within(lambda p=path: SpiderSchema.from_sqlite(p), [fifo])
        assert isinstance(error, DataError) and "not a regular file" in str(error), error


def test_db_load_refuses_a_fifo_source(fifo_journal: Path, tmp_path: Path) -> None:
    error = within(lambda: list(read_source(fifo_journal)), [Path(f"{fifo_journal}-journal")])
    assert isinstance(error, DataError) and "not a regular file" in str(error)
    folder = tmp_path / "tables"
    folder.mkdir()
    os.mkfifo(folder / "t.csv")
    error = within(lambda: list(read_source(folder)), [folder / "t.csv"])
    assert isinstance(error, DataError) and "not a regular file" in str(error)


def test_db_load_refuses_a_fifo_target(fifo_database: Path) -> None:
    def write() -> None:
        with open_writer(f"sqlite://{fifo_database}"):
            pass

    error = within(write, [fifo_database])
    assert isinstance(error, EngineError) and "not a regular file" in str(error)


def test_an_engine_refuses_a_fifo_journal_at_its_open(fifo_journal: Path) -> None:
    def query() -> object:
        with SQLiteEngine(fifo_journal) as engine:
            return engine.execute("SELECT a FROM t")

    error = within(query, [Path(f"{fifo_journal}-journal")])
    assert isinstance(error, EngineError)
    assert str(error) == f"cannot open {fifo_journal}: {fifo_journal}-journal: not a regular file"


def test_a_store_file_that_is_a_fifo_is_set_aside(tmp_path: Path) -> None:
    kind = store.Kind("t.sqlite", (), 1 << 20)
    fifo = tmp_path / kind.file
    os.mkfifo(fifo)
    os.mkfifo(tmp_path / f"{kind.file}-wal")
    opened = within(lambda: store.Store(fifo, kind), [fifo, tmp_path / f"{kind.file}-wal"])
    assert isinstance(opened, store.Store), opened
    assert fifo.is_file() and (tmp_path / f"{kind.file}.damaged").exists()


def test_the_check_is_the_drivers_missing_file_and_passes_a_regular_one(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        regular_database(tmp_path / "none.sqlite")
    path = database(tmp_path / "r.sqlite")
    assert regular_database(path, ("-wal", "-journal")) == path


def test_a_bird_question_file_that_is_a_fifo_is_a_data_error(tmp_path: Path) -> None:
    from querybench.tasks.bird import load_bird

    fifo = tmp_path / "train.json"
    os.mkfifo(fifo)
    error = within(lambda: load_bird("bird-train", tmp_path, path=fifo), [fifo])
    assert isinstance(error, DataError) and "not a regular file" in str(error), error
