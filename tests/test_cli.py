"""The `querybench eval` command line: output lines, summary, exit codes, on fixtures built here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app

runner = CliRunner()


def _gold(root: Path) -> Path:
    gold = root / "gold"
    (gold / "exec_result").mkdir(parents=True)
    specs = [
        {"instance_id": "bq001", "condition_cols": [], "ignore_order": True, "toks": "50"},
        {"instance_id": "sf002", "condition_cols": [0], "ignore_order": False, "toks": "120"},
        {"instance_id": "local003", "condition_cols": [], "ignore_order": True, "toks": "200"},
    ]
    (gold / "spider2lite_eval.jsonl").write_text("\n".join(json.dumps(s) for s in specs))
    (gold / "exec_result" / "bq001.csv").write_text("a,b\n1,x\n2,y\n")
    (gold / "exec_result" / "sf002_a.csv").write_text("n,m\n5,\n")
    (gold / "exec_result" / "local003.csv").write_text("v\n1\n")
    return gold


def _lite_submission(root: Path) -> tuple[Path, list[str]]:
    """`_gold`, a predictions folder answering bq001 alone (the gold's own rows), and the
    `eval spider2-lite` arguments scoring the one with the other."""
    gold = _gold(root)
    pred = root / "pred"
    pred.mkdir()
    (pred / "bq001.csv").write_text("a,b\n1,x\n2,y\n")
    return pred, ["eval", "spider2-lite", "--predictions", str(pred), "--gold-dir", str(gold)]


def test_eval_spider2_writes_every_task_and_exits_zero(tmp_path: Path) -> None:
    gold = _gold(tmp_path)
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "bq001.csv").write_text("x,y\nx,1\ny,2\n")  # columns swapped: both scorings pass
    (pred / "sf002.csv").write_bytes(b"\x00\xff\xfe binary")  # unreadable: fails alone
    out = tmp_path / "scores.jsonl"
    result = runner.invoke(
        app,
        [
            "eval",
            "spider2-lite",
            "--predictions",
            str(pred),
            "--gold-dir",
            str(gold),
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = {d["instance_id"]: d for d in map(json.loads, out.read_text().splitlines())}
    assert set(lines) == {"bq001", "sf002", "local003"}
    assert lines["bq001"]["score"] == 1 and lines["bq001"]["error"] is None
    assert lines["bq001"]["official_score"] == 1 and lines["bq001"]["strict_score"] == 1
    assert lines["sf002"]["error"] == "bad_prediction_file" and lines["sf002"]["message"]
    assert lines["local003"]["error"] == "missing_prediction"
    assert lines["bq001"]["difficulty"] == "easy" and lines["local003"]["difficulty"] == "hard"
    assert "all tasks" in result.output and "submitted" in result.output


def test_scoring_flag_chooses_which_score_is_score(tmp_path: Path) -> None:
    gold = _gold(tmp_path)
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "sf002.csv").write_text("n\n5\n")
    (pred / "local003.csv").write_text("v\n1.0\n")
    for scoring in ("official", "strict"):
        out = tmp_path / f"{scoring}.jsonl"
        result = runner.invoke(
            app,
            [
                "eval",
                "spider2-lite",
                "--predictions",
                str(pred),
                "--gold-dir",
                str(gold),
                "--scoring",
                scoring,
                "--output",
                str(out),
            ],
        )
        assert result.exit_code == 0, result.output
        lines = {d["instance_id"]: d for d in map(json.loads, out.read_text().splitlines())}
        # sf002: its single alternative gets condition_cols[0] == 0, which the lite scorer reads
        # as "all columns" (so the gap in column m, read as 0, must match); strict uses column 0.
        assert lines["sf002"]["official_score"] == 0 and lines["sf002"]["strict_score"] == 1
        expected = 0 if scoring == "official" else 1
        assert lines["sf002"]["score"] == expected
        assert (lines["sf002"]["error"] is None) == (expected == 1)
        assert lines["local003"]["score"] == 1


def test_unusable_arguments_exit_two(tmp_path: Path) -> None:
    gold = _gold(tmp_path)
    result = runner.invoke(
        app,
        [
            "eval",
            "spider2-lite",
            "--predictions",
            str(tmp_path / "missing"),
            "--gold-dir",
            str(gold),
        ],
    )
    assert result.exit_code == 2
    assert "predictions folder not found" in result.output
    result = runner.invoke(
        app,
        [
            "eval",
            "spider2-lite",
            "--predictions",
            str(tmp_path),
            "--gold-dir",
            str(gold),
            "--mode",
            "nope",
        ],
    )
    assert result.exit_code == 2


def test_help_teaches_with_examples() -> None:
    result = runner.invoke(app, ["eval", "--help"])
    assert result.exit_code == 0
    assert "querybench eval spider2-lite --predictions" in result.output
    result = runner.invoke(app, ["eval", "spider2-snow", "--help"])
    assert result.exit_code == 0 and "--scoring" in result.output


def _toy_db(root: Path) -> Path:
    import sqlite3

    db_dir = root / "dbs"
    (db_dir / "toy").mkdir(parents=True)
    with sqlite3.connect(db_dir / "toy" / "toy.sqlite") as conn:
        conn.execute("CREATE TABLE t (x INTEGER, y TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, "a"), (2, "b"), (3, "b")])
    conn.close()
    return db_dir


def test_eval_spider1_official_text_formats(tmp_path: Path) -> None:
    db_dir = _toy_db(tmp_path)
    gold = tmp_path / "gold.sql"
    gold.write_text(
        "SELECT x FROM t ORDER BY x\ttoy\nSELECT count(*) FROM t\ttoy\nSELECT y FROM t\ttoy\n"
    )
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT x FROM t ORDER BY x DESC\nSELECT count(x) FROM t\n")
    out = tmp_path / "s1.jsonl"
    result = runner.invoke(
        app,
        [
            "eval",
            "spider1",
            "--gold",
            str(gold),
            "--predictions",
            str(pred),
            "--db-dir",
            str(db_dir),
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [d["instance_id"] for d in lines] == ["0", "1", "2"]
    assert [d["score"] for d in lines] == [0, 1, 0]
    assert lines[0]["error"] == "wrong_result"
    assert lines[2]["error"] == "missing_prediction"


def test_eval_bird_prediction_json_and_metrics(tmp_path: Path) -> None:
    db_dir = _toy_db(tmp_path)
    questions = tmp_path / "dev.json"
    questions.write_text(
        json.dumps(
            [
                {
                    "question_id": 0,
                    "db_id": "toy",
                    "question": "?",
                    "SQL": "SELECT y FROM t",
                    "difficulty": "simple",
                },
                {
                    "question_id": 1,
                    "db_id": "toy",
                    "question": "?",
                    "SQL": "SELECT count(*) FROM t",
                    "difficulty": "challenging",
                },
            ]
        )
    )
    predictions = tmp_path / "predict_dev.json"
    predictions.write_text(
        json.dumps(
            {
                "0": "SELECT DISTINCT y FROM t\t----- bird -----\ttoy",
                "1": "DROP TABLE t\t----- bird -----\ttoy",
            }
        )
    )
    out = tmp_path / "bird.jsonl"
    result = runner.invoke(
        app,
        [
            "eval",
            "bird",
            "--questions",
            str(questions),
            "--predictions",
            str(predictions),
            "--db-dir",
            str(db_dir),
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = {d["instance_id"]: d for d in map(json.loads, out.read_text().splitlines())}
    assert lines["0"]["score"] == 1  # set semantics: duplicates ignored
    assert lines["1"]["score"] == 0 and lines["1"]["error"] == "refused_write"
    assert lines["1"]["difficulty"] == "challenging"
    assert "metrics" in result.output


def test_a_predictions_path_that_is_a_file_is_named_as_not_a_folder(tmp_path: Path) -> None:
    gold = _gold(tmp_path)
    (tmp_path / "preds.txt").write_text("x")
    args = ["eval", "spider2-lite", "--predictions", str(tmp_path / "preds.txt")]
    result = runner.invoke(app, [*args, "--gold-dir", str(gold)])
    assert result.exit_code == 2
    said = " ".join(result.output.split())  # rich wraps long lines
    assert f"predictions path is not a folder: {tmp_path / 'preds.txt'}" in said


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--max-bytes", "0"),
        ("--max-columns", "-5"),
        ("--max-cells", "0"),
        ("--max-line-bytes", "0"),
        ("--read-timeout", "0"),
        ("--read-timeout", "-1"),
    ],
)
def test_read_limits_below_their_least_value_exit_two(
    tmp_path: Path, flag: str, value: str
) -> None:
    gold = _gold(tmp_path)
    (tmp_path / "pred").mkdir()
    args = ["eval", "spider2-lite", "--predictions", str(tmp_path / "pred")]
    result = runner.invoke(app, [*args, "--gold-dir", str(gold), flag, value])
    assert result.exit_code == 2
    assert flag in result.output
