"""The safety and conformance checks every server engine passes; each test_engines_<kind>.py
imports them and supplies `kind`, `hostile` and `endless` for its engine."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from querybench.engines import Engine, connect
from querybench.errors import EngineError, QueryRefused, QueryTimeout, ResultTooLarge
from tests.server_databases import checksum, server_database
from tests.test_engines_conformance import (
    HOSTILE_COMMON,
    ONE_STATEMENT,
    SINGERS,
    TWO_STATEMENTS,
    build_database,
)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("sqlite", tmp_path_factory.mktemp("server-source"))


@pytest.fixture
def url(kind: str, source: Path, tmp_path: Path) -> Iterator[str]:
    with server_database(kind, source, tmp_path) as database_url:
        yield database_url


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    eng = connect(url)
    yield eng
    eng.close()


def test_tables_and_columns(engine: Engine) -> None:
    tables = {t.name: t for t in engine.tables()}
    assert set(tables) == {"singer", "concert", "nums"}  # views are not loaded
    assert [c.name for c in tables["singer"].columns] == ["id", "name", "score", "photo"]
    assert all(t.schema is None for t in tables.values())


def test_rows_round_trip_from_sqlite(kind: str, engine: Engine) -> None:
    result = engine.execute("SELECT id, name, score, photo FROM singer ORDER BY id")
    assert result.columns == ("id", "name", "score", "photo")
    expected = SINGERS
    if kind == "chdb":  # ClickHouse has no BLOB: bytes come back as text
        expected = [(i, n, s, None if p is None else p.decode()) for i, n, s, p in SINGERS]
    assert result.rows == expected
    assert result.to_arrow().num_rows == 3


def test_sample_rows(engine: Engine) -> None:
    assert len(engine.sample_rows("singer", 2).rows) == 2


@pytest.mark.parametrize("sql", ONE_STATEMENT)
def test_one_statement_runs(engine: Engine, sql: str) -> None:
    assert engine.execute(sql).rows == [(1,)]


@pytest.mark.parametrize("sql", TWO_STATEMENTS)
def test_second_statement_is_refused(engine: Engine, sql: str) -> None:
    with pytest.raises(QueryRefused):
        engine.execute(sql)


def test_syntax_error_is_a_plain_exec_error(engine: Engine) -> None:
    with pytest.raises(EngineError) as info:
        engine.execute("SELEC name FROM singer")
    assert type(info.value) is EngineError
    assert "syntax error" in str(info.value)


def test_row_cap(engine: Engine) -> None:
    assert len(engine.execute("SELECT n FROM nums", max_rows=1000).rows) == 1000
    with pytest.raises(ResultTooLarge):
        engine.execute("SELECT n FROM nums", max_rows=999)
    assert engine.execute("SELECT count(*) FROM nums").rows == [(1000,)]


def test_timeout_stops_the_query_and_the_engine_stays_usable(engine: Engine, endless: str) -> None:
    start = time.monotonic()
    with pytest.raises(QueryTimeout) as info:
        engine.execute(endless, timeout=0.5)
    assert info.value.code == "timeout"
    assert time.monotonic() - start < 5.0
    assert engine.execute("SELECT count(*) FROM singer").rows == [(3,)]


def test_hostile_statements_are_refused_and_change_nothing(
    kind: str, engine: Engine, url: str, hostile: list[str], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = checksum(kind, url)
    for sql in [*HOSTILE_COMMON, *hostile]:
        with pytest.raises(QueryRefused):
            engine.execute(sql.format(elsewhere=elsewhere), timeout=5.0)
    assert engine.execute("SELECT count(*) FROM singer").rows == [(3,)]
    assert checksum(kind, url) == before
    assert list(elsewhere.iterdir()) == []
