"""ResultCache: computed once, keyed by content, exact round-trips, nothing but its own files."""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from querybench.engines.base import Result
from querybench.engines.cache import (
    ResultCache,
    _dump,
    database_fingerprint,
    default_cache_dir,
)
from querybench.engines.pool import QueryOutcome, run_one
from querybench.errors import QueryTimeout
from tests.test_engines_conformance import build_database

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
    key = cache.key(database, sql)
    path = cache.directory / key[:2] / f"{key}.pickle"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


class _RunsCode:
    def __reduce__(self) -> tuple[Callable[[str], int], tuple[str]]:
        return os.system, ("touch pwned",)


@pytest.mark.parametrize(
    "data",
    [
        b"not a cache file",
        _dump(Result(("a",), [(1,)]))[:-5],
        _dump(Result(("a",), [(1,)])).split(b"\n", 1)[0] + b"\n" + pickle.dumps(_RunsCode()),
        _dump(Result(("a",), [(1,)])).split(b"\n", 1)[0] + b"\n" + pickle.dumps([1, 2, 3]),
    ],
    ids=["garbage", "truncated", "code", "wrong-shape"],
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
    assert cache.get(sqlite_db, "SELECT 1") is not None  # the bad file was replaced


def test_fingerprint_is_the_sha256_of_the_content(sqlite_db: Path) -> None:
    assert database_fingerprint(sqlite_db) == hashlib.sha256(sqlite_db.read_bytes()).hexdigest()


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    assert ResultCache().directory.parent == tmp_path / "c"
    monkeypatch.delenv("QUERYBENCH_CACHE")
    assert default_cache_dir() == Path("~/.cache/querybench").expanduser()
