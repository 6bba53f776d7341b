"""The Spider 2.0 agentic / DBT dispatcher, and the real DBT eval config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from querybench.errors import DataError, ErrorCode
from querybench.evaluation.spider2.agentic.score import (
    MATCHERS,
    AgenticCheck,
    check_parameters,
    parse_evaluation,
    score_agentic,
)
from tests.conftest import require_data

# Entries in the shapes of the official configs (DBT and the older agentic suite).
ENTRIES: list[dict[str, Any]] = [
    {"func": "duckdb_match", "parameters": {"gold": "playbook.duckdb", "condition_tabs": ["a"],
                                            "condition_cols": [[15, 16]], "ignore_orders": [True]}},
    {"func": "table_match", "parameters": {"gold": "result.csv", "condition_cols": [0, 3]}},
    {"func": "table_match", "parameters": {"gold": ["a.csv", "b.csv"], "condition_cols": [[], []],
                                           "ignore_order": [True, True]}},
    {"func": "tables_match", "parameters": {"gold": ["a.csv", "b.csv"], "condition_cols": [[], []],
                                            "ignore_orders": [True, True]}},
    {"func": "number_match", "parameters": {"gold": ["40231", "5821972"], "conj": "and"}},
    {"func": "number_match", "parameters": {"gold": "10.79661512", "percentage": True}},
    {"func": "number_match", "parameters": {"gold": 1106}},
    {"func": "string_match", "parameters": {"gold": "Gordon Linoff", "exclude": ["Eric Lamb"]}},
    {"func": "string_match", "parameters": {"gold": ["MO", "VA"], "conj": "and"}},
]  # fmt: skip


@pytest.mark.parametrize("entry", ENTRIES)
def test_official_entry_shapes_parse(entry: dict[str, Any]) -> None:
    (check,) = parse_evaluation(entry)
    assert check == AgenticCheck(entry["func"], entry["parameters"])


def test_a_list_of_entries_parses_in_order() -> None:
    checks = parse_evaluation(ENTRIES)
    assert [c.func for c in checks] == [e["func"] for e in ENTRIES]


@pytest.mark.parametrize(
    "evaluation",
    [
        [],
        {"func": "sql_match", "parameters": {"gold": "x"}},
        {"func": "duckdb_match", "parameters": {}},
        {"func": "duckdb_match", "parameters": {"gold": "x", "condition_tab": ["a"]}},
        {"func": "string_match", "parameters": {"gold": "x", "tolerance": 1}},
        {"func": "string_match", "parameters": ["x"]},
        {"parameters": {"gold": "x"}},
    ],
)
def test_bad_entries_are_data_errors(evaluation: Any) -> None:
    with pytest.raises(DataError):
        parse_evaluation(evaluation)


def test_real_dbt_config_is_understood() -> None:
    config = require_data(
        "spider2", "spider2-dbt", "evaluation_suite", "gold", "spider2_eval.jsonl"
    )
    lines = [json.loads(line) for line in config.read_text().splitlines() if line.strip()]
    assert lines
    for line in lines:
        for check in parse_evaluation(line["evaluation"]):
            assert check.func in MATCHERS, line["instance_id"]
            check_parameters(check.func, check.parameters)


def test_text_answers(tmp_path: Path) -> None:
    params = {"gold": "357"}
    assert score_agentic("string_match", "It is 357.", params, strict=False).passed
    assert score_agentic("string_match", "It is 1357.", params, strict=False).passed
    assert not score_agentic("string_match", "It is 1357.", params, strict=True).passed
    # text gold values are never taken as file names
    assert score_agentic("string_match", "357", params, strict=True, gold_dir=tmp_path).passed
    assert score_agentic("number_match", "9 of 10", {"gold": 9}, strict=False).passed
    assert not score_agentic("number_match", "9 of 10", {"gold": 9}, strict=True).passed


def test_duckdb_answers_resolve_gold_in_gold_dir(tmp_path: Path) -> None:
    gold_dir = tmp_path / "gold" / "mrr002"
    gold_dir.mkdir(parents=True)
    for path in (gold_dir / "mrr.duckdb", tmp_path / "result.duckdb"):
        con = duckdb.connect(str(path))
        con.execute("create table mrr(k varchar, v int); insert into mrr values ('a', 1), ('b', 2)")
        con.close()
    params = {"gold": "mrr.duckdb", "condition_tabs": ["mrr"], "ignore_orders": [True]}
    for strict in (False, True):
        verdict = score_agentic(
            "duckdb_match", tmp_path / "result.duckdb", params, strict=strict, gold_dir=gold_dir
        )
        assert verdict.passed, verdict
    assert params["gold"] == "mrr.duckdb"  # the caller's parameters are left alone
    missing = score_agentic("duckdb_match", tmp_path / "result.duckdb", params, strict=False)
    assert missing.error == "gold_error"


def test_csv_answers(tmp_path: Path) -> None:
    (tmp_path / "result.csv").write_text("x,y\n2,a\n1,b\n")
    (tmp_path / "gold.csv").write_text("a,b\n1,a\n2,b\n")
    params = {"gold": "gold.csv", "ignore_order": True}
    result = str(tmp_path / "result.csv")
    assert score_agentic("table_match", result, params, strict=False, gold_dir=tmp_path).passed
    strict = score_agentic("table_match", result, params, strict=True, gold_dir=tmp_path)
    assert strict.error == ErrorCode.WRONG_RESULT
    files = {"gold": ["gold.csv"], "ignore_orders": [True]}
    assert score_agentic("tables_match", [result], files, strict=False, gold_dir=tmp_path).passed


@pytest.mark.parametrize(
    ("func", "prediction", "params", "error"),
    [
        ("sql_match", "x", {"gold": "x"}, "gold_error"),
        ("string_match", "x", {"gold": "x", "bogus": 1}, "gold_error"),
        ("string_match", "x", {}, "gold_error"),
        ("string_match", None, {"gold": "x"}, "missing_prediction"),
        ("string_match", ["x"], {"gold": "x"}, "bad_prediction_file"),
        ("number_match", Path("x"), {"gold": "1"}, "bad_prediction_file"),
        ("duckdb_match", ["a.duckdb"], {"gold": "g.duckdb"}, "bad_prediction_file"),
        ("tables_match", "a.csv", {"gold": ["g.csv"]}, "bad_prediction_file"),
        ("duckdb_match", "nowhere.duckdb", {"gold": "nowhere.duckdb"}, "gold_error"),
    ],
)
def test_dispatch_errors(func: str, prediction: Any, params: dict[str, Any], error: str) -> None:
    for strict in (False, True):
        verdict = score_agentic(func, prediction, params, strict=strict)
        assert (verdict.score, verdict.error) == (0.0, error)
