"""QueryPool: parallel jobs, timeouts from pickup, isolated failures, reused connections."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from querybench.engines import Engine
from querybench.engines.isolated import IsolatedEngine, QueryProcess
from querybench.engines.pool import QueryJob, QueryOutcome, QueryPool, run_one
from querybench.errors import EngineError
from tests.test_engines_conformance import ENDLESS, KINDS, build_database


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {k: build_database(k, tmp_path_factory.mktemp(f"pool-{k}")) for k in KINDS}


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Engine]:
    """Every engine the pool opens (in its workers' query processes), in order."""
    engines: list[Engine] = []
    open_engine = QueryProcess.engine

    def recording_engine(process: QueryProcess, database: str | Path) -> IsolatedEngine:
        engine = open_engine(process, database)
        engines.append(engine)
        return engine

    monkeypatch.setattr(QueryProcess, "engine", recording_engine)
    return engines


def by_key(outcomes: Iterator[QueryOutcome]) -> dict[str, QueryOutcome]:
    collected = {o.key: o for o in outcomes}
    return collected


def counting_query(seconds: float, database: Path) -> str:
    """A CPU-bound SQLite query taking roughly `seconds` on this machine."""
    template = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT {n}) "
        "SELECT count(*) FROM c"
    )
    n = 100_000
    took = float("inf")
    for _ in range(2):  # the first run also pays for its child's start: not the query's pace
        start = time.monotonic()
        run_one(database, template.format(n=n), timeout=None)
        took = min(took, time.monotonic() - start)
    took = max(took, 1e-3)
    return template.format(n=max(1, int(n * seconds / took)))


def test_jobs_on_both_engines_run_in_parallel_and_keep_their_keys(
    databases: dict[str, Path],
) -> None:
    jobs = [
        QueryJob(f"{kind}-{i}", databases[kind], f"SELECT count(*) + {i} FROM nums")
        for kind in KINDS
        for i in range(10)
    ]
    with QueryPool(workers=3) as pool:
        outcomes = by_key(pool.run(jobs))
    assert set(outcomes) == {job.key for job in jobs}
    for kind in KINDS:
        for i in range(10):
            result = outcomes[f"{kind}-{i}"].result
            assert result is not None
            assert result.rows == [(1000 + i,)]


def test_one_failure_never_stops_the_others(databases: dict[str, Path], tmp_path: Path) -> None:
    sqlite = databases["sqlite"]
    jobs = [
        QueryJob("ok", sqlite, "SELECT count(*) FROM singer"),
        QueryJob("syntax", sqlite, "SELEC 1"),
        QueryJob("write", databases["duckdb"], "DROP TABLE singer"),
        QueryJob("endless", sqlite, ENDLESS),
        QueryJob("missing", tmp_path / "missing.sqlite", "SELECT 1"),
        QueryJob("unknown", "postgres://127.0.0.1:1/x", "SELECT 1"),  # refused at once: no DNS
        QueryJob("big", sqlite, "SELECT a.n FROM nums a, nums b"),
        QueryJob("also-ok", databases["duckdb"], "SELECT count(*) FROM singer"),
    ]
    with QueryPool(workers=2, timeout=0.5, max_rows=100) as pool:
        outcomes = by_key(pool.run(jobs))
    codes = {key: o.error.code for key, o in outcomes.items() if o.error is not None}
    assert codes == {
        "syntax": "exec_error",
        "write": "refused_write",
        "endless": "timeout",
        "missing": "exec_error",
        "unknown": "engine_unavailable",
        "big": "too_many_rows",
    }
    assert outcomes["ok"].result is not None and outcomes["ok"].result.rows == [(3,)]
    assert outcomes["also-ok"].result is not None
    assert not (tmp_path / "missing.sqlite").exists()


def test_the_timeout_starts_when_a_worker_picks_the_job_up(databases: dict[str, Path]) -> None:
    sql = counting_query(0.3, databases["sqlite"])
    # 16 jobs of ~0.3s on 2 workers: the last ones start ~2.1s after submission, so charged
    # from submission they would overrun the 2s timeout; charged from pickup none comes close.
    jobs = [QueryJob(str(i), databases["sqlite"], sql) for i in range(16)]
    with QueryPool(workers=2, timeout=2.0) as pool:
        outcomes = list(pool.run(jobs))
    assert [o.error for o in outcomes] == [None] * 16


def test_each_worker_reuses_its_connection(
    databases: dict[str, Path], opened: list[Engine]
) -> None:
    jobs = [QueryJob(str(i), databases["sqlite"], "SELECT 1") for i in range(20)]
    with QueryPool(workers=1) as pool:
        assert all(o.result is not None for o in pool.run(jobs))
        assert all(o.result is not None for o in pool.run(jobs))
    assert len(opened) == 1


def test_close_closes_every_connection(databases: dict[str, Path], opened: list[Engine]) -> None:
    jobs = [QueryJob(f"{k}{i}", databases[k], "SELECT 1") for k in KINDS for i in range(8)]
    with QueryPool(workers=2) as pool:
        list(pool.run(jobs))
    assert 2 <= len(opened) <= 4
    for engine in opened:
        with pytest.raises(EngineError) as info:
            engine.execute("SELECT 1")
        assert type(info.value) is EngineError


def test_least_recently_used_connections_are_closed(tmp_path: Path, opened: list[Engine]) -> None:
    paths = [build_database("sqlite", tmp_path / str(i)) for i in range(3)]
    jobs = [QueryJob(str(i), path, "SELECT 1") for i, path in enumerate(paths * 2)]
    with QueryPool(workers=1, open_per_worker=2) as pool:
        assert all(o.result is not None for o in pool.run(jobs))
        with pytest.raises(EngineError) as info:
            opened[0].execute("SELECT 1")
        assert type(info.value) is EngineError
    assert len(opened) == 6


def test_jobs_are_read_lazily(databases: dict[str, Path]) -> None:
    endless_jobs = (QueryJob(str(i), databases["sqlite"], "SELECT 1") for i in itertools.count())
    with QueryPool(workers=2) as pool:
        first = list(itertools.islice(pool.run(endless_jobs), 5))
    assert len(first) == 5


def test_run_one(databases: dict[str, Path], tmp_path: Path) -> None:
    ok = run_one(databases["duckdb"], "SELECT name FROM singer ORDER BY id", key="a")
    assert ok.key == "a" and ok.error is None
    assert ok.result is not None and ok.result.rows == [("Ann",), ("Bob",), ("Zoë",)]
    missing = run_one(tmp_path / "nope.duckdb", "SELECT 1")
    assert missing.error is not None and "nope.duckdb" in str(missing.error)
    assert not (tmp_path / "nope.duckdb").exists()


def test_an_outcome_holds_exactly_one_of_result_and_error() -> None:
    with pytest.raises(ValueError):
        QueryOutcome("k", None, None)


def test_a_single_call_bomb_costs_its_timeout_on_the_pool_and_in_run_one(
    databases: dict[str, Path],
) -> None:
    # One printf call loops 2^31 times without reaching SQLite's progress handler (~15 s here);
    # DuckDB's repeat() builds 2 GB in one call. Whatever stops them, the verdict is a timeout.
    bombs = {
        "printf": (databases["sqlite"], "SELECT printf('%.*c', 2147483647, 'x')"),
        "repeat": (databases["duckdb"], "SELECT length(repeat('x', 2000000000))"),
    }
    start = time.monotonic()
    with QueryPool(workers=2, timeout=1.0) as pool:
        outcomes = by_key(pool.run(QueryJob(k, db, sql) for k, (db, sql) in bombs.items()))
    assert {k: o.error and o.error.code for k, o in outcomes.items()} == {
        "printf": "timeout",
        "repeat": "timeout",
    }
    alone = run_one(*bombs["printf"], timeout=1.0)
    assert alone.error is not None and alone.error.code == "timeout"
    assert time.monotonic() - start < 2 * (1.0 + 10)
