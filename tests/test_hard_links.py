"""A prediction file that is a hard link (to the gold, to a data file, to anything) is refused
by the one prediction reader, whatever its kind: a result CSV, a `.sql` answer,
`results_metadata.jsonl`, a `.duckdb` answer and its `.wal`, a whole predictions file. A hard
link is the file itself under a second name, so no path check can tell it from the gold."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.errors import DataError, ErrorCode
from querybench.evaluation.prediction_file import (
    PredictionRefused,
    ReadLimits,
    checked_database,
    open_prediction,
    read_prediction_text,
    whole_file_text,
)
from querybench.evaluation.spider2.agentic.dbt import evaluate_spider2_dbt
from querybench.evaluation.spider2.agentic.evaluate import evaluate_spider2_agentic
from querybench.evaluation.spider2.evaluate import evaluate_spider2
from tests.test_database_answer import GOLD_TABLE, build, dbt_layout
from tests.test_spider2_agentic import Case, scores
from tests.test_spider2_eval_input import by_id, make_gold

runner = CliRunner()


def refused(read: Callable[[], object]) -> str:
    """Why `read` refused (a whole file named on the command line is a `DataError`, any
    other prediction that instance's `bad_prediction_file`)."""
    with pytest.raises(DataError) as caught:
        read()
    if isinstance(caught.value, PredictionRefused):
        assert caught.value.code is ErrorCode.BAD_PREDICTION_FILE, caught.value
    return str(caught.value)


def test_every_reader_refuses_a_hard_link_and_reads_a_copy(tmp_path: Path) -> None:
    gold = tmp_path / "gold" / "g.csv"
    gold.parent.mkdir()
    gold.write_text("a\n1\n")
    folder = tmp_path / "pred"
    folder.mkdir()
    linked = folder / "x.csv"
    os.link(gold, linked)
    copy = folder / "y.csv"
    copy.write_text("a\n1\n")
    limits = ReadLimits()

    def csv(path: Path) -> None:
        with open_prediction(path, folder, limits):
            pass

    readers = {
        "result CSV": csv,
        "text answer": lambda path: read_prediction_text(path, folder, limits),
        "database answer": lambda path: checked_database(path, folder, limits),
        "whole predictions file": lambda path: whole_file_text(path, "predictions"),
    }
    for what, read in readers.items():
        message = refused(lambda read=read: read(linked))  # type: ignore[misc]
        assert "hard link" in message and "2 names" in message, (what, message)
        read(copy)  # a file of its own is read
    # a gold or questions file named on the command line is the user's, links and all
    assert whole_file_text(gold, "gold") == "a\n1\n"


def test_a_database_whose_wal_is_a_hard_link_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "pred"
    pred = build(folder / "shop.duckdb", GOLD_TABLE)
    other = tmp_path / "other.wal"
    other.write_bytes(b"")
    os.link(other, folder / "shop.duckdb.wal")
    message = refused(lambda: checked_database(pred, folder, ReadLimits()))
    assert "shop.duckdb.wal" in message and "hard link" in message


def test_eval_spider2_lite_refuses_a_csv_hard_linked_to_its_gold(tmp_path: Path) -> None:
    gold = make_gold(tmp_path, {"local001.csv": b"a\n1\n", "local002.csv": b"a\n1\n"})
    pred = tmp_path / "pred"
    pred.mkdir()
    os.link(gold / "exec_result" / "local001.csv", pred / "local001.csv")
    (pred / "local002.csv").write_bytes(b"a\n1\n")
    results = by_id(evaluate_spider2(pred, benchmark="spider2-lite", gold_dir=gold, workers=1))
    assert results["local001"].score == 0
    assert results["local001"].error == "bad_prediction_file"
    assert "hard link" in str(results["local001"].message)
    assert results["local002"].score == 1


def test_eval_spider2_dbt_refuses_a_database_hard_linked_to_its_gold(tmp_path: Path) -> None:
    tasks, gold_dir, predictions = dbt_layout(tmp_path)
    for iid in ("shop001", "shop002"):
        (predictions / iid).mkdir(parents=True)
        os.link(gold_dir / iid / "shop.duckdb", predictions / iid / "shop.duckdb")
    build(predictions / "shop003" / "shop.duckdb", GOLD_TABLE)
    results = {
        r.instance_id: r for r in evaluate_spider2_dbt(predictions, tasks=tasks, gold_dir=gold_dir)
    }
    for iid in ("shop001", "shop002"):
        result = results[iid]
        assert (result.official_score, result.strict_score) == (0.0, 0.0), result
        assert result.error == "bad_prediction_file" and "hard link" in (result.message or "")
    assert (results["shop003"].official_score, results["shop003"].strict_score) == (1.0, 1.0)


def test_eval_spider2_refuses_answers_hard_linked_to_the_gold(tmp_path: Path) -> None:
    """A submitted CSV and a `.sql` answer, each a hard link; and a hard-linked
    `results_metadata.jsonl`, which scores nothing and says why."""
    spec = [{"func": "table_match", "parameters": {"gold": "result.csv"}}]
    case = Case(tmp_path)
    for iid in ("csv1", "sql1", "own1"):
        case.task(iid, spec, result_csv="a\n1\n")
    case.submit("csv1", "file", "out.csv")
    (case.sub / "csv1").mkdir(exist_ok=True)
    os.link(case.gold / "csv1" / "result.csv", case.sub / "csv1" / "out.csv")
    case.submit("sql1", "file", "q.sql")
    elsewhere = tmp_path / "q.sql"
    elsewhere.write_text("SELECT 1 AS a")
    os.link(elsewhere, case.sub / "sql1" / "q.sql")
    case.submit("own1", "file", "out.csv", out_csv="a\n1\n")
    results = case.score()
    for iid in ("csv1", "sql1"):
        assert scores(results[iid]) == (0.0, 0.0), results[iid]
        assert results[iid].error == "bad_prediction_file", results[iid]
        assert "hard link" in (results[iid].message or ""), results[iid]
    assert scores(results["own1"]) == (1.0, 1.0)

    metadata = case.sub / "results_metadata.jsonl"
    kept = tmp_path / "kept.jsonl"
    os.link(metadata, kept)
    evaluation = evaluate_spider2_agentic(case.sub, tasks=case.tasks, gold_dir=case.gold)
    assert "hard link" in " ".join(evaluation.warnings), evaluation.warnings
    assert all(r.score == 0.0 for r in evaluation.results)


def test_eval_spider1_refuses_a_predictions_file_hard_linked_to_the_gold(tmp_path: Path) -> None:
    gold = tmp_path / "gold.sql"
    gold.write_text("SELECT 1\tshop\n")
    pred = tmp_path / "pred.sql"
    os.link(gold, pred)
    db = tmp_path / "db" / "shop"
    db.mkdir(parents=True)
    sqlite3.connect(db / "shop.sqlite").close()
    out = runner.invoke(
        app,
        [
            "eval",
            "spider1",
            "--predictions",
            str(pred),
            "--gold",
            str(gold),
            "--db-dir",
            str(db.parent),
        ],
    )
    assert out.exit_code == 2, out.output
    assert "hard link" in out.output, out.output
