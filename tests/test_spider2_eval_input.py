"""Spider 2.0 evaluation under odd and hostile inputs: every failure is that instance's verdict
with a stated reason; no input crashes, hangs or ends the eval."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from bench.official_baseline import compare_table
from querybench.cli import app
from querybench.evaluation.record import InstanceResult
from querybench.evaluation.spider2 import score_frame
from querybench.evaluation.spider2_eval import evaluate_spider2
from querybench.evaluation.spider2_gold import EvalSpec

BIG = "9" * 400  # pandas reads it as a Python int, which float() cannot take
runner = CliRunner()


def frame(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


def make_gold(root: Path, golds: dict[str, bytes], benchmark: str = "spider2-lite") -> Path:
    """A gold folder: `golds` maps a gold file name to its bytes, one instance per id."""
    gold = root / "gold"
    (gold / "exec_result").mkdir(parents=True)
    ids = sorted({name.removesuffix(".csv").split("_")[0] for name in golds})
    config = "spider2lite_eval.jsonl" if benchmark == "spider2-lite" else "spider2snow_eval.jsonl"
    (gold / config).write_text(
        "".join(
            json.dumps({"instance_id": i, "condition_cols": [], "ignore_order": True}) + "\n"
            for i in ids
        )
    )
    for name, data in golds.items():
        (gold / "exec_result" / name).write_bytes(data)
    return gold


def by_id(results: list[InstanceResult]) -> dict[str, InstanceResult]:
    return {r.instance_id: r for r in results}


# -- one odd cell -----------------------------------------------------------------------------


@pytest.mark.parametrize("benchmark", ["spider2-lite", "spider2-snow"])
def test_a_400_digit_integer_is_that_instances_verdict(tmp_path: Path, benchmark: str) -> None:
    gold = make_gold(tmp_path, {"local001.csv": b"v\n1\n", "local002.csv": b"v\n1\n"}, benchmark)
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "local001.csv").write_text(f"a\n{BIG}\n")
    (pred / "local002.csv").write_text("a\n1\n")
    out = tmp_path / "out.jsonl"
    args = ["eval", benchmark, "--predictions", str(pred), "--gold-dir", str(gold)]
    result = runner.invoke(app, [*args, "--output", str(out)])
    assert result.exit_code == 0, result.output
    lines = {d["instance_id"]: d for d in map(json.loads, out.read_text().splitlines())}
    assert lines["local002"]["score"] == 1
    odd = lines["local001"]
    assert (odd["official_score"], odd["strict_score"]) == (0, 0)
    assert odd["error"] == "wrong_result" and "OverflowError" in odd["message"]


# (pred, gold, ignore_order, strict expected): the official verdict is the reference's, where
# float() of the big int raises and zeroes the instance.
BIG_CASES = [
    (f"a\n{BIG}\n", "v\n1\n", True, False),
    (f"a\n{BIG}\n", f"v\n{BIG}\n", True, True),
    (f"a\n{BIG}\n", f"v\n{BIG[:-1]}8\n", False, False),  # exact: no float holds either
    (f"a\n{BIG}\n1\n", f"v\n1\n{BIG}\n", True, True),
    (f"a\n{BIG}\n1\n", f"v\n1\n{BIG}\n", False, False),
    (f"a,b\n{BIG},1\n", "v\n1\n", False, True),  # officially the first column raises
    (f"a,b\n1,{BIG}\n", "v\n1\n", False, True),  # officially column a matches first
    (f"a\n2\n{BIG}\n", "v\n1\n1\n", False, False),  # the loop stops at row 0, before the int
    (f"a\nx\n{BIG}\n", "v\nx\n1\n", False, False),
    (f"a\n{'7' * 5000}\n", f"v\n{'7' * 5000}\n", True, True),  # beyond str()'s digit limit
]


@pytest.mark.parametrize(("pred", "gold", "ignore_order", "strict"), BIG_CASES)
def test_big_integers_official_as_the_reference_strict_exact(
    pred: str, gold: str, ignore_order: bool, strict: bool
) -> None:
    verdicts = score_frame(
        frame(pred), [frame(gold)], True, EvalSpec("x", [], ignore_order), "lite"
    )
    try:
        reference = compare_table(frame(pred), frame(gold), [], ignore_order, "lite")
    except Exception:  # the official scorer zeroes the instance
        reference = 0
    assert verdicts.official.score == reference
    assert verdicts.strict.passed is strict
    assert verdicts.strict.error in (None, "wrong_result")


def _toy_db(root: Path) -> tuple[Path, Path]:
    db_dir = root / "dbs"
    db_dir.mkdir()
    with sqlite3.connect(db_dir / "toy.sqlite") as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.execute("INSERT INTO t VALUES (1)")
    conn.close()
    tasks = root / "spider2-lite.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"instance_id": f"local00{i}", "db": "toy", "question": "?"}) + "\n"
            for i in (1, 2)
        )
    )
    return db_dir, tasks


def test_sql_mode_big_integer_through_the_csv_round_trip(tmp_path: Path) -> None:
    gold = make_gold(tmp_path, {"local001.csv": b"v\n1\n", "local002.csv": b"v\n1\n"})
    db_dir, tasks = _toy_db(tmp_path)
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "local001.sql").write_text(f"SELECT '{BIG}' AS a, x FROM t")  # text, read back an int
    (pred / "local002.sql").write_text("SELECT x FROM t")
    for scoring in ("official", "strict"):
        results = by_id(
            evaluate_spider2(
                "spider2-lite",
                pred,
                gold,
                mode="sql",
                scoring=scoring,  # type: ignore[arg-type]
                db_dir=db_dir,
                tasks_file=tasks,
            )
        )
        assert results["local002"].score == 1
        odd = results["local001"]
        # officially column a raises before column x is tried; strictly x is the answer
        assert (odd.official_score, odd.strict_score) == (0, 1)


# -- an unreadable gold alternative ---------------------------------------------------------


def test_unreadable_gold_alternative_after_a_wrong_prediction_is_a_gold_error(
    tmp_path: Path,
) -> None:
    gold = make_gold(
        tmp_path,
        {
            "local001_a.csv": b"v\n2\n",
            "local001_b.csv": b"v\n\xff\xfe\n",
            "local002.csv": b"v\n1\n",
        },
    )
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "local001.csv").write_text("a\n1\n")
    (pred / "local002.csv").write_text("a\n1\n")
    for scoring in ("official", "strict"):
        results = by_id(evaluate_spider2("spider2-lite", pred, gold, scoring=scoring))  # type: ignore[arg-type]
        assert results["local002"].score == 1
        odd = results["local001"]
        assert odd.error == "gold_error" and "local001_b.csv" in str(odd.message)
        assert (odd.official_score, odd.strict_score) == (0, 0)
