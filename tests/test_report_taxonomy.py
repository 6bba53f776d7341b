"""The error taxonomy of the report, each category produced by the real scorers or a run record
and read from the typed verdict detail (never the message), and the schema-linking diagnosis."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from querybench.errors import DataError, EngineError, ErrorCode, QueryRefused, QueryTimeout
from querybench.evaluation.bird.evaluate import BIRD_SEPARATOR, evaluate_bird
from querybench.evaluation.detail import Difference, Shape, VerdictDetail
from querybench.evaluation.record import InstanceResult
from querybench.evaluation.spider1.evaluate import evaluate_spider1
from querybench.evaluation.spider2.evaluate import evaluate_spider2
from querybench.evaluation.verdict import Verdict
from querybench.report.linking import schema_linking, tables_read
from querybench.report.runs import result_from_json
from querybench.report.taxonomy import diagnose
from querybench.runs.outputs import with_record_errors
from querybench.runs.store import InstanceRecord, RecordStatus
from tests.test_spider2_eval_input import make_gold

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


def _label(result: InstanceResult, record: InstanceRecord | None = None) -> str | None:
    found = diagnose(result, record)
    return found.label if found else None


def _reworded(result: InstanceResult) -> InstanceResult:
    """The same verdict in other words: the report must not notice."""
    return replace(result, message=None if result.message is None else "reworded, 9x9 rows")


@pytest.mark.parametrize("index", range(len(CASES)), ids=[str(e) for _, e in CASES])
def test_each_category_from_the_spider1_scorer(scored: list[InstanceResult], index: int) -> None:
    assert _label(scored[index]) == CASES[index][1], scored[index]
    assert _label(_reworded(scored[index])) == CASES[index][1]
    assert (
        _label(result_from_json(json.loads(json.dumps(scored[index].to_json()))))
        == (CASES[index][1])
    )


def test_spider1_details_carry_the_shapes(scored: list[InstanceResult]) -> None:
    columns = scored[7].detail
    assert columns is not None and columns.difference is Difference.WRONG_COLUMNS
    assert (columns.prediction_shape, columns.gold_shapes) == (Shape(3, 1), (Shape(3, 2),))
    refused = scored[4].detail
    assert refused is not None and refused.refused_statement == "DELETE"
    assert scored[0].detail is None  # a pass has no reason
    assert "detail" not in scored[0].to_json()
    # the extra key only: every other key and value is what it was
    data = scored[2].to_json()
    assert data.pop("detail") == {"engine_error": {"kind": "exec_error", "name": "no such column"}}
    assert list(data) == ["instance_id", "score", "error", "message", "official_score",
                          "strict_score", "difficulty", "engine"]  # fmt: skip


def _make_gold(root: Path, golds: dict[str, str]) -> Path:
    return make_gold(root, {name: text.encode() for name, text in golds.items()})


def _table(rows: int, columns: int, offset: int = 0) -> str:
    header = ",".join(f"c{j}" for j in range(columns))
    body = "".join(
        ",".join(str(offset + i * columns + j) for j in range(columns)) + "\n" for i in range(rows)
    )
    return f"{header}\n{body}"


# instance -> (gold alternatives as (rows, columns), prediction (rows, columns), label)
SPIDER2 = {
    "local001": ([(8, 3), (4, 3)], (4, 3), "wrong_values"),
    "local002": ([(3, 5), (3, 4)], (1, 2), "wrong_columns"),
    "local003": ([(6, 1), (9, 1)], (7, 1), "wrong_rows"),
    "local004": ([(3, 2)], (0, 2), "empty_result"),
}


@pytest.mark.parametrize("scoring", ["official", "strict"])
def test_each_difference_from_the_spider2_scorer(tmp_path: Path, scoring: str) -> None:
    golds = {}
    for iid, (alternatives, _, _) in SPIDER2.items():
        for k, (rows, columns) in enumerate(alternatives):
            golds[f"{iid}_{'abc'[k]}.csv" if len(alternatives) > 1 else f"{iid}.csv"] = _table(
                rows, columns
            )
    gold = _make_gold(tmp_path, golds)
    pred = tmp_path / "pred"
    pred.mkdir()
    for iid, (_, (rows, columns), _) in SPIDER2.items():
        (pred / f"{iid}.csv").write_text(_table(rows, columns, offset=1000))
    results = evaluate_spider2(pred, benchmark="spider2-lite", gold_dir=gold, scoring=scoring)
    for r in results:
        alternatives, (rows, columns), label = SPIDER2[r.instance_id]
        assert (_label(r), _label(_reworded(r))) == (label, label), r
        assert r.detail is not None and r.detail.prediction_shape == Shape(rows, columns)
        assert r.detail.gold_shapes == tuple(Shape(*s) for s in alternatives)


def test_spider2_names_the_closest_gold_and_its_columns(tmp_path: Path) -> None:
    """Alternative b shares two of its three columns with the prediction, a only one of two."""
    gold = _make_gold(
        tmp_path,
        {
            "local001_a.csv": "x,y\n1,4\n2,5\n3,6\n",
            "local001_b.csv": "x,z,w\n1,7,0\n2,8,0\n3,9,1\n",
        },
    )
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "local001.csv").write_text("p,q,r\n1,7,5\n2,8,5\n3,9,5\n")
    (official,) = evaluate_spider2(pred, benchmark="spider2-lite", gold_dir=gold)
    assert _label(official) == "wrong_values"
    assert official.detail is not None
    assert official.detail.closest_gold == 1
    assert (official.detail.matched_columns, official.detail.missing_columns) == ((0, 1), (2,))
    again = result_from_json(json.loads(json.dumps(official.to_json())))
    assert again.detail == official.detail


def test_agentic_tables_keep_their_category_and_carry_shapes(tmp_path: Path) -> None:
    from querybench.evaluation.spider2.agentic.tables import table_match

    gold = tmp_path / "gold.csv"
    gold.write_text("a,b\n1,2\n3,4\n")
    pred = tmp_path / "pred.csv"
    pred.write_text("a,b\n")  # empty: officially a mismatch like any other
    verdict = table_match(pred, gold)
    result = InstanceResult("x", 0.0, verdict.error, verdict.message, detail=verdict.detail)
    assert _label(result) == _label(_reworded(result)) == "wrong_values"
    assert verdict.detail is not None and verdict.detail.difference is None
    assert (verdict.detail.prediction_shape, verdict.detail.gold_shapes) == (
        Shape(0, 2),
        (Shape(2, 2),),
    )


def test_each_difference_from_the_bird_scorer(tmp_path: Path) -> None:
    db = tmp_path / "dbs" / "shop" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE item (id INTEGER, name TEXT);"
        "INSERT INTO item VALUES (1, 'pen'), (2, 'ink'), (3, 'pad'), (4, 'pen');"
    )
    con.commit()
    con.close()
    cases = {  # question -> (gold, prediction, label)
        "0": ("SELECT name FROM item", "SELECT name FROM item WHERE id > 9", "empty_result"),
        "1": ("SELECT name FROM item", "SELECT name FROM item WHERE id < 3", "wrong_rows"),
        "2": ("SELECT name FROM item", "SELECT upper(name) FROM item", "wrong_values"),
        "3": ("SELECT name FROM item", "SELECT nme FROM item", "exec_error: no such column"),
        "4": ("SELECT name FROM item", "```python\nprint(1)\n```", "parse_error: no sql found"),
    }
    questions = [
        {"question_id": int(q), "db_id": "shop", "SQL": gold, "difficulty": "simple"}
        for q, (gold, _, _) in cases.items()
    ]
    (tmp_path / "dev.json").write_text(json.dumps(questions))
    predictions = {q: f"{pred}{BIRD_SEPARATOR}shop" for q, (_, pred, _) in cases.items()}
    predictions["4"] = cases["4"][1]  # no SQL in it, in no format
    (tmp_path / "pred.json").write_text(json.dumps(predictions))
    results = evaluate_bird(
        tmp_path / "pred.json", questions=tmp_path / "dev.json", db_dir=tmp_path / "dbs",
        timeout=10, workers=1, cache_dir=tmp_path / "cache",
    )  # fmt: skip
    for r in results:
        label = cases[r.instance_id][2]
        assert (_label(r), _label(_reworded(r))) == (label, label), r


@pytest.mark.parametrize(
    ("error", "label"),
    [
        (QueryTimeout("the query ran past its 60.0s timeout and was stopped"), "timeout"),
        (QueryRefused("refused: insert on singer (the database is read-only)"), "refused_write"),
        (
            EngineError('Binder Error: Referenced column "nme" not found'),
            "exec_error: binder error",
        ),
        (EngineError('Parser Error: syntax error at or near "SELEC"'), "parse_error: syntax error"),
        (EngineError('column "nme" does not exist'), "exec_error: undefined object"),
        (EngineError("unexpected ValueError: bad"), "exec_error: unexpected valueerror"),
        (EngineError("the query was interrupted"), "timeout"),
        (EngineError("attempt to write a readonly database"), "refused_write"),
    ],
)
def test_engine_errors_are_classified_where_they_are_made(error: EngineError, label: str) -> None:
    verdict = Verdict.engine_error(error)
    result = InstanceResult("x", 0.0, verdict.error, verdict.message, detail=verdict.detail)
    assert (_label(result), _label(_reworded(result))) == (label, label)
    assert verdict.error == error.code  # the code written to results stays the engine's


def test_failures_found_outside_an_engine() -> None:
    for code, message, label in [
        (ErrorCode.PARSE_ERROR, "empty SQL", "parse_error: empty sql"),
        (ErrorCode.EXEC_ERROR, "the reward worker failed: OSError: x", "exec_error: the reward "
         "worker failed"),
    ]:  # fmt: skip
        verdict = Verdict.statement_failed(code, message)
        result = InstanceResult("x", 0.0, verdict.error, "other words", detail=verdict.detail)
        assert _label(result) == label
    for code in ("missing_prediction", "gold_error"):
        assert _label(InstanceResult("x", 0.0, code, "anything", detail=VerdictDetail())) == code


def test_a_results_file_without_details_gets_the_code_only() -> None:
    """Written before details existed: the message is free text, so only the code counts."""
    legacy = [
        ('{"instance_id": "a", "score": 0.0, "error": "wrong_result", "message": "gold 1 rows x '
         '2 columns, prediction 0 rows x 2 columns"}', "wrong_result"),
        ('{"instance_id": "b", "score": 0.0, "error": "exec_error", "message": "no such table: t"}',
         "exec_error"),
        ('{"instance_id": "c", "score": 0.0, "error": "timeout", "message": "x"}', "timeout"),
        ('{"instance_id": "d", "score": 1.0}', None),
    ]  # fmt: skip
    for line, label in legacy:
        result = result_from_json(json.loads(line))
        assert result.detail is None and _label(result) == label


@pytest.mark.parametrize(
    "detail",
    [[], {"difference": "nope"}, {"gold_shapes": [[1]]}, {"engine_error": {"kind": "x"}}],
)
def test_a_malformed_detail_is_a_data_error(detail: object) -> None:
    line = {"instance_id": "a", "score": 0.0, "error": "wrong_result", "detail": detail}
    with pytest.raises(DataError, match="verdict detail"):
        result_from_json(line)


def _record(iid: str, error: str, message: str) -> InstanceRecord:
    return InstanceRecord(iid, RecordStatus.ERROR, error=ErrorCode(error), message=message)


def test_model_errors_come_from_the_run_record() -> None:
    records = {
        "a": _record("a", "model_error", "HTTP 503 after 5 retries"),
        "b": _record("b", "budget_exhausted", "request budget of 10 spent"),
    }
    # the scorer saw no prediction; the run folder's results keep the record's code
    unscored = [InstanceResult(i, 0.0, "missing_prediction", "no prediction line") for i in "ab"]
    results = with_record_errors(unscored, records)
    assert diagnose(results[0], records["a"]) == diagnose(unscored[0], records["a"])
    assert _label(results[0], records["a"]) == "model_error"
    assert _label(unscored[1], records["b"]) == "model_error: budget_exhausted"
    # a results file without records still names the code it carries
    assert _label(results[0]) == "model_error"


def test_a_passed_instance_has_no_diagnosis() -> None:
    assert diagnose(InstanceResult("x", 1.0)) is None


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
