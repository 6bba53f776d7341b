"""Spider 2.0 runs leave `<id>.csv` (the official result file) beside `<id>.sql` where the query
ran, so the predictions folder scores the same in exec_result mode as in sql mode."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from querybench.evaluation.spider2.evaluate import evaluate_spider2
from querybench.runs.config import Cache, RunConfig, Selection
from querybench.runs.outputs import finish_run
from querybench.runs.runner import run
from querybench.runs.store import InstanceRecord, RecordStatus, RecordStore
from querybench.tasks import load_tasks
from tests.conftest import require_data

# (instance id, database, predicted SQL, gold CSV)
TASKS = [
    (
        "local901",
        "shop",
        "SELECT name, price FROM items ORDER BY id",
        "name,price\npen,3.0\nbook,12.5\ncup,4.0\n",
    ),
    ("local902", "shop", "SELECT count(*) AS n FROM items", "n\n3\n"),
    ("local903", "shop", "SELECT name FROM items WHERE price > 100", "name\nnothing\n"),
    ("local904", "shop", "SELECT nonsense FROM nowhere", "x\n1\n"),
    ("bq901", "cloudy", "SELECT 1", "x\n1\n"),
]


@pytest.fixture()
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data root with spider2-lite tasks, their gold folder and one local SQLite database."""
    root = tmp_path / "data"
    monkeypatch.setenv("QUERYBENCH_DATA", str(root))
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    lite = root / "spider2" / "spider2-lite"
    gold = lite / "evaluation_suite" / "gold"
    (gold / "sql").mkdir(parents=True)
    (gold / "exec_result").mkdir()
    db = root / "spider2-lite-local" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL);"
        "INSERT INTO items VALUES (1, 'pen', 3), (2, 'book', 12.5), (3, 'cup', 4);"
    )
    con.commit()
    con.close()
    with (
        (lite / "spider2-lite.jsonl").open("w") as tasks,
        (gold / "spider2lite_eval.jsonl").open("w") as specs,
    ):
        for instance_id, database, sql, csv in TASKS:
            question = f"question {instance_id}"
            tasks.write(
                json.dumps(
                    {
                        "instance_id": instance_id,
                        "db": database,
                        "question": question,
                        "external_knowledge": None,
                    }
                )
                + "\n"
            )
            specs.write(
                json.dumps(
                    {
                        "instance_id": instance_id,
                        "condition_cols": [],
                        "ignore_order": False,
                        "toks": "10",
                    }
                )
                + "\n"
            )
            (gold / "sql" / f"{instance_id}.sql").write_text(sql)
            (gold / "exec_result" / f"{instance_id}.csv").write_text(csv)
    return root


def test_run_writes_official_csvs_beside_sql(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    config = RunConfig(
        "spider2-lite", "zero-shot", "scripted", out=out, selection=Selection(data_dir=data)
    )
    tasks = load_tasks("spider2-lite", data_dir=data, with_gold=False)
    store = RecordStore(out)
    records = {}
    for instance_id, _db, sql, _csv in TASKS:
        record = InstanceRecord(instance_id, RecordStatus.OK, sql=sql, sqls=(sql,), replies=(sql,))
        store.append(record)
        records[instance_id] = record
    predictions = out / "predictions"
    predictions.mkdir()
    (predictions / "local902.csv").write_text("stale\n9\n")  # from an earlier invocation
    results, summary = finish_run(config, tasks, [], records)

    written = sorted(p.name for p in predictions.glob("*.csv"))
    # ran: local901-903 (an empty result still has its header); local904 failed, bq901 no engine
    assert written == ["local901.csv", "local902.csv", "local903.csv"]
    assert (predictions / "local901.csv").read_text() == (
        "name,price\npen,3.0\nbook,12.5\ncup,4.0\n"
    )
    assert (predictions / "local902.csv").read_text() == "n\n3\n"
    assert (predictions / "local903.csv").read_text() == "name\n"

    by_id = {r.instance_id: r for r in results}
    assert [by_id[i].score for i, *_ in TASKS] == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert by_id["bq901"].error == "engine_unavailable"
    assert summary["official_score"] == pytest.approx(0.4)

    gold = data / "spider2" / "spider2-lite" / "evaluation_suite" / "gold"
    from_csv = evaluate_spider2(
        predictions, benchmark="spider2-lite", gold_dir=gold, mode="exec_result"
    )
    for r in from_csv:
        assert r.score == by_id[r.instance_id].score, r.instance_id
        assert r.strict_score == by_id[r.instance_id].strict_score, r.instance_id


def test_oracle_on_spider2_lite_local_tasks_scores_the_same_from_csv(tmp_path: Path) -> None:
    """Data-backed: two local tasks whose database and gold SQL are here, `--model oracle`."""
    require_data("spider2-lite-local", "Pagila.sqlite")
    gold = require_data("spider2", "spider2-lite", "evaluation_suite", "gold")
    out = tmp_path / "run"
    config = RunConfig(
        "spider2-lite",
        "zero-shot",
        "oracle",
        out=out,
        selection=Selection(ids=("local038", "local039")),
        cache=Cache(use_cache=False),
    )
    outcome = run(config)
    assert [r.score for r in outcome.results] == [1.0, 1.0]
    predictions = out / "predictions"
    assert sorted(p.name for p in predictions.iterdir()) == [
        "local038.csv",
        "local038.sql",
        "local039.csv",
        "local039.sql",
    ]
    from_csv = {
        r.instance_id: r.score
        for r in evaluate_spider2(
            predictions, benchmark="spider2-lite", gold_dir=gold, mode="exec_result"
        )
    }
    assert from_csv["local038"] == from_csv["local039"] == 1.0


def test_a_hostile_answer_fails_alone_and_the_run_stays_scorable(
    data: Path, tmp_path: Path
) -> None:
    """One model answer whose result has a 400-digit cell: scored, and scored again on resume."""
    out = tmp_path / "run"
    out.mkdir()
    config = RunConfig(
        "spider2-lite", "zero-shot", "scripted", out=out, selection=Selection(data_dir=data)
    )
    tasks = load_tasks("spider2-lite", data_dir=data, with_gold=False)
    records = {}
    for instance_id, _db, sql, _csv in TASKS:
        if instance_id == "local902":
            sql = f"SELECT '{'9' * 400}' AS n"  # text in SQLite, an int once read back
        records[instance_id] = InstanceRecord(instance_id, RecordStatus.OK, sql=sql, sqls=(sql,))
    for _ in range(2):  # the first scoring, then a resume
        results, _summary = finish_run(config, tasks, [], records)
        by_id = {r.instance_id: r for r in results}
        assert by_id["local901"].score == 1.0
        hostile = by_id["local902"]
        assert (hostile.official_score, hostile.strict_score) == (0.0, 0.0)
        assert hostile.error == "wrong_result" and hostile.message
