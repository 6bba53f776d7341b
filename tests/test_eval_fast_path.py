"""What the small-job eval path costs: the modules it imports and the queries it runs.

A fresh interpreter scores a tiny BIRD and Spider 1.0 job through the console entry point and
reports which heavy modules it loaded; and `run_gold_and_predictions` runs a query only once
when a prediction is its gold's very text (except for a NaN result, which the official scripts
find different from itself).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from querybench.engines.base import Result
from querybench.errors import EngineError
from querybench.evaluation import execution
from querybench.evaluation.bird.evaluate import bird_verdict
from querybench.evaluation.execution import run_gold_and_predictions
from tests.test_engines_pool import counting_query

# Not needed to score SQLite answers: the columnar stack, the pydantic typer would coerce options
# with, the Ray and model stacks, the engines of other databases, the SQL translator, the
# other commands.
HEAVY = (
    "pyarrow",
    "pandas",
    "numpy",
    "pydantic",
    "duckdb",
    "sqlglot",
    "httpx",
    "querybench.runs.ray_eval",
    "querybench.commands.run",
    "zoneinfo",  # the result cache's pickler knows zones without importing them
)


def _database(root: Path) -> Path:
    db = root / "db" / "shop" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE item (id INTEGER, name TEXT)")
        conn.executemany("INSERT INTO item VALUES (?, ?)", [(1, "a"), (2, "b")])
    conn.close()
    return db.parent.parent


def _imports_of(args: list[str], tmp_path: Path) -> dict[str, bool]:
    script = (
        "import sys, json\n"
        "from querybench._entry import main\n"
        f"sys.argv = ['querybench', *{args!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))\n"
    )
    env = {"QUERYBENCH_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    env |= {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    loaded: dict[str, bool] = json.loads(proc.stdout.strip().splitlines()[-1])
    return loaded


def test_eval_bird_imports_nothing_heavy(tmp_path: Path) -> None:
    db_dir = _database(tmp_path)
    questions = tmp_path / "dev.json"
    questions.write_text(json.dumps([{"db_id": "shop", "SQL": "SELECT name FROM item"}]))
    predictions = tmp_path / "pred.json"
    predictions.write_text(json.dumps({"0": "SELECT name FROM item\t----- bird -----\tshop"}))
    out = tmp_path / "out.jsonl"
    args = ["eval", "bird", "--questions", str(questions), "--predictions", str(predictions)]
    loaded = _imports_of([*args, "--db-dir", str(db_dir), "--output", str(out)], tmp_path)
    assert json.loads(out.read_text())["score"] == 1.0
    assert not any(loaded.values()), loaded


def test_eval_spider1_imports_nothing_heavy(tmp_path: Path) -> None:
    db_dir = _database(tmp_path)
    gold = tmp_path / "gold.sql"
    gold.write_text("SELECT id FROM item ORDER BY id\tshop\n")
    pred = tmp_path / "pred.sql"
    pred.write_text("SELECT id FROM item ORDER BY id DESC\n")
    out = tmp_path / "out.jsonl"
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(pred)]
    loaded = _imports_of([*args, "--db-dir", str(db_dir), "--output", str(out)], tmp_path)
    assert json.loads(out.read_text())["error"] == "wrong_result"
    assert not any(loaded.values()), loaded


def test_a_prediction_that_is_the_gold_text_runs_once(tmp_path: Path) -> None:
    db = _database(tmp_path) / "shop" / "shop.sqlite"
    ran: list[None] = []
    sql = "SELECT name FROM item"
    gold, pred = run_gold_and_predictions(
        {"q1": (db, sql), "q2": (db, sql)},
        {"q1": (db, sql), "q2": (db, "SELECT id FROM item")},
        timeout=10,
        workers=2,
        cache_dir=tmp_path / "cache",
        on_query=lambda: ran.append(None),
    )
    assert len(ran) == 2  # the shared query and q2's own prediction
    assert gold["q1"] == pred["q1"] == gold["q2"]
    assert bird_verdict(gold["q1"], pred["q1"]).passed
    assert not bird_verdict(gold["q2"], pred["q2"]).passed
    # Warm: the gold and q2's prediction come from the cache; nothing runs.
    ran.clear()
    run_gold_and_predictions(
        {"q1": (db, sql)},
        {"q1": (db, sql), "q2": (db, "SELECT id FROM item")},
        timeout=10,
        workers=1,
        cache_dir=tmp_path / "cache",
        on_query=lambda: ran.append(None),
    )
    assert len(ran) == 0


def test_a_nan_result_is_not_shared(tmp_path: Path) -> None:
    # NaN equals no other NaN: the official scripts, running gold and prediction apart, score
    # this identical pair 0, so the prediction must get rows of its own.
    db = tmp_path / "nan.duckdb"
    duckdb.connect(str(db)).close()
    sql = "SELECT 'nan'::DOUBLE AS x"
    ran: list[None] = []
    gold, pred = run_gold_and_predictions(
        {"q": (db, sql)},
        {"q": (db, sql)},
        timeout=10,
        workers=1,
        cache_dir=tmp_path / "cache",
        on_query=lambda: ran.append(None),
    )
    assert len(ran) == 1  # the prediction's own copy is read back from the store
    assert pred["q"] is not gold["q"]
    assert not bird_verdict(gold["q"], pred["q"]).passed


def test_a_zoned_timestamp_round_trips_through_the_result_cache() -> None:
    """The cache's pickler still sends zones through the safe loader (zoneinfo imported late)."""
    import datetime
    import zoneinfo

    from querybench.engines.base import Result
    from querybench.engines.cache_values import dump_result as _dump
    from querybench.engines.cache_values import load_result as _load

    paris = zoneinfo.ZoneInfo("Europe/Paris")
    stamp = datetime.datetime(2024, 3, 1, 12, 0, tzinfo=paris)
    back = _load(_dump(Result(("t",), [(stamp,)], 0.01, {})))
    assert back is not None and back.rows == [(stamp,)]
    assert back.rows[0][0].tzinfo is paris


def _pool_jobs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of jobs each `QueryPool.run` was given, recorded."""
    from querybench.engines.pool import QueryPool

    runs: list[int] = []
    original = QueryPool.run

    def run(self: QueryPool, jobs: list[Any], **options: Any) -> Any:
        runs.append(len(jobs))
        return original(self, jobs, **options)

    monkeypatch.setattr(QueryPool, "run", run)
    return runs


def test_queries_run_on_children_driven_from_this_thread_without_a_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _database(tmp_path) / "shop" / "shop.sqlite"
    runs = _pool_jobs(monkeypatch)
    gold, pred = run_gold_and_predictions(
        {"q1": (db, "SELECT name FROM item"), "q2": (db, "SELECT nope FROM item")},
        {"q1": (db, "SELECT id FROM item"), "q2": (db, "SELECT 1")},
        timeout=10,
        workers=2,
        cache_dir=tmp_path / "cache",
    )
    assert runs == []
    assert isinstance(gold["q1"], Result) and gold["q1"].rows == [("a",), ("b",)]
    assert isinstance(gold["q2"], EngineError) and "no such column" in str(gold["q2"])
    assert isinstance(pred["q1"], Result) and pred["q1"].rows == [(1,), (2,)]


def test_the_batches_are_shared_by_the_children_and_a_missing_database_fails_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A slow query holds back its own batch: the others go to the other child meanwhile.
    import threading

    from querybench.engines.isolated import QueryProcess

    db = _database(tmp_path) / "shop" / "shop.sqlite"
    served: list[int] = []
    original = QueryProcess.send_many
    here, threads = threading.current_thread(), threading.active_count()

    def send_many(self: QueryProcess, *args: Any, **options: Any) -> Any:
        served.append(id(self))
        # no worker thread (other tests may leave threads of their own): forked from here
        assert threading.current_thread() is here and threading.active_count() == threads
        return original(self, *args, **options)

    monkeypatch.setattr(QueryProcess, "send_many", send_many)
    slow = counting_query(0.2, db)
    jobs = {"slow": (db, slow)} | {f"q{i}": (db, f"SELECT {i}") for i in range(40)}
    jobs["gone"] = (tmp_path / "gone" / "gone.sqlite", "SELECT 1")
    gold, _ = run_gold_and_predictions(
        jobs, {}, timeout=10, workers=2, cache_dir=tmp_path / "cache"
    )
    assert len(set(served)) == 2
    assert all(isinstance(gold[f"q{i}"], Result) for i in range(40))
    assert gold["q3"].rows == [(3,)]  # type: ignore[union-attr]
    assert isinstance(gold["slow"], Result)
    assert isinstance(gold["gone"], EngineError) and "not found" in str(gold["gone"])


def test_each_database_is_opened_by_one_child_and_both_children_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An open is a round trip that holds up the other child: each child keeps to its own run
    # of databases, then takes from the far end of the other's (only then may a database be
    # opened twice, as the timing has it).
    from querybench.engines.isolated import QueryProcess

    databases = []
    for name in ("a", "b", "c", "d"):
        db = tmp_path / name / f"{name}.sqlite"
        db.parent.mkdir()
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE t (x INTEGER)")
        conn.close()
        databases.append(db)
    opened: list[tuple[int, str]] = []
    original = QueryProcess.engine

    def engine(self: QueryProcess, database: str | Path) -> Any:
        opened.append((id(self), str(database)))
        return original(self, database)

    monkeypatch.setattr(QueryProcess, "engine", engine)
    jobs = {f"{db.stem}{i}": (db, f"SELECT {i}") for db in databases for i in range(20)}
    gold, _ = run_gold_and_predictions(
        jobs, {}, timeout=10, workers=2, cache_dir=tmp_path / "cache"
    )
    assert all(isinstance(v, Result) and v.rows == [(int(k[1:]),)] for k, v in gold.items())
    assert {database for _, database in opened} == set(map(str, databases))
    assert len({child for child, _ in opened}) == 2
    # what each child takes, step by step: its own lane, then the far end of the other's
    batches = [[(db, f"SELECT {i}")] for db in "aabbccdd" for i in range(1)]
    lanes = execution._Lanes(batches, 2)
    assert [lanes.take(0)[0][0] for _ in range(4)] == ["a", "a", "b", "b"]
    assert [lanes.take(1)[0][0] for _ in range(2)] == ["c", "c"]
    assert [lanes.take(0)[0][0] for _ in range(2)] == ["d", "d"] and not lanes


def test_a_child_that_cannot_be_forked_costs_no_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fork that fails (no memory, a process limit) leaves the queries to the pool's
    # workers, which start their children from the forkserver.
    from querybench.engines.isolated import QueryProcess

    def refuse(self: QueryProcess) -> None:
        raise OSError("fork: Resource temporarily unavailable")

    monkeypatch.setattr(QueryProcess, "start", refuse)
    db = _database(tmp_path) / "shop" / "shop.sqlite"
    gold, pred = run_gold_and_predictions(
        {"q": (db, "SELECT name FROM item")},
        {"q": (db, "SELECT id FROM item")},
        timeout=10,
        workers=1,
        cache_dir=tmp_path / "cache",
    )
    assert isinstance(gold["q"], Result) and gold["q"].rows == [("a",), ("b",)]
    assert isinstance(pred["q"], Result) and pred["q"].rows == [(1,), (2,)]


def test_a_cached_result_slower_than_the_timeout_runs_again(tmp_path: Path) -> None:
    # A query that finished in 8 s under --timeout 30 times out under --timeout 1, as a cold
    # run (and the official script) finds; the store must not serve it then. The stored rows
    # are made different from the real ones, so which was used shows.
    from querybench.engines.cache import ResultCache

    db = _database(tmp_path) / "shop" / "shop.sqlite"
    sql = "SELECT count(*) FROM item"
    store = ResultCache(tmp_path / "cache")
    try:
        stale = Result(("n",), [(-1,)], elapsed_s=8.0)
        store.put_outcomes(
            [((str(db), sql), stale)], max_rows=execution.MAX_ROWS, max_bytes=1 << 20
        )
    finally:
        store.close()
    jobs = {"q": (db, sql)}
    gold, _ = run_gold_and_predictions(
        jobs, {}, timeout=30, workers=1, cache_dir=tmp_path / "cache"
    )
    assert isinstance(gold["q"], Result) and gold["q"].rows == [(-1,)]  # within 30 s: served
    gold, _ = run_gold_and_predictions(jobs, {}, timeout=1, workers=1, cache_dir=tmp_path / "cache")
    assert isinstance(gold["q"], Result) and gold["q"].rows != [(-1,)]  # run again
