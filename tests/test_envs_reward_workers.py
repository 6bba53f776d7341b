"""The reward's child processes: a batch per message, and a kill that costs one step only."""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

from querybench.engines.timeouts import wall_cap
from querybench.envs import SQLReward
from querybench.envs.match import RewardOutcome
from querybench.envs.reward_child import PackedOutcomes, Packer, WorkerConfig, unpack_outcomes
from querybench.envs.reward_workers import KnownFailures, RewardProcess, RewardWorkers
from querybench.errors import ErrorCode
from querybench.evaluation.verdict import Verdict

GOLD = "SELECT name FROM t WHERE x > 1"
BOMB = "SELECT printf('%.*c', 2147483647, 'x')"  # one call, ~20 s, deaf to the progress handler
ENDLESS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
TIMEOUT = 1.0
# Generous: the kill comes GRACE_S of CPU time past TIMEOUT (on a loaded machine, many wall
# seconds later), and at the latest GRACE_S past the wall cap.
DID_NOT_HANG = wall_cap(TIMEOUT) + 10


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("workers") / "fixture.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE t (name TEXT, x INTEGER);INSERT INTO t VALUES ('a', 1), ('b', 2), ('c', 3);"
    )
    conn.commit()
    conn.close()
    return str(path)


def config(**changes: object) -> WorkerConfig:
    settings: dict[str, object] = {
        "answer_timeout": TIMEOUT,
        "gold_timeout": 30.0,
        "answer_max_rows": 1000,
        "cache_dir": None,
        "disk_cache": False,
    }
    settings.update(changes)
    return WorkerConfig(**settings)  # type: ignore[arg-type]


@pytest.fixture
def process() -> Iterator[RewardProcess]:
    served = RewardProcess(config())
    try:
        yield served
    finally:
        served.close()


def test_a_bomb_inside_a_batch_costs_only_its_own_reward(process: RewardProcess, db: str) -> None:
    answers = [GOLD, BOMB, GOLD, "SELECT name FROM t", None, "SELECT nope", GOLD]
    start = time.monotonic()
    outcomes = process.score([(db, GOLD, sql) for sql in answers])
    assert time.monotonic() - start < DID_NOT_HANG
    assert [o.reward for o in outcomes] == [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    errors = [o.verdict.error for o in outcomes]
    assert errors == [None, "timeout", None, "wrong_result", "parse_error", "exec_error", None]
    assert outcomes[1].metrics == {"error": 1.0, "trivial": 0.0, "gold_error": 0.0}
    assert process.score([(db, GOLD, GOLD)])[0].reward == 1.0  # a fresh child serves on


def test_a_killed_gold_is_a_gold_error_and_is_not_run_again(db: str) -> None:
    known = KnownFailures()
    process = RewardProcess(config(gold_timeout=TIMEOUT), known)
    try:
        start = time.monotonic()
        outcomes = process.score([(db, BOMB, GOLD), (db, GOLD, GOLD), (db, BOMB, "SELECT 1")])
        assert time.monotonic() - start < DID_NOT_HANG
        assert [o.verdict.error for o in outcomes] == ["gold_error", None, "gold_error"]
        # The answers still ran, as on a gold that fails by itself.
        assert [o.metrics["error"] for o in outcomes] == [0.0, 0.0, 0.0]
        assert [o.metrics["gold_error"] for o in outcomes] == [1.0, 0.0, 1.0]
        assert "timeout" in str(known.golds[(db, BOMB)])
    finally:
        process.close()


def test_a_child_killed_mid_answer_fails_that_answer_and_is_replaced(db: str) -> None:
    process = RewardProcess(config(answer_timeout=60.0))
    try:
        assert process.score([(db, GOLD, GOLD)])[0].reward == 1.0  # gold known, db open
        pid = process.pid
        assert pid is not None
        killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
        killer.start()
        outcomes = process.score([(db, GOLD, ENDLESS), (db, GOLD, GOLD)])
        killer.join()
        assert outcomes[0].reward == 0.0 and outcomes[0].verdict.error == "exec_error"
        assert outcomes[0].metrics["error"] == 1.0
        assert "signal 9" in (outcomes[0].verdict.message or "")
        assert outcomes[1].reward == 1.0  # the rest of the batch went to a fresh child
        assert process.pid not in (None, pid)
    finally:
        process.close()


def test_a_closed_process_starts_again_on_the_next_batch(process: RewardProcess, db: str) -> None:
    assert process.score([(db, GOLD, GOLD)])[0].reward == 1.0
    process.close()
    assert process.pid is None
    assert process.score([(db, GOLD, "SELECT name FROM t")])[0].verdict.error == "wrong_result"


def test_a_missing_database_is_each_answers_error(process: RewardProcess, tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.sqlite")
    outcome = process.score([(missing, GOLD, GOLD)])[0]
    assert outcome.reward == 0.0 and outcome.verdict.error == "gold_error"
    assert outcome.metrics == {"error": 1.0, "trivial": 0.0, "gold_error": 1.0}


def test_closing_finishes_the_running_batch_and_fails_the_queued_ones(db: str) -> None:
    workers = RewardWorkers(config(), 1)
    running = workers.submit([(db, GOLD, ENDLESS)])  # stopped by its 1 s timeout
    time.sleep(0.5)  # picked up by the worker's thread
    queued = [workers.submit([(db, GOLD, GOLD)]) for _ in range(3)]
    workers.close()
    assert running.result()[0].verdict.error == "timeout"
    for future in queued:
        outcome = future.result()[0]
        assert outcome.reward == 0.0 and outcome.metrics["error"] == 1.0
        assert "closed" in (outcome.verdict.message or "")


def test_a_kill_in_one_batch_sends_the_next_one_to_a_fresh_child(
    process: RewardProcess, db: str
) -> None:
    first = process.send([(db, GOLD, GOLD), (db, GOLD, BOMB), (db, GOLD, GOLD)], Future())
    second = process.send([(db, GOLD, GOLD), (db, GOLD, "SELECT 1")], Future())
    assert process.owed == 2
    start = time.monotonic()
    while process.owed:
        process.receive()
    assert time.monotonic() - start < DID_NOT_HANG
    assert [o.verdict.error for o in first.result()] == [None, "timeout", None]
    assert [o.verdict.error for o in second.result()] == [None, "wrong_result"]


def test_a_child_killed_while_idle_is_replaced_without_losing_work(
    process: RewardProcess, db: str
) -> None:
    assert process.score([(db, GOLD, GOLD)])[0].reward == 1.0
    pid = process.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)  # dead before the next batch is sent
    outcomes = process.score([(db, GOLD, GOLD), (db, GOLD, "SELECT name FROM t")])
    assert [o.verdict.error for o in outcomes] == [None, "wrong_result"]


def test_a_child_that_cannot_start_fails_every_batch_instead_of_hanging(
    monkeypatch: pytest.MonkeyPatch, db: str
) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")  # every child exits at once
    process = RewardProcess(config())
    try:
        batches = [process.send([(db, GOLD, GOLD)] * 2, Future()) for _ in range(2)]
        receiving = threading.Thread(target=lambda: [process.receive() for _ in batches])
        receiving.start()
        receiving.join(DID_NOT_HANG)
        assert not receiving.is_alive()
        for future in batches:
            assert [o.metrics["error"] for o in future.result(0)] == [1.0, 1.0]
            assert "exit status 1" in (future.result(0)[0].verdict.message or "")
    finally:
        process.close()


def test_a_reward_left_unclosed_stops_its_children_when_collected(db: str) -> None:
    reward = SQLReward(workers=1, disk_cache=False)
    assert reward.score(db, GOLD, f"```sql\n{GOLD}\n```").reward == 1.0
    pids = [p.pid for p in reward._workers._processes]  # type: ignore[union-attr]
    del reward
    gc.collect()
    for pid in pids:
        assert pid is not None
        with pytest.raises(ProcessLookupError):  # stopped and reaped
            os.kill(pid, 0)


def test_rows_that_would_make_the_comparison_quadratic_score_wrong_in_time(
    tmp_path: Path,
) -> None:
    """Integers k * (2**61 - 1) all hash to 0, so a set of 30,000 of them costs 450 million
    comparisons (minutes); the answer's rows are compared under its deadline, and the BIRD
    comparison itself is bounded now (`evaluation.row_keys`): the answer scores what the
    official rule says, wrong, in well under its deadline."""
    import duckdb

    path = tmp_path / "fixture.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE t (name VARCHAR)")
    colliding = "SELECT i::HUGEINT * 2305843009213693951 FROM range(30000) t(i)"
    process = RewardProcess(config(answer_max_rows=None))
    try:
        outcomes = process.score([(str(path), "SELECT name FROM t", colliding)])
    finally:
        process.close()
    assert outcomes[0].verdict.error == "wrong_result", outcomes[0].verdict


def test_no_api_key_reaches_the_child_that_runs_model_sql(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-model-secret")
    monkeypatch.setenv("HF_TOKEN", "hf-secret")
    monkeypatch.setenv("PGPASSWORD", "engine-password")  # an engine reads it: kept
    monkeypatch.setenv("SNOWFLAKE_PASSWORD", "pat-token")
    served = RewardProcess(config())
    try:
        assert served.score([(db, GOLD, GOLD)])[0].reward == 1.0
        environ = Path(f"/proc/{served.pid}/environ").read_bytes().split(b"\0")
    finally:
        served.close()
    names = {entry.partition(b"=")[0].decode() for entry in environ if entry}
    assert "OPENAI_API_KEY" not in names and "HF_TOKEN" not in names
    assert {"PGPASSWORD", "SNOWFLAKE_PASSWORD", "PATH"} <= names


def _packed(outcomes: list[RewardOutcome]) -> PackedOutcomes:
    packer = Packer()
    for outcome in outcomes:
        packer.add(outcome.verdict, outcome.metrics)
    packed: PackedOutcomes = pickle.loads(pickle.dumps(packer.packed()))
    return packed


def test_a_packed_batch_unpacks_to_the_same_outcomes_each_with_its_own_metrics() -> None:
    shared = Verdict(1.0)
    outcomes = [
        RewardOutcome(1.0, shared, {"error": 0.0, "trivial": 0.0}),
        RewardOutcome(1.0, shared, {"error": 0.0, "trivial": 0.0}),
        RewardOutcome(0.0, Verdict(0.0, ErrorCode.WRONG_RESULT, "rows"), {"error": 0.0}),
        RewardOutcome(1.0, shared, {"error": 1.0, "trivial": 0.0}),
    ]
    table, where = _packed(outcomes)
    assert len(table) == 3 and isinstance(where, bytes)
    back = unpack_outcomes((table, where))
    assert back == outcomes
    assert back[0].verdict is back[1].verdict  # shared values stay shared, as pickle kept them
    assert back[0].metrics is not back[1].metrics
    # Past 256 distinct outcomes an item's index takes four bytes.
    many = [RewardOutcome(0.0, Verdict(0.0), {"rows": float(i)}) for i in range(300)]
    assert unpack_outcomes(_packed(many)) == many


def test_the_child_holds_the_files_it_read_unchanged_while_it_keeps_them_open(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kept.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE t (name TEXT, x INTEGER);INSERT INTO t VALUES ('a', 2);")
    conn.close()
    served = RewardProcess(config())
    try:
        assert served.score([(str(path), GOLD, GOLD)])[0].reward == 1.0
        # Its gold results are kept: a write that would change them waits, then fails.
        writer = sqlite3.connect(path, timeout=0, isolation_level=None)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            writer.execute("INSERT INTO t VALUES ('b', 3)")
    finally:
        served.close()
    writer.execute("INSERT INTO t VALUES ('b', 3)")  # the child gone, the file is free
    writer.close()
