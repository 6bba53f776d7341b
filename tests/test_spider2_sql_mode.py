"""Spider 2.0-lite sql mode on the rebuilt local SQLite databases: official agreement and safety."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from bench.official_baseline import score_sql_instance
from querybench.evaluation.spider2.evaluate import evaluate_spider2, extract_official_sql
from tests.conftest import require_data

# SQL rewrites of a gold query: same result, a different one, or no result at all.
REWRITES = {
    "gold": "{sql}",
    "fenced": "Here it is:\n```sql\n{sql}\n```\nDone.",
    "fewer_rows": "SELECT * FROM ({sql}) LIMIT 1",
    "extra_column": "SELECT *, 42 AS extra FROM ({sql})",
    "distinct": "SELECT DISTINCT * FROM ({sql})",
    "reversed": "SELECT * FROM ({sql}) ORDER BY 1 DESC",
    "empty": "SELECT * FROM ({sql}) WHERE 1 = 0",
    "syntax_error": "SELEC broken",
    "two_statements": "SELECT 1; {sql}",
    "write": "DELETE FROM sqlite_master",
}


def _local_gold(n: int | None = None) -> tuple[Path, Path, Path, list[str]]:
    suite = require_data("spider2", "spider2-lite", "evaluation_suite")
    db_dir = require_data("spider2-lite-local")
    tasks = {
        json.loads(x)["instance_id"]: json.loads(x)["db"]
        for x in (suite.parent / "spider2-lite.jsonl").read_text().splitlines()
    }
    ids = sorted(
        p.stem
        for p in (suite / "gold" / "sql").glob("local*.sql")
        if (db_dir / f"{tasks[p.stem]}.sqlite").is_file()
    )
    return suite, db_dir, suite.parent / "spider2-lite.jsonl", ids[:n]


@pytest.mark.slow
def test_sql_mode_agrees_with_official_on_rewrites(tmp_path: Path) -> None:
    suite, db_dir, tasks_file, ids = _local_gold()
    assert ids, "no local gold SQL whose database is present"
    specs = {
        json.loads(x)["instance_id"]: json.loads(x)
        for x in (suite / "gold" / "spider2lite_eval.jsonl").read_text().splitlines()
    }
    db_of = {
        json.loads(x)["instance_id"]: json.loads(x)["db"]
        for x in tasks_file.read_text().splitlines()
    }
    passed = 0
    for name, template in REWRITES.items():
        pred_dir = tmp_path / name
        pred_dir.mkdir()
        for iid in ids:
            gold_sql = (suite / "gold" / "sql" / f"{iid}.sql").read_text().strip().rstrip(";")
            (pred_dir / f"{iid}.sql").write_text(template.format(sql=gold_sql))
        ours = {
            r.instance_id: r
            for r in evaluate_spider2(
                pred_dir,
                benchmark="spider2-lite",
                gold_dir=suite / "gold",
                mode="sql",
                db_dir=db_dir,
                tasks_file=tasks_file,
                timeout=120,
            )
        }
        for iid in ids:
            sql = (pred_dir / f"{iid}.sql").read_text()
            expected = score_sql_instance(
                str(db_dir / f"{db_of[iid]}.sqlite"),
                sql,
                str(suite / "gold" / "exec_result"),
                iid,
                specs[iid],
                "lite",
            )
            assert ours[iid].official_score == expected, (name, iid, ours[iid])
            passed += expected
    assert passed >= 2 * 5  # the five end-to-end reproduced instances pass as gold and fenced


def test_official_extraction_takes_the_first_sql_fence() -> None:
    assert extract_official_sql("x\n```sql\nSELECT 1\n```\n```sql\nSELECT 2\n```") == "SELECT 1"
    assert extract_official_sql("SELECT 3") == "SELECT 3"
    assert extract_official_sql("```SQL\nSELECT 1\n```") == "```SQL\nSELECT 1\n```"


HOSTILE = [
    "INSERT INTO t VALUES (9)",
    "UPDATE t SET x = 0",
    "DELETE FROM t",
    "DROP TABLE t",
    "CREATE TABLE u (x)",
    "ATTACH DATABASE '{dir}/evil.sqlite' AS evil",
    "PRAGMA user_version = 7",
    "VACUUM INTO '{dir}/copy.sqlite'",
    "SELECT load_extension('/nonexistent')",
    "SELECT 1; DROP TABLE t",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c",
    "SELECT zeroblob(2000000000)",
    "SELECT a.x FROM t a, t b, t c, t d, t e, t f, t g",
]


def _toy_sql_mode(tmp_path: Path, predictions: list[str]) -> tuple[Path, list[str], dict[str, Any]]:
    """A 40-row toy database, one lite task per prediction plus an honest last one
    (gold `n = 40`), and the arguments of `evaluate_spider2` in sql mode on them."""
    import sqlite3

    db_dir = tmp_path / "dbs"
    db_dir.mkdir()
    db = db_dir / "toy.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(40)])
    conn.close()
    gold = tmp_path / "gold"
    (gold / "exec_result").mkdir(parents=True)
    tasks, evals = [], []
    pred_dir = tmp_path / "pred"
    pred_dir.mkdir()
    ids = [f"local{900 + i}" for i in range(len(predictions) + 1)]
    for iid, sql in zip(ids, [*predictions, "SELECT count(*) AS n FROM t"], strict=True):
        tasks.append({"instance_id": iid, "db": "toy", "question": "?"})
        evals.append({"instance_id": iid, "condition_cols": [], "ignore_order": True})
        (gold / "exec_result" / f"{iid}.csv").write_text("n\n40\n")
        (pred_dir / f"{iid}.sql").write_text(sql.format(dir=db_dir))
    (gold / "spider2lite_eval.jsonl").write_text("\n".join(json.dumps(e) for e in evals))
    tasks_file = tmp_path / "spider2-lite.jsonl"
    tasks_file.write_text("\n".join(json.dumps(t) for t in tasks))
    arguments = {
        "benchmark": "spider2-lite",
        "predictions": pred_dir,
        "gold_dir": gold,
        "mode": "sql",
        "db_dir": db_dir,
        "tasks_file": tasks_file,
    }
    return db, ids, arguments


def test_hostile_predictions_fail_alone_and_change_nothing(tmp_path: Path) -> None:
    db, ids, arguments = _toy_sql_mode(tmp_path, HOSTILE)
    db_dir = db.parent
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    listing = sorted(p.name for p in db_dir.iterdir())

    results = evaluate_spider2(**arguments, timeout=1.0)

    by_id = {r.instance_id: r for r in results}
    for iid, sql in zip(ids, HOSTILE, strict=False):
        r = by_id[iid]
        assert r.score == 0 and r.error in {
            "refused_write",
            "timeout",
            "exec_error",
            "too_many_rows",
        }, (sql, r)
        assert r.message
    assert by_id[ids[-1]].score == 1  # the run went on and scored the honest prediction
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in db_dir.iterdir()) == listing


def test_results_bigger_than_memory_fail_alone_as_too_large(tmp_path: Path) -> None:
    # Five rows of 99 MB each used to be fetched whole (and crash with MemoryError where
    # memory is short). The byte cap stops the third row, long before the timeout.
    five_blobs = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) "
        "SELECT zeroblob(99000000) AS n FROM n"
    )
    _db, ids, arguments = _toy_sql_mode(tmp_path, [five_blobs])
    by_id = {r.instance_id: r for r in evaluate_spider2(**arguments, timeout=60.0)}
    assert [(by_id[i].score, by_id[i].error) for i in ids] == [(0.0, "too_large"), (1.0, None)]
    assert "bytes" in (by_id[ids[0]].message or "")


def test_single_call_bombs_cost_their_timeout(tmp_path: Path) -> None:
    # Three printf calls, each ~15 s that no progress handler interrupts, used to score
    # wrong_result after ~40 s at a 2 s timeout.
    printf = "SELECT printf('%.*c', 2147483647, 'x') AS n"
    _db, ids, arguments = _toy_sql_mode(tmp_path, [printf, printf, printf])
    timeout = 1.0
    start = time.monotonic()
    results = evaluate_spider2(**arguments, timeout=timeout, workers=4)
    assert time.monotonic() - start < timeout + 10
    by_id = {r.instance_id: r for r in results}
    assert [(by_id[i].score, by_id[i].error) for i in ids] == [(0.0, "timeout")] * 3 + [(1.0, None)]
