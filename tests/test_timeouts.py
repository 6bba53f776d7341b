"""The timeout rule: an embedded engine's query is timed by its own CPU time, so waiting for a
core (a loaded machine) or for anything else does not make it a timeout; a query that blocks
is stopped by the wall clock's cap; the error says which time decided; a gold's timeout is
never the model's."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from querybench.engines import timeouts
from querybench.engines.base import Result
from querybench.engines.duckdb import DuckDBEngine
from querybench.engines.isolated import QueryProcess
from querybench.engines.sqlite import SQLiteEngine
from querybench.engines.timeouts import timeout_policy, wall_cap
from querybench.envs.reward_child import WorkerConfig
from querybench.envs.reward_workers import RewardProcess
from querybench.errors import ErrorCode, QueryTimeout
from querybench.evaluation.bird.evaluate import bird_verdict
from querybench.evaluation.spider1.evaluate import spider1_verdict

ROOT = Path(__file__).resolve().parents[1]
# 2^31 steps inside one call, which SQLite's progress handler never sees: only the kill stops it.
PRINTF_BOMB = "SELECT printf('%.*c', 2147483647, 'x')"
COUNT_TO = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < {n}) "
HEAVY_DUCKDB = "SELECT sum(hash(i)) FROM range(100000000000) t(i)"


@pytest.fixture(scope="module")
def sqlite_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("timeouts") / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.execute("INSERT INTO t VALUES (1)")
    conn.close()
    return path


@pytest.fixture(scope="module")
def duckdb_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import duckdb

    path = tmp_path_factory.mktemp("timeouts-duck") / "t.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE t AS SELECT 1 AS x")
    return path


@pytest.fixture
def process() -> Iterator[QueryProcess]:
    with QueryProcess() as served:
        yield served


def test_the_policy_states_its_clocks_and_its_wall_cap() -> None:
    assert wall_cap(1.0) == 31.0  # timeout + 30 s ...
    assert wall_cap(30.0) == 300.0  # ... or ten timeouts, whichever is longer
    policy = timeout_policy(5.0)
    assert policy.wall_cap_s == 50.0
    assert policy.counts.startswith("cpu: ") and "wall: server engines" in policy.counts
    assert policy.gold_timeout_code == ErrorCode.GOLD_ERROR
    assert timeout_policy(None).counts == "none"


def _napping(path: Path) -> SQLiteEngine:
    """A SQLite engine with `nap(s)`: a call that waits without spending CPU time."""
    engine = SQLiteEngine(path, progress_every=10)
    engine._conn.create_function("nap", 1, lambda s: time.sleep(s) or 0)
    return engine


NAPS = COUNT_TO.format(n=40) + "SELECT sum(nap(0.02)) FROM c"  # 0.8 s waiting, ~no CPU


def test_waiting_past_the_timeout_is_not_spending_it(sqlite_db: Path) -> None:
    engine = _napping(sqlite_db)
    start = time.monotonic()
    assert engine.execute(NAPS, timeout=0.3).rows == [(0,)]
    assert time.monotonic() - start > 0.3  # the wall clock alone would have stopped it


def test_a_query_that_blocks_is_stopped_by_the_wall_cap(
    sqlite_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timeouts, "wall_cap", lambda timeout: 0.4)
    engine = _napping(sqlite_db)
    with pytest.raises(QueryTimeout, match=r"wall time decided: its 0.4s wall-clock cap"):
        engine.execute(NAPS, timeout=0.2)


def test_a_query_that_computes_past_its_timeout_is_decided_by_cpu_time(sqlite_db: Path) -> None:
    engine = SQLiteEngine(sqlite_db)
    with pytest.raises(QueryTimeout, match=r"0.2s timeout .*\(cpu time decided\)"):
        engine.execute(COUNT_TO.format(n=10**12) + "SELECT count(*) FROM c", timeout=0.2)


def test_a_child_killed_past_its_cpu_time_says_so(sqlite_db: Path, process: QueryProcess) -> None:
    engine = process.engine(sqlite_db)
    with pytest.raises(QueryTimeout, match=r"cpu time decided"):
        engine.execute(PRINTF_BOMB, timeout=0.5)
    assert engine.execute("SELECT x FROM t", timeout=0.5).rows == [(1,)]


def test_duckdb_counts_the_query_childs_cpu_time(duckdb_db: Path, process: QueryProcess) -> None:
    with pytest.raises(QueryTimeout, match=r"cpu time decided"):
        process.engine(duckdb_db).execute(HEAVY_DUCKDB, timeout=0.3)


def test_duckdb_keeps_the_wall_clock_where_the_process_is_not_the_querys(
    duckdb_db: Path,
) -> None:
    engine = DuckDBEngine(duckdb_db)  # in this process, whose CPU is pytest's too
    try:
        with pytest.raises(QueryTimeout, match=r"\(wall time decided\)"):
            engine.execute(HEAVY_DUCKDB, timeout=0.3)
    finally:
        engine.close()


def test_the_rewards_timeout_follows_the_same_rule(sqlite_db: Path) -> None:
    config = WorkerConfig(
        answer_timeout=0.5, gold_timeout=5.0, answer_max_rows=None, cache_dir=None, disk_cache=False
    )
    reward = RewardProcess(config)
    try:
        [killed, fine] = reward.score(
            [(str(sqlite_db), "SELECT 1", PRINTF_BOMB), (str(sqlite_db), "SELECT 1", "SELECT 1")]
        )
    finally:
        reward.close()
    assert killed.verdict.error == ErrorCode.TIMEOUT
    assert "cpu time decided" in (killed.verdict.message or "")
    assert fine.reward == 1.0


def test_a_gold_timeout_never_counts_against_the_model() -> None:
    gold_timed_out = QueryTimeout("the query ran past its 1.0s timeout (cpu time decided)")
    answer = Result(("x",), [(1,)])
    assert spider1_verdict(gold_timed_out, answer, order_matters=False).error == (
        ErrorCode.GOLD_ERROR
    )
    assert bird_verdict(gold_timed_out, answer).error == ErrorCode.GOLD_ERROR


# The query runs about 0.25 s of CPU; its process is stopped (SIGSTOP) for a second while it
# runs, so its wall time passes its 0.6 s timeout whatever the machine's load, and its CPU time
# does not.
_STOPPED_MIDWAY = textwrap.dedent(
    """
    import json, sys, time
    from querybench.engines.sqlite import SQLiteEngine
    engine = SQLiteEngine(sys.argv[1])
    count = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < %d) "
    count += "SELECT count(*) FROM c"
    start = time.thread_time()
    engine.execute(count % 200_000)
    n = int(200_000 * 0.25 / max(time.thread_time() - start, 1e-3))
    print("go", flush=True)
    start, cpu = time.monotonic(), time.thread_time()
    try:
        rows = engine.execute(count % n, timeout=0.6).rows
    except Exception as exc:
        rows = str(exc)
    wall, cpu = time.monotonic() - start, time.thread_time() - cpu
    print(json.dumps({"rows": rows, "n": n, "wall": wall, "cpu": cpu}), flush=True)
    """
)


def _stopped_midway(database: Path) -> dict[str, Any]:
    child = subprocess.Popen(
        [sys.executable, "-c", _STOPPED_MIDWAY, str(database)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "go\n"
        child.send_signal(signal.SIGSTOP)
        time.sleep(1.0)
        child.send_signal(signal.SIGCONT)
        ran: dict[str, Any] = json.loads(child.stdout.readline())
        assert child.wait(timeout=60) == 0
        return ran
    finally:
        child.kill()
        child.wait()


def test_a_query_held_up_past_its_timeout_is_decided_by_its_cpu_time(sqlite_db: Path) -> None:
    # The stop lands within milliseconds of the query's start; should the child have finished
    # its quarter second of CPU first (a parent descheduled that long), it is run again.
    for _attempt in range(3):
        ran = _stopped_midway(sqlite_db)
        if ran["wall"] > 1.0:
            break
    assert ran["rows"] == [[ran["n"]]], ran  # not a timeout
    assert ran["cpu"] < 0.6 < 1.0 < ran["wall"], ran
