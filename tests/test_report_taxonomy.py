"""The error taxonomy of the report, each category produced by the real scorers or a run record,
and the schema-linking diagnosis."""

from __future__ import annotations

import sqlite3

import pytest

from querybench.evaluation.record import InstanceResult
from querybench.evaluation.spider1 import evaluate_spider1
from querybench.report.linking import schema_linking, tables_read
from querybench.report.taxonomy import diagnose, difference_kind, engine_error_class
from querybench.runs.outputs import with_record_errors
from querybench.runs.store import InstanceRecord

GOLD = "SELECT name, age FROM singer ORDER BY age"
# prediction -> the label the report gives it, each scored by the Spider 1.0 evaluator
CASES = [
    ("SELECT name, age FROM singer ORDER BY age", None),
    ("SELEC name FROM singer", "parse_error: syntax error"),
    ("SELECT nme FROM singer", "exec_error: no such column"),
    ("SELECT name FROM singers", "exec_error: no such table"),
    ("DELETE FROM singer", "refused_write"),
    (
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT name, i FROM r, "
        "singer",
        "timeout",
    ),
    ("SELECT name, age FROM singer WHERE age > 100", "empty_result"),
    ("SELECT name FROM singer ORDER BY age", "wrong_columns"),
    ("SELECT name, age FROM singer WHERE age > 30 ORDER BY age", "wrong_rows"),
    ("SELECT name, age + 1 FROM singer ORDER BY age", "wrong_values"),
    ("SELECT name, age FROM singer ORDER BY age DESC", "wrong_order"),
]


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> list[InstanceResult]:
    root = tmp_path_factory.mktemp("spider1")
    db = root / "db" / "concert"
    db.mkdir(parents=True)
    con = sqlite3.connect(db / "concert.sqlite")
    con.execute("CREATE TABLE singer (name TEXT, age INTEGER)")
    con.executemany("INSERT INTO singer VALUES (?, ?)", [("Ann", 25), ("Bo", 41), ("Cy", 33)])
    con.commit()
    con.close()
    (root / "gold.sql").write_text("".join(f"{GOLD}\tconcert\n" for _ in CASES), "utf-8")
    (root / "pred.txt").write_text("".join(f"{sql}\n" for sql, _ in CASES), "utf-8")
    return evaluate_spider1(
        root / "pred.txt", gold=root / "gold.sql", db_dir=root / "db", timeout=0.5, workers=2,
        cache_dir=root / "cache",
    )  # fmt: skip


@pytest.mark.parametrize("index", range(len(CASES)), ids=[str(e) for _, e in CASES])
def test_each_category_from_the_spider1_scorer(scored: list[InstanceResult], index: int) -> None:
    found = diagnose(scored[index])
    assert (found.label if found else None) == CASES[index][1], scored[index]


def _record(iid: str, error: str, message: str) -> InstanceRecord:
    return InstanceRecord(iid, "error", error=error, message=message)


def test_model_errors_come_from_the_run_record() -> None:
    records = {
        "a": _record("a", "model_error", "HTTP 503 after 5 retries"),
        "b": _record("b", "budget_exhausted", "request budget of 10 spent"),
    }
    # the scorer saw no prediction; the run folder's results keep the record's code
    unscored = [InstanceResult(i, 0.0, "missing_prediction", "no prediction line") for i in "ab"]
    results = with_record_errors(unscored, records)
    assert diagnose(results[0], records["a"]) == diagnose(unscored[0], records["a"])
    assert diagnose(results[0], records["a"]).label == "model_error"  # type: ignore[union-attr]
    assert diagnose(unscored[1], records["b"]).label == "model_error: budget_exhausted"  # type: ignore[union-attr]
    # a results file without records still names the code it carries
    assert diagnose(results[0]).label == "model_error"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("error", "message", "label"),
    [
        ("timeout", "the query ran past its 60.0s timeout and was stopped", "timeout"),
        ("refused_write", "refused: insert on singer (the database is read-only)", "refused_write"),
        ("parse_error", "empty SQL", "parse_error: empty sql"),
        ("parse_error", "no SQL found in the prediction", "parse_error: no sql found"),
        (
            "exec_error",
            'Binder Error: Referenced column "nme" not found',
            "exec_error: binder error",
        ),
        (
            "exec_error",
            'Parser Error: syntax error at or near "SELEC"',
            "parse_error: syntax error",
        ),
        ("exec_error", 'column "nme" does not exist', "exec_error: undefined object"),
        ("exec_error", "unexpected ValueError: bad", "exec_error: unexpected valueerror"),
        ("missing_prediction", "no bq001.csv", "missing_prediction"),
        ("gold_error", "gold query failed: x", "gold_error"),
    ],
)
def test_codes_and_messages_of_the_other_scorers(error: str, message: str, label: str) -> None:
    found = diagnose(InstanceResult("x", 0.0, error, message))
    assert found is not None and found.label == label


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("prediction 4x3 matches no gold (8x3, 4x3; condition_cols=[[2]], ignore_order=True)",
         "wrong_values"),
        ("prediction 1x2 matches no gold (3x5, 3x4; condition_cols=[[4]], ignore_order=True)",
         "wrong_columns"),
        ("prediction 673x1 matches no gold (76x1, 92x1; condition_cols=[], ignore_order=True)",
         "wrong_rows"),
        ("prediction 0x2 matches no gold row for row (3x2)", "empty_result"),
        ("different row sets: gold 4 distinct rows, prediction 0", "empty_result"),
        ("different row sets: gold 4 distinct rows, prediction 3", "wrong_rows"),
        ("different row sets: gold 4 distinct rows, prediction 4", "wrong_values"),
    ],
)  # fmt: skip
def test_spider2_and_bird_messages(message: str, kind: str) -> None:
    assert difference_kind(message) == kind


def test_a_passed_instance_has_no_diagnosis() -> None:
    assert diagnose(InstanceResult("x", 1.0)) is None
    assert engine_error_class("no such table: t") == "no such table"


def test_schema_linking_against_the_gold_tables() -> None:
    gold = "SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 ON T1.sid = T2.id"
    link = schema_linking("SELECT name FROM stadium, singer", gold, "sqlite")
    assert link is not None
    assert link.gold_tables == ("concert", "stadium") and link.predicted_tables == (
        "singer",
        "stadium",
    )
    assert link.missing == ("concert",) and link.extra == ("singer",) and not link.exact
    cte = "WITH t AS (SELECT * FROM `p.d.events_2021*`) SELECT * FROM t"
    assert tables_read(cte, "bigquery") == ("events_2021*",)
    assert schema_linking("SELEC FROM (", gold, "sqlite") is None
    assert schema_linking(None, gold, "sqlite") is None
