"""What every engine must do, checked on a small database each engine builds the same way."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from querybench.engines import Engine, connect
from querybench.errors import (
    EngineError,
    ErrorCode,
    QueryOutOfMemory,
    QueryRefused,
    QueryTimeout,
    ResultTooLarge,
)

KINDS = ["sqlite", "duckdb"]
# A low memory limit so DuckDB's out-of-memory refusals come quickly.
ENGINE_OPTIONS: dict[str, dict[str, Any]] = {"sqlite": {}, "duckdb": {"memory_limit": "512MB"}}
SUFFIX = {"sqlite": ".sqlite", "duckdb": ".duckdb"}

SCHEMA = [
    "CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, score DOUBLE, photo BLOB)",
    "CREATE TABLE concert (id INTEGER, singer_id INTEGER, year INTEGER)",
    "CREATE TABLE nums (n INTEGER)",
    "CREATE VIEW singer_names AS SELECT name FROM singer",
]
SINGERS = [(1, "Ann", 9.5, b"\x00\x01"), (2, "Bob", None, None), (3, "Zoë", 7.25, b"")]
CONCERTS = [(10, 1, 2019), (11, 3, 2020)]
NUMS = [(n,) for n in range(1000)]
DECLARED_TYPES = {
    "sqlite": {"id": "INTEGER", "name": "TEXT", "score": "DOUBLE", "photo": "BLOB"},
    "duckdb": {"id": "INTEGER", "name": "VARCHAR", "score": "DOUBLE", "photo": "BLOB"},
}
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c"

# `{elsewhere}` is a directory outside the database's own; nothing may ever appear in it.
HOSTILE_COMMON = [
    "INSERT INTO singer VALUES (9, 'x', 1.0, NULL)",
    "UPDATE singer SET name = 'x'",
    "DELETE FROM singer",
    "DROP TABLE singer",
    "DROP VIEW singer_names",
    "CREATE TABLE t2 (a INTEGER)",
    "CREATE TEMP TABLE t3 (a INTEGER)",
    "CREATE VIEW v2 AS SELECT 1",
    "ALTER TABLE singer ADD COLUMN x INTEGER",
    "ATTACH '{elsewhere}/attached.db' AS other",
    "WITH x AS (SELECT 1) INSERT INTO concert (id) SELECT * FROM x",
    "SELECT 1; DROP TABLE singer",
    "SELECT 1; SELECT 2",
    "BEGIN",
]
HOSTILE = {
    "sqlite": [
        *HOSTILE_COMMON,
        "PRAGMA user_version=5",
        "PRAGMA journal_mode=WAL",
        "PRAGMA writable_schema=1",
        "PRAGMA query_only=0",
        "VACUUM INTO '{elsewhere}/copy.db'",
        "VACUUM",
        "SELECT load_extension('x')",
        "REINDEX",
        "ANALYZE",
        "SAVEPOINT a",
        "CREATE TEMP TRIGGER tr AFTER INSERT ON singer BEGIN SELECT 1; END",
        "/* hidden */ WITH x AS (SELECT 1) DELETE FROM singer",
    ],
    "duckdb": [
        *HOSTILE_COMMON,
        "COPY singer TO '{elsewhere}/out.csv'",
        "COPY (SELECT 1) TO '{elsewhere}/out.parquet' (FORMAT parquet)",
        "EXPORT DATABASE '{elsewhere}/export'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/hostname')",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access=true",
        "SET temp_directory='{elsewhere}'",
        "RESET lock_configuration",
        "CHECKPOINT",
        "PRAGMA enable_profiling",
        "CREATE SECRET s (TYPE s3)",
    ],
}
HUGE = {
    "sqlite": [
        "SELECT zeroblob(2000000000)",
        "SELECT randomblob(2000000000)",
        "SELECT length(zeroblob(2000000000))",
    ],
    "duckdb": [
        "SELECT string_agg('xxxxxxxxxx', '') FROM range(300000000)",
        "SELECT list(range) FROM range(1000000000)",
    ],
}
EXPLODING = [
    "SELECT a.n, b.n, c.n FROM nums a, nums b, nums c",
    "SELECT count(*) FROM nums a, nums b, nums c, nums d",
    "SELECT a.n FROM nums a, nums b, nums c ORDER BY a.n + b.n * c.n",
]


def build_database(kind: str, directory: Path) -> Path:
    """The test database, created with each engine's own writable driver."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"music{SUFFIX[kind]}"
    nums = "INSERT INTO nums VALUES " + ", ".join(f"({n})" for (n,) in NUMS)
    singers = "INSERT INTO singer VALUES (?, ?, ?, ?)"
    concerts = "INSERT INTO concert VALUES (?, ?, ?)"
    if kind == "sqlite":
        with sqlite3.connect(path) as conn:
            for statement in [*SCHEMA, nums]:
                conn.execute(statement)
            conn.executemany(singers, SINGERS)
            conn.executemany(concerts, CONCERTS)
        conn.close()
    else:
        with duckdb.connect(str(path)) as dconn:
            for statement in [*SCHEMA, nums]:
                dconn.execute(statement)
            dconn.executemany(singers, SINGERS)
            dconn.executemany(concerts, CONCERTS)
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {k: build_database(k, tmp_path_factory.mktemp(f"template-{k}")) for k in KINDS}


@pytest.fixture
def database(kind: str, templates: dict[str, Path], tmp_path: Path) -> Path:
    """A fresh copy of the test database, alone in its own directory."""
    path = tmp_path / "db" / templates[kind].name
    path.parent.mkdir()
    shutil.copyfile(templates[kind], path)
    return path


@pytest.fixture
def engine(kind: str, database: Path) -> Iterator[Engine]:
    eng = connect(database, **ENGINE_OPTIONS[kind])
    yield eng
    eng.close()


def test_connect_picks_the_engine(kind: str, engine: Engine) -> None:
    assert engine.dialect == kind


def test_tables_lists_tables_and_views_with_columns(engine: Engine) -> None:
    tables = {t.name: t for t in engine.tables()}
    assert set(tables) == {"singer", "concert", "nums", "singer_names"}
    assert [c.name for c in tables["singer"].columns] == ["id", "name", "score", "photo"]
    assert [c.name for c in tables["singer_names"].columns] == ["name"]
    assert all(t.schema is None for t in tables.values())


def test_column_types_are_the_declared_types(kind: str, engine: Engine) -> None:
    singer = next(t for t in engine.tables() if t.name == "singer")
    assert {c.name: c.type for c in singer.columns} == DECLARED_TYPES[kind]


def test_rows_are_plain_python_values(engine: Engine) -> None:
    result = engine.execute("SELECT id, name, score, photo FROM singer ORDER BY id")
    assert result.columns == ("id", "name", "score", "photo")
    assert result.rows == SINGERS
    assert [type(v) for v in result.rows[0]] == [int, str, float, bytes]


def test_duplicate_column_names_are_kept(engine: Engine) -> None:
    result = engine.execute("SELECT 1 AS a, 2 AS a")
    assert result.columns == ("a", "a")
    assert result.to_arrow().column_names == ["a", "a_1"]


def test_sample_rows(engine: Engine) -> None:
    sample = engine.sample_rows("singer", 2)
    assert sample.columns == ("id", "name", "score", "photo")
    assert len(sample.rows) == 2
    assert len(engine.sample_rows("singer_names").rows) == 3


ONE_STATEMENT = ["SELECT 1", "SELECT 1;", "SELECT 1;;", "SELECT 1; -- done", "SELECT 1 /* ; */ ;\n"]
TWO_STATEMENTS = ["SELECT 1; SELECT 2", "SELECT 1;; SELECT 2", "SELECT ';'; SELECT 2"]


@pytest.mark.parametrize("sql", [*ONE_STATEMENT, "SELECT ';'"])
def test_one_statement_with_trailing_noise_runs(engine: Engine, sql: str) -> None:
    assert len(engine.execute(sql).rows) == 1


@pytest.mark.parametrize("sql", TWO_STATEMENTS)
def test_second_statement_is_refused(engine: Engine, sql: str) -> None:
    with pytest.raises(QueryRefused) as info:
        engine.execute(sql)
    assert info.value.code == "refused_write"


@pytest.mark.parametrize("sql", ["", "  ", "-- nothing", "/* nothing */ ;"])
def test_empty_statement_is_an_error(engine: Engine, sql: str) -> None:
    with pytest.raises(EngineError) as info:
        engine.execute(sql)
    assert type(info.value) is EngineError and info.value.code == ErrorCode.EXEC_ERROR


def test_syntax_error_is_an_exec_error_with_the_driver_message(engine: Engine) -> None:
    with pytest.raises(EngineError) as info:
        engine.execute("SELEC name FROM singer")
    assert type(info.value) is EngineError
    assert "syntax error" in str(info.value)


def test_row_cap(engine: Engine) -> None:
    assert len(engine.execute("SELECT n FROM nums", max_rows=1000).rows) == 1000
    with pytest.raises(ResultTooLarge) as info:
        engine.execute("SELECT n FROM nums", max_rows=999)
    assert info.value.code == "too_many_rows"


# Five rows of 400,000 characters each: 2 MB in all, whatever the engine.
WIDE_ROWS = {
    "sqlite": "SELECT printf('%.*c', 400000, 'x') FROM nums LIMIT 5",
    "duckdb": "SELECT repeat('x', 400000) FROM nums LIMIT 5",
}


def test_byte_cap(kind: str, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYBENCH_MAX_RESULT_BYTES", "2100000")
    assert len(engine.execute(WIDE_ROWS[kind]).rows) == 5
    monkeypatch.setenv("QUERYBENCH_MAX_RESULT_BYTES", "1000000")
    with pytest.raises(ResultTooLarge) as info:
        engine.execute(WIDE_ROWS[kind])
    assert info.value.code == "too_large" and "bytes" in str(info.value)
    assert (
        len(engine.execute("SELECT n FROM nums").rows) == 1000
    )  # small rows are not counted as wide


def test_timeout_really_stops_and_the_engine_stays_usable(engine: Engine) -> None:
    start = time.monotonic()
    with pytest.raises(QueryTimeout) as info:
        engine.execute(ENDLESS, timeout=0.5)
    assert time.monotonic() - start < 3.0
    assert info.value.code == "timeout"
    assert engine.execute("SELECT count(*) FROM singer").rows == [(3,)]


def test_a_finished_query_is_never_interrupted_later(engine: Engine) -> None:
    for _ in range(10):
        assert engine.execute("SELECT 1", timeout=0.2).rows == [(1,)]
    time.sleep(0.3)  # past every timeout set above
    assert engine.execute("SELECT count(*) FROM nums").rows == [(1000,)]


# The limit each exploding query meets, and its timeout: the cross join streams past the
# 100,000-row cap in well under a second at idle (a long timeout keeps a loaded machine from
# timing it out first); the count and the sort run past a 1 s timeout (DuckDB's sort may meet
# its memory limit first on a fast machine: the instance's too_large is the one other outcome).
EXPLODING_LIMIT: dict[str, tuple[type[EngineError], float]] = {
    EXPLODING[0]: (ResultTooLarge, 30.0),
    EXPLODING[1]: (QueryTimeout, 1.0),
    EXPLODING[2]: (QueryTimeout, 1.0),
}


@pytest.mark.parametrize("sql", EXPLODING)
def test_exploding_queries_stop_at_a_limit(kind: str, engine: Engine, sql: str) -> None:
    expected, timeout = EXPLODING_LIMIT[sql]
    start = time.monotonic()
    with pytest.raises(EngineError) as info:
        engine.execute(sql, timeout=timeout, max_rows=100_000)
    if kind == "duckdb" and sql == EXPLODING[2] and type(info.value) is QueryOutOfMemory:
        assert "Out of Memory" in str(info.value) and info.value.code == ErrorCode.TOO_LARGE
    else:
        assert type(info.value) is expected
        assert info.value.code == expected.code
    assert time.monotonic() - start < 4.0
    assert engine.execute("SELECT 1").rows == [(1,)]


# SQLite refuses a value past its length limit (an exec error); DuckDB meets its memory limit,
# which is the instance's too_large, as the query child's memory cap is.
HUGE_OUTCOME: dict[str, tuple[type[EngineError], str]] = {
    "sqlite": (EngineError, "string or blob too big"),
    "duckdb": (QueryOutOfMemory, "Out of Memory Error"),
}


@pytest.mark.parametrize(("kind", "sql"), [(k, s) for k in KINDS for s in HUGE[k]])
def test_huge_values_fail_instead_of_allocating(kind: str, engine: Engine, sql: str) -> None:
    expected, words = HUGE_OUTCOME[kind]
    with pytest.raises(EngineError) as info:
        engine.execute(sql, timeout=10.0)
    assert type(info.value) is expected and info.value.code == expected.code
    assert words in str(info.value)


@pytest.mark.parametrize(("kind", "sql"), [(k, s) for k in KINDS for s in HOSTILE[k]])
def test_hostile_statement_is_refused(
    engine: Engine, database: Path, tmp_path: Path, sql: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = sha256(database)
    with pytest.raises(QueryRefused) as info:
        engine.execute(sql.format(elsewhere=elsewhere))
    assert info.value.code == "refused_write"
    assert sha256(database) == before
    assert list(elsewhere.iterdir()) == []


def test_nothing_hostile_changes_the_database_or_its_directory(
    kind: str, engine: Engine, database: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = sha256(database)
    listing = sorted(p.name for p in database.parent.iterdir())
    for sql in [*HOSTILE[kind], *HUGE[kind], *EXPLODING, ENDLESS]:
        with pytest.raises(EngineError):
            engine.execute(sql.format(elsewhere=elsewhere), timeout=0.5, max_rows=100_000)
    assert engine.execute("SELECT count(*) FROM singer").rows == [(3,)]
    engine.close()
    assert sha256(database) == before
    assert sorted(p.name for p in database.parent.iterdir()) == listing
    assert list(elsewhere.iterdir()) == []
