"""A query child is capped in memory by the OS (`engines/memory.py`): a statement that builds
a huge intermediate is that instance's `too_large` with the cap in its reason, never a crash
of the child or the run, on SQLite and DuckDB alike; DuckDB's and SQLite's own limits sit
below the cap, so the engine refuses first."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.engines.memory import QUERY_MEMORY_ENV, query_memory_bytes
from querybench.engines.pool import run_one
from querybench.errors import ErrorCode, QueryOutOfMemory
from querybench.evaluation.bird.evaluate import evaluate_bird
from tests.test_bird import _official, _tiny_files, _write

CAP = 256 * 1024**2
# 600 blobs of 1 MB sorted: SQLite holds them all in its sorter (temp_store=MEMORY).
SQLITE_HOG = (
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r LIMIT 600)"
    " SELECT length(max(x)) FROM (SELECT randomblob(1000000) AS x FROM r ORDER BY x)"
)
# 3 GB of text aggregated into one value.
DUCKDB_HOG = "SELECT length(string_agg(repeat('x', 100), ',')) FROM range(30000000)"


@pytest.fixture(autouse=True)
def _capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(QUERY_MEMORY_ENV, str(CAP))
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))


def _sqlite(tmp_path: Path) -> Path:
    path = tmp_path / "m.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (i INTEGER)")
        conn.execute("INSERT INTO t VALUES (1)")
    return path


def _duckdb(tmp_path: Path) -> Path:
    path = tmp_path / "m.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE t AS SELECT 1 AS i")
    conn.close()
    return path


def _assert_out_of_memory(error: object) -> None:
    assert isinstance(error, QueryOutOfMemory), error
    assert error.code == ErrorCode.TOO_LARGE
    assert f"the query memory cap of {CAP:,} bytes" in str(error)
    assert QUERY_MEMORY_ENV in str(error)


def test_a_query_past_the_memory_cap_is_too_large_on_sqlite(tmp_path: Path) -> None:
    database = _sqlite(tmp_path)
    outcome = run_one(database, SQLITE_HOG, timeout=60, max_rows=None)
    _assert_out_of_memory(outcome.error)
    after = run_one(database, "SELECT count(*) FROM t", timeout=60)
    assert after.result is not None and after.result.rows == [(1,)]


def test_a_query_past_the_memory_cap_is_too_large_on_duckdb(tmp_path: Path) -> None:
    database = _duckdb(tmp_path)
    outcome = run_one(database, DUCKDB_HOG, timeout=60, max_rows=None)
    _assert_out_of_memory(outcome.error)


def test_duckdbs_own_limit_sits_below_the_cap(tmp_path: Path) -> None:
    setting = run_one(_duckdb(tmp_path), "SELECT current_setting('memory_limit')", timeout=60)
    assert setting.result is not None
    assert setting.result.rows == [("128.0 MiB",)]  # half the cap


def test_the_cap_has_a_default_and_refuses_nonsense(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUERY_MEMORY_ENV)
    assert query_memory_bytes() == 8 * 1024**3
    monkeypatch.setenv(QUERY_MEMORY_ENV, "lots")
    with pytest.raises(ValueError, match=QUERY_MEMORY_ENV):
        query_memory_bytes()


def test_a_bird_answer_past_the_memory_cap_is_its_own_too_large(tmp_path: Path) -> None:
    questions, predictions, db_dir = _tiny_files(tmp_path)
    entries = json.loads(predictions.read_text())
    first = next(iter(entries))
    entries[first] = _official(SQLITE_HOG)
    _write(predictions, entries)
    args = ["eval", "bird", "--questions", str(questions), "--predictions", str(predictions)]
    output = ["--db-dir", str(db_dir), "--output", str(tmp_path / "s.jsonl")]
    result = CliRunner().invoke(app, [*args, *output])
    assert result.exit_code == 0, result.output
    results = evaluate_bird(predictions, questions=questions, db_dir=db_dir, timeout=30)
    by_id = {r.instance_id: r for r in results}
    assert (by_id[first].error, by_id[first].score) == ("too_large", 0.0)
    assert f"memory cap of {CAP:,} bytes" in (by_id[first].message or "")
    assert sum(r.score for r in results) > 0  # the others are scored


@pytest.mark.parametrize("processes", [True, False])
def test_a_reward_answer_past_the_memory_cap_is_its_own_too_large(
    tmp_path: Path, processes: bool
) -> None:
    # The reward's own children (`processes=True`) enter the boundary as every query child
    # does: capped, the hog is that answer's too_large and the next answers still score.
    from querybench.envs import RewardItem, SQLReward

    database = _sqlite(tmp_path)
    gold = "SELECT count(*) FROM t"
    answers = [SQLITE_HOG, gold, "SELECT 2"]
    items = [RewardItem(database, gold, f"```sql\n{sql}\n```") for sql in answers]
    with SQLReward(workers=1, cache_dir=tmp_path / "r", processes=processes) as reward:
        outcomes = reward.score_many(items)
    hog, right, wrong = outcomes
    assert hog.reward == 0.0 and hog.verdict.error == ErrorCode.TOO_LARGE, hog.verdict
    assert f"the query memory cap of {CAP:,} bytes" in (hog.verdict.message or "")
    assert (right.reward, wrong.reward) == (1.0, 0.0)
