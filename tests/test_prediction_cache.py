"""Prediction outcomes in the result cache: a warm re-score runs no query, and says the same.

What is stored is what the query alone decides: its rows, or its deterministic failure with
its exact message; never a timeout, a cap or a crash. A changed database, row cap or byte cap
is another key; a result that does not fit the reader's row cap, or an entry over the bound,
is not served.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from querybench.engines.base import Result
from querybench.engines.cache import ResultCache
from querybench.engines.cache_values import dump_result, storable_error, volatile
from querybench.errors import (
    EngineError,
    QueryRefused,
    QueryTimeout,
    ResultTooLarge,
    ResultTooManyBytes,
)
from querybench.evaluation.bird.evaluate import evaluate_bird
from querybench.evaluation.record import InstanceResult
from tests.test_bird import _official, _tiny_files, _write


def _score(
    predictions: Path, questions: Path, db_dir: Path, cache: Path, timeout: float = 10
) -> tuple[list[InstanceResult], int]:
    ran: list[None] = []
    results = evaluate_bird(
        predictions,
        questions=questions,
        db_dir=db_dir,
        timeout=timeout,
        workers=2,
        cache_dir=cache,
        _on_query=lambda: ran.append(None),
    )
    return results, len(ran)


def test_a_warm_rescore_runs_no_query_and_says_the_same(tmp_path: Path) -> None:
    questions, predictions, db_dir = _tiny_files(tmp_path)
    cold, ran_cold = _score(predictions, questions, db_dir, tmp_path / "cache")
    warm, ran_warm = _score(predictions, questions, db_dir, tmp_path / "cache")
    fresh, _ = _score(predictions, questions, db_dir, tmp_path / "other-cache")
    assert ran_cold > 0
    assert ran_warm == 0  # gold, predictions and the deterministic failures all stored
    assert warm == cold == fresh  # every field: score, error code, message, metrics, detail
    by_id = {r.instance_id: r for r in warm}
    assert by_id["5"].error == "exec_error" and "syntax error" in (by_id["5"].message or "")
    assert by_id["6"].error == "gold_error" and "no such column" in (by_id["6"].message or "")
    assert by_id["15"].error == "refused_write"


def test_a_timeout_is_never_cached(tmp_path: Path) -> None:
    _, _, db_dir = _tiny_files(tmp_path)
    slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    q = _write(tmp_path / "q.json", [{"question_id": 0, "db_id": "shop", "SQL": "SELECT 1"}])
    p = _write(tmp_path / "p.json", {"0": _official(slow)})
    for _ in range(2):
        (result,), ran = _score(p, q, db_dir, tmp_path / "cache", timeout=0.3)
        assert result.error == "timeout"
    assert ran == 1  # the gold came from the cache; the prediction ran again


def test_an_edited_database_runs_its_predictions_again(tmp_path: Path) -> None:
    # An in-place edit that keeps the file's size and mtime (its ctime moves, and the
    # content hash is of the bytes): the stored outcomes are not served.
    _, _, db_dir = _tiny_files(tmp_path)
    db = db_dir / "shop" / "shop.sqlite"
    gold = "SELECT name FROM item WHERE id = 1"
    q = _write(tmp_path / "q.json", [{"question_id": 0, "db_id": "shop", "SQL": gold}])
    p = _write(tmp_path / "p.json", {"0": _official("SELECT 'pen'")})
    (before,), _ = _score(p, q, db_dir, tmp_path / "cache")
    assert before.score == 1.0
    stat = db.stat()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE item SET name = 'pan' WHERE id = 1")
    conn.close()
    os.utime(db, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert db.stat().st_size == stat.st_size
    (after,), ran = _score(p, q, db_dir, tmp_path / "cache")
    assert (after.score, ran) == (0.0, 2)


@pytest.mark.parametrize(
    ("error", "stored"),
    [
        (EngineError("no such column: nme"), True),
        (EngineError('near "SELEC": syntax error'), True),
        (QueryRefused("refused: DELETE statements are not allowed (read-only)", "DELETE"), True),
        (QueryTimeout("the query ran past its 1s timeout and was stopped"), False),
        (EngineError("interrupted"), False),
        (ResultTooLarge("the result has more than 10 rows"), False),
        (ResultTooManyBytes("the result holds more than 5 bytes"), False),
        (EngineError("the query's process ended (killed by signal 9, e.g. out of memory)"), False),
        (EngineError("out of memory while running the query"), False),
        (EngineError("unexpected ValueError: a bug"), False),
        (EngineError("database file not found: /x.sqlite"), False),
        (EngineError("database is locked"), False),
        # the machine's state, not the query's: a full temp disk, too many files, a closed engine
        (EngineError("database or disk is full"), False),
        (EngineError("database table is locked"), False),
        (EngineError('IO Error: Could not write "/tmp/t": No space left on device'), False),
        (EngineError("OSError: [Errno 24] Too many open files"), False),
        (EngineError("the engine for /data/x.sqlite is closed"), False),
        (EngineError("database schema has changed"), False),
    ],
)
def test_only_deterministic_failures_are_stored(error: EngineError, stored: bool) -> None:
    assert storable_error(error) is stored


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "db.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    return path


def test_a_stored_failure_keeps_its_class_and_words(tmp_path: Path, database: Path) -> None:
    cache = ResultCache(tmp_path / "cache")
    refused = QueryRefused("refused: DELETE statements are not allowed (read-only)", "DELETE")
    failed = EngineError("no such column: nme")
    items = [((database, "DELETE FROM t"), refused), ((database, "SELECT nme FROM t"), failed)]
    cache.put_outcomes(items, max_rows=10, max_bytes=1 << 20)
    found = ResultCache(tmp_path / "cache").get_outcomes([q for q, _ in items], max_rows=10)
    got_refused, got_failed = found[(database, "DELETE FROM t")], found[items[1][0]]
    assert type(got_refused) is QueryRefused and got_refused.statement == "DELETE"
    assert str(got_refused) == str(refused)
    assert type(got_failed) is EngineError and str(got_failed) == "no such column: nme"


def test_the_row_cap_decides_what_is_served(tmp_path: Path, database: Path) -> None:
    cache = ResultCache(tmp_path / "cache")
    rows, failing = (database, "SELECT 1 UNION SELECT 2 UNION SELECT 3"), (database, "SELECT y")
    items = [(rows, Result(("a",), [(1,), (2,), (3,)])), (failing, EngineError("no such column"))]
    cache.put_outcomes(items, max_rows=5, max_bytes=1 << 20)
    assert set(cache.get_outcomes([rows, failing], max_rows=5)) == {rows, failing}
    # a failure is the cap's too (it may lie past a lower cap's last row); whole rows serve
    # any cap they fit under, and no cap they do not
    assert set(cache.get_outcomes([rows, failing], max_rows=100)) == {rows}
    assert set(cache.get_outcomes([rows, failing], max_rows=2)) == set()


def test_an_entry_over_the_bound_is_not_stored(tmp_path: Path, database: Path) -> None:
    cache = ResultCache(tmp_path / "cache")
    small, large = (database, "SELECT 1"), (database, "SELECT 2")
    items = [(small, Result(("a",), [(1,)])), (large, Result(("a",), [("x" * 5000,)]))]
    cache.put_outcomes(items, max_rows=None, max_bytes=4096)
    assert set(cache.get_outcomes([small, large], max_rows=None)) == {small}


def test_the_byte_cap_is_part_of_the_key(
    tmp_path: Path, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A result stored under a larger byte cap could be one a smaller cap refuses.
    cache = ResultCache(tmp_path / "cache")
    before = cache.key(database, "SELECT 1")
    monkeypatch.setenv("QUERYBENCH_MAX_RESULT_BYTES", "1000")
    assert cache.key(database, "SELECT 1") != before


VOLATILE = [
    "SELECT STRFTIME('%Y', CURRENT_TIMESTAMP) - 2000",  # BIRD's gold for an age
    "SELECT julianday('now')",
    "SELECT date('2020-01-01 10:00', 'localtime')",
    "SELECT current_date",
    "SELECT abs(random()) % 7",
    "SELECT hex(randomblob(4))",
    "SELECT uuid()",
    "SELECT file FROM pragma_database_list",  # a copy of the file elsewhere has its bytes
    "SELECT current_database()",
    "SELECT current_setting('threads')",
]


def test_a_uuid_cast_or_a_word_in_a_name_is_not_the_clock() -> None:
    assert not volatile("SELECT '6c42d4b6-6973-42d3-bbbf-058057576d67'::UUID, today_sales FROM t")


@pytest.mark.parametrize("sql", VOLATILE)
def test_a_query_of_the_clock_or_a_draw_is_never_stored_nor_served(
    tmp_path: Path, database: Path, sql: str
) -> None:
    cache = ResultCache(tmp_path / "cache")
    steady = (database, "SELECT 1")
    items = [(steady, Result(("a",), [(1,)])), ((database, sql), Result(("a",), [(2026,)]))]
    cache.put_outcomes(items, max_rows=None, max_bytes=1 << 20)
    cache.put_many(items)
    assert set(cache.get_outcomes([steady, (database, sql)], max_rows=None)) == {steady}
    # an entry an older version stored under its key is not served either
    cache._write([(cache.key(database, sql), dump_result(Result(("a",), [(2025,)])))])
    assert set(cache.get_outcomes([(database, sql)], max_rows=None)) == set()
    assert set(cache.get_many([(database, sql)])) == set()
    assert cache.get(database, sql) is None


def test_a_prediction_of_the_clock_runs_again_on_a_warm_rescore(tmp_path: Path) -> None:
    _, _, db_dir = _tiny_files(tmp_path)
    q = _write(tmp_path / "q.json", [{"question_id": 0, "db_id": "shop", "SQL": "SELECT 1"}])
    p = _write(tmp_path / "p.json", {"0": _official("SELECT strftime('%Y', 'now') > '2000'")})
    for _ in range(2):
        (result,), ran = _score(p, q, db_dir, tmp_path / "cache")
        assert result.score == 1.0
    assert ran == 1  # the gold came from the cache; the prediction ran again


def test_another_sqlite_build_of_one_version_is_another_key(
    tmp_path: Path, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A build without SQLITE_ENABLE_MATH_FUNCTIONS fails `SELECT sqrt(4)` where this one
    # returns 2.0: a cache folder shared by two Pythons must not hand one's outcome to the other.
    from querybench.engines import cache as cache_module

    cache = ResultCache(tmp_path / "cache")
    before = cache.key(database, "SELECT sqrt(4)")
    options = [o for o in cache_module._sqlite_compile_options() if "MATH" not in o]
    monkeypatch.setattr(cache_module, "_sqlite_compile_options", lambda: options)
    cache_module.sqlite_build.cache_clear()
    try:
        assert ResultCache(tmp_path / "cache").key(database, "SELECT sqrt(4)") != before
    finally:
        cache_module.sqlite_build.cache_clear()


_FRAGMENTS = [
    *("random", "uuid (", "uuid(", "current_date", "current_setting", "transaction_timestamp"),
    *("now", "today", "localtime", "utc", "pragma", "database_list", "duckdb_settings"),
    *(" ", "_", "(", "'", "x", "SELECT ", "1", "\u017f", "\u212a", "\u0130", "\u00e9", "\t"),
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_FRAGMENTS).flatmap(
                lambda f: st.sampled_from([f, f.upper(), f.title(), f.swapcase()])
            ),
            st.text(max_size=4),
        ),
        max_size=8,
    ).map("".join)
)
def test_the_quick_volatile_check_says_what_the_regex_says(sql: str) -> None:
    from querybench.engines.cache_values import _VOLATILE

    assert volatile(sql) is (_VOLATILE.search(sql) is not None)
