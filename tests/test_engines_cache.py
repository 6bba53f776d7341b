"""ResultCache: computed once, keyed by content, exact round-trips, one store, safe to share."""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from querybench.engines.base import Result
from querybench.engines.cache import ResultCache, database_fingerprint
from querybench.engines.cache_values import dump_result
from querybench.engines.pool import QueryOutcome, run_one
from querybench.errors import QueryTimeout, UnsettledDatabase
from querybench.store import cache_root, seal
from tests.test_engines_conformance import build_database
from tests.unsettled import duckdb_rows_in_wal, held_in_wal, hot_journal, to_wal

DUCKDB_VALUES = """SELECT 1::HUGEINT, 1.50::DECIMAL(10, 2), DATE '2020-01-01',
    TIMESTAMP '2020-01-01 01:02:03.456789', TIMESTAMPTZ '2020-01-01 00:00:00+00',
    TIME '01:02:03', INTERVAL 3 DAY, '6c42d4b6-6973-42d3-bbbf-058057576d67'::UUID, [1, 2],
    {'a': 1}, MAP([1], [2]), 'x'::BLOB, 0.1::DOUBLE, 'nan'::DOUBLE, NULL, 'é'"""


class Counter:
    """A compute function for `get_or_compute` that counts its calls."""

    def __init__(self, database: Path, sql: str) -> None:
        self.calls = 0
        self.database, self.sql = database, sql

    def __call__(self) -> QueryOutcome:
        self.calls += 1
        return run_one(self.database, self.sql, key="computed")


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Path:
    return build_database("sqlite", tmp_path / "db")


@pytest.fixture
def cache(tmp_path: Path) -> ResultCache:
    return ResultCache(tmp_path / "cache")


def test_second_call_does_not_recompute(cache: ResultCache, sqlite_db: Path) -> None:
    compute = Counter(sqlite_db, "SELECT * FROM singer ORDER BY id")
    first = cache.get_or_compute(sqlite_db, compute.sql, compute)
    second = cache.get_or_compute(sqlite_db, compute.sql, compute, key="hit")
    assert compute.calls == 1
    assert first.result is not None and second.result is not None
    assert second.key == "hit"
    assert second.result.rows == first.result.rows
    assert [type(v) for v in second.result.rows[0]] == [int, str, float, bytes]
    assert second.result.columns == first.result.columns
    assert second.result.extra["cached"] is True


def test_duckdb_values_round_trip_exactly(cache: ResultCache, tmp_path: Path) -> None:
    database = build_database("duckdb", tmp_path / "db")
    compute = Counter(database, DUCKDB_VALUES)
    first = cache.get_or_compute(database, DUCKDB_VALUES, compute)
    second = cache.get_or_compute(database, DUCKDB_VALUES, compute)
    assert compute.calls == 1
    assert first.result is not None and second.result is not None
    assert repr(second.result.rows) == repr(first.result.rows)
    assert [type(v) for v in second.result.rows[0]] == [type(v) for v in first.result.rows[0]]


def test_a_changed_database_is_a_new_key(cache: ResultCache, sqlite_db: Path) -> None:
    compute = Counter(sqlite_db, "SELECT count(*) FROM singer")
    first = cache.get_or_compute(sqlite_db, compute.sql, compute)
    assert first.result is not None and first.result.rows == [(3,)]
    with sqlite3.connect(sqlite_db) as conn:
        conn.execute("INSERT INTO singer (id, name) VALUES (4, 'Dee')")
    conn.close()
    changed = cache.get_or_compute(sqlite_db, compute.sql, compute)
    assert compute.calls == 2
    assert changed.result is not None and changed.result.rows == [(4,)]


def test_the_key_is_the_content_not_the_path(
    cache: ResultCache, sqlite_db: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "elsewhere" / "copy.sqlite"
    copy.parent.mkdir()
    shutil.copyfile(sqlite_db, copy)
    assert cache.key(sqlite_db, "SELECT 1") == cache.key(f"sqlite://{copy}", "SELECT 1")
    assert cache.key(sqlite_db, "SELECT 1") != cache.key(sqlite_db, "SELECT 1 ")


def test_errors_are_not_cached(cache: ResultCache, sqlite_db: Path) -> None:
    calls = 0

    def times_out() -> QueryOutcome:
        nonlocal calls
        calls += 1
        return QueryOutcome("k", None, QueryTimeout("too slow"))

    for _ in range(2):
        outcome = cache.get_or_compute(sqlite_db, "SELECT 1", times_out)
        assert outcome.error is not None
    assert calls == 2
    assert cache.get(sqlite_db, "SELECT 1") is None


def test_a_missing_database_is_left_to_compute(cache: ResultCache, tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    outcome = cache.get_or_compute(missing, "SELECT 1", lambda: run_one(missing, "SELECT 1"))
    assert outcome.error is not None and str(missing) in str(outcome.error)
    assert not missing.exists()


def plant(cache: ResultCache, database: Path, sql: str, data: bytes) -> None:
    """`data` as the value of `sql` on `database`, a whole entry of the store: what only the
    value's own loader can refuse."""
    cache.put(database, sql, Result(("a",), [(0,)]))  # creates the store
    key = cache.key(database, sql)
    with contextlib.closing(sqlite3.connect(cache.path)) as db, db:
        db.execute("UPDATE sealed SET entry = ? WHERE key = ?", (seal(key, data), key))


class _RunsCode:
    def __reduce__(self) -> tuple[Callable[[str], int], tuple[str]]:
        return os.system, ("touch pwned",)


@pytest.mark.parametrize(
    "data",
    [
        b"not a cache file",
        dump_result(Result(("a",), [(1,)]))[:-5],
        dump_result(Result(("a",), [(1,)])).split(b"\n", 1)[0] + b"\n" + pickle.dumps(_RunsCode()),
        dump_result(Result(("a",), [(1,)])).split(b"\n", 1)[0] + b"\n" + pickle.dumps([1, 2, 3]),
        # rows a scorer cannot hash (they used to end the whole run in a TypeError)
        dump_result(Result(("a",), [[1]])),  # type: ignore[list-item]
    ],
    ids=["garbage", "truncated", "code", "wrong-shape", "rows-not-tuples"],
)
def test_anything_but_a_well_formed_cache_file_is_a_miss(
    cache: ResultCache,
    sqlite_db: Path,
    data: bytes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    plant(cache, sqlite_db, "SELECT 1", data)
    assert cache.get(sqlite_db, "SELECT 1") is None
    assert not (tmp_path / "pwned").exists()
    compute = Counter(sqlite_db, "SELECT 1")
    assert cache.get_or_compute(sqlite_db, "SELECT 1", compute).result is not None
    assert cache.get(sqlite_db, "SELECT 1") is not None  # the bad entry was replaced


def test_fingerprint_is_the_sha256_of_the_content(sqlite_db: Path) -> None:
    assert database_fingerprint(sqlite_db) == hashlib.sha256(sqlite_db.read_bytes()).hexdigest()


def test_the_cache_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    assert ResultCache().directory.parent == tmp_path / "c"
    monkeypatch.delenv("QUERYBENCH_CACHE")
    assert cache_root() == Path("~/.cache/querybench").expanduser()


def test_one_store_for_every_entry(cache: ResultCache, sqlite_db: Path) -> None:
    queries = [(sqlite_db, f"SELECT {i}") for i in range(3)]
    cache.put_many([(q, Result(("x",), [(i,)])) for i, q in enumerate(queries)])
    assert sorted(
        p.name for p in cache.directory.iterdir() if not p.name.endswith(("-wal", "-shm"))
    ) == ["outcomes.sqlite3"]
    found = ResultCache(cache.directory.parent).get_many([*queries, (sqlite_db, "SELECT 9")])
    assert {sql: r.rows for (_, sql), r in found.items()} == {
        "SELECT 0": [(0,)],
        "SELECT 1": [(1,)],
        "SELECT 2": [(2,)],
    }


def test_a_missing_database_is_left_out_of_get_many(cache: ResultCache, tmp_path: Path) -> None:
    assert cache.get_many([(tmp_path / "missing.sqlite", "SELECT 1")]) == {}
    assert not cache.path.exists()  # a read creates no store


def _rows(cache: ResultCache, database: Path, sql: str) -> object:
    found = cache.get(database, sql)
    return None if found is None else found.rows


def test_a_stored_fingerprint_spares_reading_the_database(
    tmp_path: Path, sqlite_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from querybench.engines import cache as cache_module

    first = ResultCache(tmp_path / "c")
    first.put(sqlite_db, "SELECT 1", Result(("x",), [(1,)]))
    key = first.key(sqlite_db, "SELECT 1")
    monkeypatch.setattr(cache_module, "_fingerprints", {})  # a new process

    def unread(path: object) -> str:
        raise AssertionError("the database was hashed again")

    monkeypatch.setattr(cache_module, "database_fingerprint", unread)
    second = ResultCache(tmp_path / "c")
    assert second.key(sqlite_db, "SELECT 1") == key
    hit = second.get(sqlite_db, "SELECT 1")
    assert hit is not None and hit.rows == [(1,)]


def test_an_edited_database_is_hashed_again(tmp_path: Path, sqlite_db: Path) -> None:
    from querybench.engines import cache as cache_module

    first = ResultCache(tmp_path / "c")
    first.put(sqlite_db, "SELECT count(*) FROM singer", Result(("n",), [(3,)]))
    with sqlite3.connect(sqlite_db) as conn:
        conn.execute("INSERT INTO singer (id, name) VALUES (4, 'Dee')")
    conn.close()
    cache_module._fingerprints.clear()
    second = ResultCache(tmp_path / "c")
    assert second.get(sqlite_db, "SELECT count(*) FROM singer") is None
    new_content = hashlib.sha256(sqlite_db.read_bytes()).hexdigest()
    assert second.fingerprint(sqlite_db) == new_content


COUNT = "SELECT count(*) FROM singer"
MORE_SINGERS = "INSERT INTO singer (id, name) SELECT id + 100, name FROM singer"


def _count(outcome: QueryOutcome) -> object:
    assert outcome.result is not None, outcome.error
    return outcome.result.rows[0][0]


def test_rows_held_in_the_wal_are_never_served_from_the_cache(
    cache: ResultCache, sqlite_db: Path
) -> None:
    # The file's bytes, size and times stay put while the -wal holds the new rows: a key of
    # the file alone served the count from before them.
    to_wal(sqlite_db)
    compute = Counter(sqlite_db, COUNT)
    assert _count(cache.get_or_compute(sqlite_db, COUNT, compute)) == 3
    with held_in_wal(sqlite_db, MORE_SINGERS):
        with pytest.raises(UnsettledDatabase):
            cache.get(sqlite_db, COUNT)
        assert cache.get_many([(sqlite_db, COUNT)]) == {}
        assert cache.get_outcomes([(sqlite_db, COUNT)], max_rows=None) == {}
        assert _count(cache.get_or_compute(sqlite_db, COUNT, compute)) == 6
        assert _count(cache.get_or_compute(sqlite_db, COUNT, compute)) == 6
        assert compute.calls == 3  # nothing of this state was stored either
        cache.put_outcomes(
            [((sqlite_db, "SELECT 1"), Result(("x",), [(1,)]))], max_rows=None, max_bytes=1 << 20
        )
    # checkpointed into the file by the writer's close: a new key, cached again
    assert cache.get(sqlite_db, "SELECT 1") is None
    assert _count(cache.get_or_compute(sqlite_db, COUNT, compute)) == 6
    assert _count(cache.get_or_compute(sqlite_db, COUNT, compute)) == 6
    assert compute.calls == 4


def test_a_hot_journal_is_part_of_the_database(cache: ResultCache, sqlite_db: Path) -> None:
    # A writer died mid-transaction: the file holds some of its pages, the -journal the
    # originals a reader must roll back. The file alone (its journal set aside) is another
    # state, whose results must not answer for it.
    hot_journal(sqlite_db, "INSERT INTO singer (name) SELECT name FROM singer LIMIT 50")
    journal = Path(f"{sqlite_db}-journal")
    journal.rename(journal.with_name("aside"))
    compute = Counter(sqlite_db, COUNT)
    cache.get_or_compute(sqlite_db, COUNT, compute)
    journal.with_name("aside").rename(journal)
    assert cache.get_many([(sqlite_db, COUNT)]) == {}
    assert cache.get_outcomes([(sqlite_db, COUNT)], max_rows=None) == {}
    outcome = cache.get_or_compute(sqlite_db, COUNT, compute)
    assert compute.calls == 2  # run on the database as it is (read-only, it cannot roll back)
    assert outcome.result is None and "readonly" in str(outcome.error)


def test_rows_in_a_duckdb_wal_are_never_served_from_the_cache(
    cache: ResultCache, tmp_path: Path
) -> None:
    database = build_database("duckdb", tmp_path / "db")
    compute = Counter(database, COUNT)
    assert _count(cache.get_or_compute(database, COUNT, compute)) == 3
    duckdb_rows_in_wal(database, MORE_SINGERS)
    assert cache.get_many([(database, COUNT)]) == {}
    assert _count(cache.get_or_compute(database, COUNT, compute)) == 6
    assert compute.calls == 2


def test_an_unsettled_database_is_said_once(
    cache: ResultCache, sqlite_db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    to_wal(sqlite_db)
    with held_in_wal(sqlite_db, MORE_SINGERS), caplog.at_level("WARNING", "querybench"):
        for _ in range(3):
            assert cache.get_many([(sqlite_db, COUNT), (sqlite_db, "SELECT 1")]) == {}
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1, said
    assert f"{sqlite_db.name}-wal holds changes not yet in the file" in said[0]
    assert "not cached" in said[0]


def test_an_empty_sidecar_holds_nothing(cache: ResultCache, sqlite_db: Path) -> None:
    # A read-only reader of a WAL database leaves an empty -wal behind: still cached.
    to_wal(sqlite_db)
    compute = Counter(sqlite_db, COUNT)
    cache.get_or_compute(sqlite_db, COUNT, compute)
    Path(f"{sqlite_db}-wal").touch()
    cache.get_or_compute(sqlite_db, COUNT, compute)
    assert compute.calls == 1


def test_a_key_is_the_sha256_of_its_parts_as_one_json_list(tmp_path: Path) -> None:
    # Entries stored by earlier versions stay hits: the key's text is the JSON list of the
    # database's part, the SQL and what else decides the entry, one bulk call or not.
    import json

    from querybench.engines.base import max_result_bytes
    from querybench.engines.cache import _driver_version

    database = build_database("sqlite", tmp_path)
    cache = ResultCache(tmp_path / "cache")
    head = ["sqlite", _driver_version("sqlite"), max_result_bytes()]
    head.append(database_fingerprint(database))
    for sql in ("SELECT 1", "SELECT \"é\", '\\n'"):
        for more in ([], ["error", 1000], ["error", None]):
            text = json.dumps([*head, sql, *more])
            expected = hashlib.sha256(text.encode()).hexdigest()
            assert cache._key(database, sql, more) == expected
            assert cache._key(database, sql, more, {}) == expected
    assert (
        cache.key(database, "SELECT 1")
        == hashlib.sha256(json.dumps([*head, "SELECT 1"]).encode()).hexdigest()
    )
    cache.close()
