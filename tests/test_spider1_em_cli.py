"""`eval spider1 --metrics ex,em`: each line's EM and its reason, and the official tables, on a
database and tables.json built here."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.evaluation.record import InstanceResult
from querybench.evaluation.spider1.exact import ExactMatch, ExactMatchFailure, PartialScore
from querybench.report.spider1_tables import spider1_tables

runner = CliRunner()


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))


def _spider(root: Path) -> tuple[Path, Path]:
    db = root / "db" / "concert"
    db.mkdir(parents=True)
    with sqlite3.connect(db / "concert.sqlite") as conn:
        conn.execute("CREATE TABLE singer (singer_id INT, name TEXT, age INT)")
        conn.executemany("INSERT INTO singer VALUES (?, ?, ?)", [(1, "a", 30), (2, "b", 40)])
    conn.close()
    tables = [
        {
            "db_id": "concert",
            "table_names_original": ["singer"],
            "column_names_original": [[-1, "*"], [0, "singer_id"], [0, "name"], [0, "age"]],
            "foreign_keys": [],
        }
    ]
    (root / "db" / "tables.json").write_text(json.dumps(tables))
    gold = root / "gold.sql"
    gold.write_text(
        "SELECT name FROM singer WHERE age > 35\tconcert\n"
        "SELECT count(*) FROM singer\tconcert\n"
        "SELECT name FROM singer ORDER BY age DESC LIMIT 1\tconcert\n"
    )
    return gold, root / "db"


def test_em_lines_and_tables(tmp_path: Path) -> None:
    gold, db_dir = _spider(tmp_path)
    pred = tmp_path / "pred.sql"
    pred.write_text(
        "SELECT name FROM singer WHERE age > 20\n"  # other value: EM 1, EX 0
        "SELECT count(*) AS n FROM singer\n"  # a column alias: the official parser fails
        "SELECT name FROM singer ORDER BY age ASC LIMIT 1\n"  # order differs
    )
    out = tmp_path / "out.jsonl"
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(pred)]
    args += ["--db-dir", str(db_dir), "--metrics", "ex,em", "--output", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["metrics"]["em"] for line in lines] == [1, 0, 0]
    assert [line["score"] for line in lines] == [0, 1, 0]
    assert "reason" not in lines[0]["exact_match"]
    assert "cannot read the prediction" in lines[1]["exact_match"]["reason"]
    assert lines[2]["exact_match"]["partial"]["order"]["f1"] == 0
    # hardness of the gold parses: WHERE alone easy, count(*) easy, ORDER + LIMIT medium
    assert [line["difficulty"] for line in lines] == ["easy", "easy", "medium"]
    assert "EXECUTION ACCURACY" in result.output
    em_row = next(r for r in result.output.splitlines() if r.startswith("exact match"))
    assert em_row.split()[2:] == ["0.500", "0.000", "0.000", "0.000", "0.333"]


def test_em_alone_prints_the_match_layout(tmp_path: Path) -> None:
    gold, db_dir = _spider(tmp_path)
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(gold)]
    result = runner.invoke(app, [*args, "--db-dir", str(db_dir), "--metrics", "em"])
    assert result.exit_code == 0, result.output
    assert "EXACT MATCHING ACCURACY" in result.output
    assert "EXECUTION ACCURACY" not in result.output


def test_unknown_metric_is_a_usage_error(tmp_path: Path) -> None:
    gold, db_dir = _spider(tmp_path)
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(gold)]
    result = runner.invoke(app, [*args, "--db-dir", str(db_dir), "--metrics", "ex,bleu"])
    assert result.exit_code == 2
    assert "choose from ex, em" in result.output


def _em(hardness: str, score: int, where: tuple[int, int, int]) -> ExactMatch:
    """An EM whose every component passes with one unit each, except `where`
    (its acc/F1 score, prediction total and gold total)."""
    ok = PartialScore(1, 1, 1, 1, 1)
    acc, pred_total, label_total = where
    partial = {name: ok for name in ("select", "where")}
    partial["where"] = PartialScore(acc, acc, acc, label_total, pred_total)
    return ExactMatch(score, hardness, partial)


def test_tables_average_accuracy_over_predictions_and_recall_over_golds() -> None:
    results = [
        InstanceResult("0", 1.0, exact_match=_em("easy", 1, (1, 1, 1))),
        InstanceResult("1", 0.0, exact_match=_em("easy", 0, (0, 1, 0))),  # WHERE not in gold
        InstanceResult("2", 0.0, exact_match=_em("easy", 0, (0, 0, 1))),  # WHERE not predicted
        InstanceResult("3", 0.0, exact_match=ExactMatchFailure("the gold does not parse")),
    ]
    text, left_out = spider1_tables(results, with_execution=True)
    assert left_out == 1
    rows = {}
    for line in text.splitlines():
        name = line[:20].strip()
        rows.setdefault(name, []).append(line[21:].split())
    # accuracy: 2 predictions have WHERE, 1 right -> 0.5; recall: 2 golds have it -> 0.5
    accuracy, recall, f1 = rows["where"]
    assert accuracy[0] == "0.500" and recall[0] == "0.500" and f1[0] == "0.500"
    assert rows["execution"][0][0] == "0.333" and rows["exact match"][0][0] == "0.333"
    # a level with no instance prints zeros throughout, F1 included
    assert rows["count"][0][1] == "0" and f1[1] == "0.000"


def test_tables_f1_is_1_where_no_instance_has_the_component() -> None:
    results = [InstanceResult("0", 1.0, exact_match=_em("hard", 1, (1, 0, 0)))]
    text, _ = spider1_tables(results, with_execution=False)
    f1_rows = text.split("PARTIAL MATCHING F1")[1].splitlines()
    where = next(r for r in f1_rows if r.startswith("where "))
    assert where.split()[3] == "1.000"  # hard: acc 0 and rec 0 -> F1 1


def test_exact_match_round_trips_through_the_results_json() -> None:
    em = _em("medium", 0, (0, 1, 1))
    result = InstanceResult("7", 1.0, metrics={"em": 0.0}, exact_match=em)
    again = InstanceResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again == result
    failed = InstanceResult("8", 0.0, exact_match=ExactMatchFailure("no schema"))
    assert InstanceResult.from_json(failed.to_json()) == failed
