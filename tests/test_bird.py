from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from querybench.engines.base import Result
from querybench.errors import DataError, EngineError, QueryTimeout
from querybench.evaluation.bird.evaluate import (
    BIRD_SEPARATOR,
    BirdPrediction,
    bird_metrics,
    bird_result_match,
    bird_verdict,
    evaluate_bird,
    is_trivial_result,
    parse_bird_prediction,
)
from querybench.evaluation.record import InstanceResult
from tests.conftest import require_data

Rows = list[tuple[Any, ...]]


@pytest.fixture(autouse=True)
def _private_result_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gold results are cached by default; keep this test's cache out of the home folder."""
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "default-cache"))


FENCE = "```"

# (gold rows, predicted rows, expected match) under set semantics
MATCH_CASES: list[tuple[Rows, Rows, bool]] = [
    ([], [], True),
    ([(1,)], [], False),
    ([(1, "a"), (2, "b")], [(2, "b"), (1, "a")], True),  # row order ignored
    ([(1,), (1,), (2,)], [(2,), (1,)], True),  # duplicates ignored
    ([(1, "a")], [("a", 1)], False),  # column order kept
    ([(1, 2)], [(1,)], False),
    ([(1,)], [(1.0,)], True),  # Python equality of the driver's values
    ([(None,)], [(None,)], True),
    ([("1",)], [(1,)], False),
]


@pytest.mark.parametrize(("gold", "pred", "expected"), MATCH_CASES)
def test_bird_result_match(gold: Rows, pred: Rows, expected: bool) -> None:
    assert bird_result_match(gold, pred) is expected


@pytest.mark.parametrize(
    ("rows", "trivial"),
    [
        ([], True),
        ([(0,)], True),
        ([(1,)], True),
        ([(None,)], True),
        ([(0.0,)], True),
        ([(1.0,)], True),
        ([(2,)], False),
        ([("0",)], False),
        ([(0,), (1,)], False),
        ([(0,), (0,), (0.0,)], True),  # a set of one 0, whatever the row count
        ([(None,), (None,)], True),
        ([(1,), (1,), (2,)], False),
        ([(0, 0)], False),
        ([(None, None)], False),
    ],
)
def test_is_trivial_result(rows: Rows, trivial: bool) -> None:
    assert is_trivial_result(rows) is trivial


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (f"SELECT 1{BIRD_SEPARATOR}shop", BirdPrediction("SELECT 1", "shop")),
        (f"{FENCE}sql\nSELECT 2\n{FENCE}{BIRD_SEPARATOR}shop", BirdPrediction("SELECT 2", "shop")),
        ("SELECT 3", BirdPrediction("SELECT 3")),
        (f"The answer:\n{FENCE}sql\nSELECT 4\n{FENCE}", BirdPrediction("SELECT 4")),
        (f"I cannot answer.{BIRD_SEPARATOR}shop", BirdPrediction("I cannot answer.", "shop")),
        (f"{FENCE}python\nx\n{FENCE}", BirdPrediction(None)),
        ("", BirdPrediction(None)),
        (0, BirdPrediction(None)),
    ],
)
def test_parse_bird_prediction(value: object, expected: BirdPrediction) -> None:
    assert parse_bird_prediction(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        None,
        3,
        ["SELECT 1"],
        {"sql": "x"},
        f"a{BIRD_SEPARATOR}b{BIRD_SEPARATOR}c",
        f"a{BIRD_SEPARATOR} ",
    ],
)
def test_parse_bird_prediction_rejects(value: object) -> None:
    with pytest.raises(ValueError):
        parse_bird_prediction(value)


def _result(rows: Rows) -> Result:
    return Result(columns=("c",) * (len(rows[0]) if rows else 1), rows=rows)


def test_verdicts_and_metrics() -> None:
    gold = _result([(3,), (4,)])
    assert bird_verdict(gold, _result([(4,), (3,), (3,)])).passed
    wrong = bird_verdict(gold, _result([(3,)]))
    assert (wrong.score, wrong.error) == (0.0, "wrong_result")
    assert bird_metrics(gold, _result([(3,)])) == {"error": 0.0, "trivial": 0.0, "gold_error": 0.0}
    assert bird_verdict(gold, None).error == "parse_error"
    assert bird_metrics(gold, None)["error"] == 1.0
    assert bird_verdict(gold, QueryTimeout("1s")).error == "timeout"
    assert bird_metrics(gold, QueryTimeout("1s"))["error"] == 1.0
    failed_gold = EngineError("no such column")
    assert bird_verdict(failed_gold, gold).error == "gold_error"
    assert bird_metrics(failed_gold, gold) == {"error": 0.0, "trivial": 0.0, "gold_error": 1.0}
    assert bird_metrics(_result([(0,)]), _result([(0,)]))["trivial"] == 1.0


def test_trivial_describes_the_answer_not_the_gold() -> None:
    gold = _result([(3,), (4,)])
    assert bird_metrics(gold, _result([(1,)]))["trivial"] == 1.0  # a lucky-looking answer
    assert bird_metrics(gold, _result([]))["trivial"] == 1.0
    assert bird_metrics(_result([(0,)]), _result([(3,), (4,)]))["trivial"] == 0.0
    assert bird_metrics(gold, QueryTimeout("1s"))["trivial"] == 0.0  # did not run: an error


# --- evaluate_bird on a tiny database made here --------------------------------------------


def _make_db(path: Path) -> None:
    path.parent.mkdir(parents=True)
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, price REAL, shop TEXT);
        INSERT INTO item VALUES (1, 'pen', 1.5, 'a'), (2, 'ink', 4.0, 'a'),
                                (3, 'pad', 2.0, 'b'), (4, 'pen', 1.5, 'b');
        """
    )
    con.commit()
    con.close()


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _official(sql: str, db_id: str = "shop") -> str:
    return f"{sql}{BIRD_SEPARATOR}{db_id}"


# question_id -> (gold SQL, prediction entry or None for absent, expected score, error, metrics)
TINY: dict[int, tuple[str, object, float, str | None, tuple[float, float, float]]] = {
    0: (
        "SELECT name FROM item WHERE shop = 'a'",
        _official("SELECT name FROM item WHERE shop = 'a' ORDER BY name DESC"),
        1.0,
        None,
        (0, 0, 0),
    ),
    # duplicates and row order do not matter
    1: ("SELECT DISTINCT name FROM item", _official("SELECT name FROM item"), 1.0, None, (0, 0, 0)),
    # column order does
    2: (
        "SELECT id, name FROM item",
        _official("SELECT name, id FROM item"),
        0.0,
        "wrong_result",
        (0, 0, 0),
    ),
    # a fenced block inside the official format, and a bare fenced answer
    3: (
        "SELECT max(price) FROM item",
        _official(f"{FENCE}sql\nSELECT max(price) FROM item\n{FENCE}"),
        1.0,
        None,
        (0, 0, 0),
    ),
    4: (
        "SELECT count(*) FROM item",
        f"Count them:\n{FENCE}sql\nSELECT count(id) FROM item;\n{FENCE}",
        1.0,
        None,
        (0, 0, 0),
    ),
    5: ("SELECT name FROM item", _official("SELEC name FROM item"), 0.0, "exec_error", (1, 0, 0)),
    6: ("SELECT nope FROM item", _official("SELECT name FROM item"), 0.0, "gold_error", (0, 0, 1)),
    # trivial gold results: empty, a single 0 and a single NULL
    7: (
        "SELECT name FROM item WHERE price > 100",
        _official("SELECT name FROM item WHERE id > 99"),
        1.0,
        None,
        (0, 1, 0),
    ),
    8: ("SELECT count(*) FROM item WHERE shop = 'z'", _official("SELECT 0"), 1.0, None, (0, 1, 0)),
    9: (
        "SELECT max(price) FROM item WHERE shop = 'z'",
        _official("SELECT 1"),
        0.0,
        "wrong_result",
        (0, 1, 0),
    ),
    10: ("SELECT name FROM item", None, 0.0, "missing_prediction", (1, 0, 0)),
    11: ("SELECT name FROM item", 0, 0.0, "missing_prediction", (1, 0, 0)),
    12: ("SELECT name FROM item", ["SELECT name FROM item"], 0.0, "bad_prediction_file", (1, 0, 0)),
    13: (
        "SELECT name FROM item",
        _official("SELECT name FROM item", "other"),
        0.0,
        "bad_prediction_file",
        (1, 0, 0),
    ),
    14: (
        "SELECT name FROM item",
        f"{FENCE}python\nprint('pen')\n{FENCE}",
        0.0,
        "parse_error",
        (1, 0, 0),
    ),
    15: ("SELECT name FROM item", _official("DELETE FROM item"), 0.0, "refused_write", (1, 0, 0)),
}


def _tiny_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    db_dir = tmp_path / "dbs"
    _make_db(db_dir / "shop" / "shop.sqlite")
    difficulties = ["simple", "moderate", "challenging"]
    questions = [
        {
            "question_id": qid,
            "db_id": "shop",
            "question": "?",
            "SQL": gold,
            "difficulty": difficulties[qid % 3],
        }
        for qid, (gold, *_rest) in TINY.items()
    ]
    questions.append(
        {"question_id": 99, "db_id": "gone", "SQL": "SELECT 1", "difficulty": "simple"}
    )
    predictions = {str(qid): pred for qid, (_, pred, *_r) in TINY.items() if pred is not None}
    predictions["99"] = _official("SELECT 1", "gone")
    return (
        _write(tmp_path / "dev.json", questions),
        _write(tmp_path / "predict_dev.json", predictions),
        db_dir,
    )


def test_evaluate_bird_tiny(tmp_path: Path) -> None:
    questions, predictions, db_dir = _tiny_files(tmp_path)
    results = evaluate_bird(predictions, questions=questions, db_dir=db_dir, timeout=10, workers=3)
    by_id = {r.instance_id: r for r in results}
    assert [r.instance_id for r in results] == [*map(str, TINY), "99"]
    for qid, (_, _, score, error, (err, trivial, gold_error)) in TINY.items():
        r = by_id[str(qid)]
        assert (r.score, r.error) == (score, error), (qid, r)
        assert r.metrics == {"error": err, "trivial": trivial, "gold_error": gold_error}, (qid, r)
        assert r.difficulty == ["simple", "moderate", "challenging"][qid % 3]
        assert (r.message is None) == (error is None)
    assert by_id["13"].message is not None and "other" in by_id["13"].message
    missing_db = by_id["99"]
    assert (missing_db.score, missing_db.error) == (0.0, "engine_unavailable")
    assert "gone" in (missing_db.message or "")
    assert missing_db.metrics == {"error": 0.0, "trivial": 0.0, "gold_error": 1.0}


def test_evaluate_bird_timeout(tmp_path: Path) -> None:
    db_dir = tmp_path / "dbs"
    _make_db(db_dir / "shop" / "shop.sqlite")
    slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    q = _write(tmp_path / "q.json", [{"question_id": 0, "db_id": "shop", "SQL": "SELECT 1"}])
    p = _write(tmp_path / "p.json", {"0": _official(slow)})
    (result,) = evaluate_bird(p, questions=q, db_dir=db_dir, timeout=0.5, workers=1)
    assert (result.score, result.error, result.metrics["error"]) == (0.0, "timeout", 1.0)


def test_evaluate_bird_single_call_bombs_cost_their_timeout(tmp_path: Path) -> None:
    # One printf call never reaches SQLite's progress handler: it used to run ~15 s each and
    # score wrong_result. Whatever stops it, the verdict is a timeout, at about the timeout.
    db_dir = tmp_path / "dbs"
    _make_db(db_dir / "shop" / "shop.sqlite")
    bomb = "SELECT printf('%.*c', 2147483647, 'x')"
    q = _write(
        tmp_path / "q.json",
        [{"question_id": i, "db_id": "shop", "SQL": "SELECT 1"} for i in range(3)],
    )
    p = _write(tmp_path / "p.json", {str(i): _official(bomb) for i in range(3)})
    start = time.monotonic()
    results = evaluate_bird(
        p, questions=q, db_dir=db_dir, timeout=1.0, workers=3, cache_dir=tmp_path / "cache"
    )
    assert [(r.score, r.error) for r in results] == [(0.0, "timeout")] * 3
    assert time.monotonic() - start < 1.0 + 10


def test_unreadable_inputs(tmp_path: Path) -> None:
    questions, predictions, db_dir = _tiny_files(tmp_path)
    with pytest.raises(DataError, match="cannot read the predictions file"):
        evaluate_bird(tmp_path / "absent.json", questions=questions, db_dir=db_dir)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON"):
        evaluate_bird(bad, questions=questions, db_dir=db_dir)
    with pytest.raises(DataError, match="JSON object"):
        evaluate_bird(
            _write(tmp_path / "list.json", ["SELECT 1"]), questions=questions, db_dir=db_dir
        )
    with pytest.raises(DataError, match="no 'SQL' field"):
        evaluate_bird(
            predictions, questions=_write(tmp_path / "q.json", [{"db_id": "shop"}]), db_dir=db_dir
        )


# --- BIRD-format files built from the Spider 1.0 databases (same folder layout) -------------


def _spider_as_bird(tmp_path: Path, wrong: dict[int, str]) -> tuple[Path, Path, Path]:
    root = require_data("spider1")
    entries = json.loads((root / "dev_subset_available_dbs.json").read_text(encoding="utf-8"))
    levels = ["simple", "moderate", "challenging"]
    questions = [
        {
            "question_id": i,
            "db_id": e["db_id"],
            "question": e["question"],
            "evidence": "",
            "SQL": e["query"],
            "difficulty": levels[i % 3],
        }
        for i, e in enumerate(entries)
    ]
    predictions = {
        str(i): _official(wrong.get(i, e["query"]), e["db_id"]) for i, e in enumerate(entries)
    }
    return (
        _write(tmp_path / "dev.json", questions),
        _write(tmp_path / "predict_dev.json", predictions),
        root,
    )


def _scores(results: list[InstanceResult]) -> float:
    return sum(r.score for r in results)


def test_spider_databases_gold_against_gold(tmp_path: Path) -> None:
    questions, predictions, root = _spider_as_bird(tmp_path, wrong={})
    results = evaluate_bird(predictions, questions=questions, db_dir=root, timeout=30, workers=4)
    assert len(results) == 972
    assert _scores(results) == 972
    assert not any(r.metrics["gold_error"] or r.metrics["error"] for r in results)
    # rows that are, as a set, none or a single 0/1/NULL: the 53 the MANIFEST counts as empty,
    # 29 single cells, and twice `other_details ... like 'korea'` (two rows, both NULL)
    assert sum(r.metrics["trivial"] for r in results) == 84


def test_spider_databases_wrong_predictions(tmp_path: Path) -> None:
    entries = json.loads(
        (require_data("spider1") / "dev_subset_available_dbs.json").read_text(encoding="utf-8")
    )
    assert entries[0]["query"] == "SELECT count(*) FROM singer"
    wrong = {
        0: "SELECT count(*) FROM stadium",  # another number
        1: "SELECT count(*) FROM singr",  # no such table
        2: entries[2]["query"].replace("ORDER BY age DESC", "ORDER BY age ASC"),  # same set
    }
    assert wrong[2] != entries[2]["query"]
    questions, predictions, root = _spider_as_bird(tmp_path, wrong)
    results = evaluate_bird(predictions, questions=questions, db_dir=root, timeout=30, workers=4)
    assert [(r.score, r.error) for r in results[:3]] == [
        (0.0, "wrong_result"),
        (0.0, "exec_error"),
        (1.0, None),  # BIRD ignores row order, even under ORDER BY
    ]
    assert _scores(results) == 972 - 2
