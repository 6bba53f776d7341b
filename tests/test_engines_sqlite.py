"""SQLite specifics: each read-only layer holds on its own, values match plain sqlite3."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from querybench.engines.sqlite import SQLiteEngine, single_statement
from querybench.errors import EngineError, QueryRefused, QueryTimeout, ResultTooLarge
from tests.test_engines_conformance import build_database


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = build_database("sqlite", tmp_path / "db")
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE mixed (v)")
        conn.executemany(
            "INSERT INTO mixed VALUES (?)", [(1,), ("1",), (1.0,), (b"1",), (None,), (2**62,)]
        )
        conn.execute("CREATE TABLE broken (t TEXT)")
        conn.execute("INSERT INTO broken VALUES (CAST(x'ff41' AS TEXT)), ('héllo')")
        conn.execute("CREATE INDEX singer_name ON singer (name)")
    conn.close()
    return path


@pytest.fixture
def engine(database: Path) -> Iterator[SQLiteEngine]:
    with SQLiteEngine(database) as eng:
        yield eng


def plain_sqlite3(database: Path, sql: str) -> list[tuple[object, ...]]:
    """What the official Spider 1.0 and BIRD scorers see."""
    conn = sqlite3.connect(database)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT v FROM mixed",
        "SELECT v, typeof(v) FROM mixed ORDER BY v",
        "SELECT avg(n), sum(n), 7 / 2, 7 / 2.0, 1e308 * 10 FROM nums",
        "SELECT * FROM singer",
    ],
)
def test_values_are_exactly_plain_sqlite3s(engine: SQLiteEngine, database: Path, sql: str) -> None:
    rows = engine.execute(sql).rows
    assert rows == plain_sqlite3(database, sql)
    assert [[type(v) for v in row] for row in rows] == [
        [type(v) for v in row] for row in plain_sqlite3(database, sql)
    ]


def test_invalid_utf8_is_decoded_leniently_instead_of_failing(
    engine: SQLiteEngine, database: Path
) -> None:
    with pytest.raises(sqlite3.OperationalError, match="decode"):
        plain_sqlite3(database, "SELECT t FROM broken")
    result = engine.execute("SELECT t FROM broken")
    assert result.rows == [("A",), ("héllo",)]  # errors="ignore", as the Spider test suite
    assert result.extra == {"text_decode_errors": "ignore"}
    assert engine.execute("SELECT name FROM singer WHERE id = 3").extra == {}
    replacing = SQLiteEngine(database, text_errors="replace")
    assert replacing.execute("SELECT t FROM broken").rows == [("\ufffdA",), ("héllo",)]
    replacing.close()


@pytest.mark.parametrize(
    "sql",
    [
        "PRAGMA table_info(singer)",
        "PRAGMA index_list(singer)",
        "PRAGMA foreign_key_list(concert)",
        "PRAGMA user_version",
        "SELECT name FROM pragma_table_info('singer')",
        "SELECT value FROM json_each('[1, 2]')",
        "EXPLAIN QUERY PLAN SELECT * FROM singer",
    ],
)
def test_reading_pragmas_and_table_functions_are_allowed(engine: SQLiteEngine, sql: str) -> None:
    engine.execute(sql)


def test_the_authorizer_refuses_what_slips_past_the_keyword_check(
    engine: SQLiteEngine, tmp_path: Path
) -> None:
    conn = engine._conn
    for sql in [
        f"ATTACH '{tmp_path / 'a.db'}' AS a",
        f"VACUUM INTO '{tmp_path / 'v.db'}'",
        "CREATE TEMP TABLE t (a)",
        "BEGIN",
    ]:
        with pytest.raises(sqlite3.DatabaseError, match=r"not authorized|authorization denied"):
            conn.execute(sql)
    assert not (tmp_path / "a.db").exists() and not (tmp_path / "v.db").exists()


def test_without_the_authorizer_attach_and_writes_still_fail(
    engine: SQLiteEngine, tmp_path: Path
) -> None:
    conn = engine._conn
    conn.set_authorizer(None)
    with pytest.raises(sqlite3.OperationalError, match="too many attached"):
        conn.execute(f"ATTACH '{tmp_path / 'a.db'}' AS a")
    with pytest.raises(sqlite3.OperationalError, match="too many attached"):
        conn.execute(f"VACUUM INTO '{tmp_path / 'v.db'}'")
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM singer")
    assert [p.name for p in tmp_path.iterdir()] == ["db"]


def test_a_timeout_also_stops_a_query_while_its_rows_stream(engine: SQLiteEngine) -> None:
    endless_rows = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c"
    with pytest.raises(QueryTimeout):
        engine.execute(endless_rows, timeout=0.3)
    assert engine.execute("SELECT 1").rows == [(1,)]


@pytest.mark.parametrize(
    ("sql", "statement"),
    [
        ("SELECT 1", "SELECT 1"),
        ("SELECT 1;", "SELECT 1"),
        ("SELECT ';' ; -- x; y\n ;", "SELECT ';' "),
        ('SELECT "a;b" FROM [c;d]', 'SELECT "a;b" FROM [c;d]'),
        ("SELECT 'it''s;' /* ; */", "SELECT 'it''s;' /* ; */"),
    ],
)
def test_single_statement_cuts_only_trailing_noise(sql: str, statement: str) -> None:
    assert single_statement(sql) == statement


@pytest.mark.parametrize(
    "sql", ["SELECT 1; SELECT 2", "SELECT 1; /* */ x", "-- lead\n DELETE FROM t", "  vacuum"]
)
def test_single_statement_refuses(sql: str) -> None:
    with pytest.raises(QueryRefused):
        single_statement(sql)


def test_closed_engine_raises_an_engine_error(database: Path) -> None:
    engine = SQLiteEngine(database)
    engine.close()
    with pytest.raises(EngineError) as info:
        engine.execute("SELECT 1")
    assert type(info.value) is EngineError


def test_execute_batches_streams_the_rows_of_execute(engine: SQLiteEngine) -> None:
    sql = "SELECT v FROM mixed"
    batches = list(engine.execute_batches(sql, batch=4))
    assert [len(b) for b in batches] == [4, 2]
    assert [row for b in batches for row in b] == engine.execute(sql).rows
    # invalid UTF-8 after a valid row is decoded as `execute` decodes it, each row handed out once
    broken = "SELECT t FROM broken ORDER BY rowid DESC"
    streamed = [row for b in engine.execute_batches(broken, batch=1) for row in b]
    assert streamed == engine.execute(broken).rows == [("héllo",), ("A",)]


def test_execute_batches_keeps_the_guarantees_of_execute(engine: SQLiteEngine) -> None:
    with pytest.raises(QueryRefused):  # refused when asked, before anything is read
        engine.execute_batches("SELECT 1; SELECT 2")
    with pytest.raises(QueryRefused):
        next(engine.execute_batches("SELECT load_extension('x')"))
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
    with pytest.raises(QueryTimeout):
        next(engine.execute_batches(endless, timeout=0.2))
    many = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"
    handed: list[int] = []
    with pytest.raises(ResultTooLarge):  # the rows within the cap come out first
        handed.extend(len(b) for b in engine.execute_batches(many, max_rows=25, batch=10))
    assert handed == [10, 10, 5]


def test_the_byte_cap_counts_row_by_row(
    engine: SQLiteEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rows of ~10 MB each: a chunk of them is never fetched whole, the cap stops the next row.
    monkeypatch.setenv("QUERYBENCH_MAX_RESULT_BYTES", "15000000")
    blobs = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
        "SELECT zeroblob(9900000) FROM n"
    )
    with pytest.raises(ResultTooLarge) as info:
        engine.execute(blobs, timeout=30)
    assert info.value.code == "too_large"
    with pytest.raises(ResultTooLarge) as info:
        list(engine.execute_batches(blobs, timeout=30, batch=1000))
    assert info.value.code == "too_large"


def test_execute_batches_stopped_early_frees_the_connection(engine: SQLiteEngine) -> None:
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"
    batches = engine.execute_batches(endless, batch=3)
    assert next(batches) == [(1,), (2,), (3,)]
    batches.close()  # the cursor is closed and the lock released at once
    assert engine.execute("SELECT 7").rows == [(7,)]


_HEAP_PROBE = """
import sqlite3
import sys
from querybench.engines.sqlite import SQLiteEngine
from querybench.errors import EngineError

engine = SQLiteEngine(sys.argv[1])
big = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) "
    "SELECT count(DISTINCT printf('%0100d', x)) FROM c"
)
try:
    engine.execute(big, timeout=60)
    print("ran")
except EngineError as exc:
    print(type(exc).__name__, type(exc.__cause__).__name__, exc)
print(engine.execute("SELECT 1").rows)
print(sqlite3.connect(":memory:").execute("PRAGMA hard_heap_limit").fetchone()[0])
"""


def test_a_query_past_the_heap_cap_fails_as_out_of_memory_and_the_engine_goes_on(
    database: Path,
) -> None:
    # the cap is process-wide: probed in a process of its own, with a low cap
    import os
    import subprocess
    import sys

    env = {**os.environ, "QUERYBENCH_SQLITE_HEAP_BYTES": str(64 * 1024**2)}
    probe = [sys.executable, "-c", _HEAP_PROBE, str(database)]
    lines = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=120).stdout
    assert lines.splitlines() == [
        "QueryOutOfMemory MemoryError the query ran out of memory",
        "[(1,)]",
        str(64 * 1024**2),
    ]


def pushed(engine: SQLiteEngine, sql: str, **options: Any) -> list[list[tuple[Any, ...]]]:
    """The batches `feed_batches` pushes, all of them taken."""
    batches: list[list[tuple[Any, ...]]] = []

    def take(batch: list[tuple[Any, ...]]) -> bool:
        batches.append(batch)
        return True

    engine.feed_batches(sql, take, **options)
    return batches


def test_feed_batches_pushes_the_batches_execute_batches_hands_out(engine: SQLiteEngine) -> None:
    for sql, batch in (("SELECT v FROM mixed", 4), ("SELECT v FROM mixed", 100)):
        assert pushed(engine, sql, batch=batch) == list(engine.execute_batches(sql, batch=batch))
    broken = "SELECT t FROM broken ORDER BY rowid DESC"  # invalid UTF-8 after a valid row
    assert [row for b in pushed(engine, broken, batch=1) for row in b] == [("héllo",), ("A",)]


def test_feed_batches_keeps_the_guarantees_of_execute(
    engine: SQLiteEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(QueryRefused):
        pushed(engine, "SELECT 1; SELECT 2")
    with pytest.raises(QueryRefused):
        pushed(engine, "SELECT load_extension('x')")
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
    with pytest.raises(QueryTimeout):
        pushed(engine, endless, timeout=0.2)
    many = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"
    handed: list[int] = []
    with pytest.raises(ResultTooLarge):  # the rows within the cap come out first
        engine.feed_batches(many, lambda b: handed.append(len(b)) is None, max_rows=25, batch=10)
    assert handed == [10, 10, 5]
    monkeypatch.setenv("QUERYBENCH_MAX_RESULT_BYTES", "15000000")
    blobs = many.replace("SELECT i FROM n", "SELECT zeroblob(9900000) FROM n")
    with pytest.raises(ResultTooLarge) as info:  # row by row: the second row of ~10 MB
        pushed(engine, blobs, timeout=30, batch=1000)
    assert info.value.code == "too_large"


def test_a_sink_that_says_stop_frees_the_connection(engine: SQLiteEngine) -> None:
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"
    taken: list[list[tuple[Any, ...]]] = []
    engine.feed_batches(endless, lambda b: taken.append(b) is not None, batch=3)
    assert taken == [[(1,), (2,), (3,)]]
    assert engine.execute("SELECT 7").rows == [(7,)]


def _one_table(path: Path, *, wal: bool = False) -> sqlite3.Connection:
    writer = sqlite3.connect(path, timeout=0, isolation_level=None)
    if wal:
        writer.execute("PRAGMA journal_mode=wal")
    writer.execute("CREATE TABLE t (x INTEGER)")
    writer.execute("INSERT INTO t VALUES (1)")
    return writer


def test_a_held_read_lock_keeps_writers_out_until_the_engine_closes(tmp_path: Path) -> None:
    path = tmp_path / "held.sqlite"
    _one_table(path).close()
    engine = SQLiteEngine(path)
    assert engine.hold_read_lock()
    assert engine.execute("SELECT x FROM t").rows == [(1,)]
    writer = sqlite3.connect(path, timeout=0, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        writer.execute("INSERT INTO t VALUES (2)")
    # A query cannot let go of the lock: the pragma that would is refused as every setting is.
    with pytest.raises(QueryRefused):
        engine.execute("PRAGMA locking_mode=NORMAL")
    with pytest.raises(QueryRefused):
        engine.execute("PRAGMA locking_mode=EXCLUSIVE")  # the text the engine ran itself
    assert engine.execute("SELECT count(*) FROM t").rows == [(1,)]
    engine.close()
    writer.execute("INSERT INTO t VALUES (2)")
    writer.close()


def test_a_wal_file_keeps_its_locking_and_its_readers_see_new_rows(tmp_path: Path) -> None:
    path = tmp_path / "wal.sqlite"
    writer = _one_table(path, wal=True)
    engine = SQLiteEngine(path)
    assert not engine.hold_read_lock()
    assert engine.execute("SELECT x FROM t").rows == [(1,)]
    writer.execute("INSERT INTO t VALUES (2)")
    assert engine.execute("SELECT x FROM t ORDER BY x").rows == [(1,), (2,)]
    engine.close()
    writer.close()
