"""table_match / tables_match / duckdb_match on files built here, official and strict."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from querybench.errors import ErrorCode
from querybench.evaluation.database_answer import DatabaseReader
from querybench.evaluation.spider2.agentic.tables import (
    duckdb_match,
    strict_duckdb_match,
    strict_table_match,
    strict_tables_match,
    table_match,
    tables_match,
)
from querybench.evaluation.verdict import Verdict

MISSING = None  # no file at all
GARBAGE = "this is not a table file\x00\x01"


def outcome(verdict: Verdict) -> int | str:
    """1 / 0 for a plain verdict, the error code for anything but `wrong_result`."""
    if verdict.error not in (None, ErrorCode.WRONG_RESULT):
        return str(verdict.error)
    return int(verdict.score)


def write(path: Path, text: str | None) -> Path:
    if text is not None:
        path.write_text(text)
    return path


# ----------------------------------------------------------------------------- table_match

# pred CSV, gold CSV (or list of them), condition_cols, ignore_order, official, strict
TABLE_CASES: list[tuple[str | None, str | list[str | None] | None, Any, Any, Any, Any]] = [
    ("x,y\n1,a\n2,b\n", "a,b\n1,a\n2,b\n", [], False, 1, 1),
    ("x,y\n2,b\n1,a\n", "a,b\n1,a\n2,b\n", [], True, 1, 1),
    ("x,y\n2,a\n1,b\n", "a,b\n1,a\n2,b\n", [], True, 1, 0),
    ("x\n1\n2\n", "a,b\n1,a\n2,b\n", [0], False, 1, 1),
    ("x\n1\n2\n", "a,b\n1,a\n2,b\n", [0, 0], False, 1, 1),
    ("x\n1\n2\n", "a,b\n1,a\n2,b\n", [1], False, 0, 0),
    ("x\n1\n2\n", "a,b\n1,a\n2,b\n", [5], False, "gold_error", "gold_error"),
    ("x\n1.004\n", "a\n1\n", [], False, 1, 1),
    # several gold CSVs: any one may match
    ("x\n1\n2\n", ["a\n7\n", "a\n1\n2\n"], [], False, 1, 1),
    ("x\n1\n2\n", ["a\n7\n", "a\n1\n2\n"], [[], []], False, 1, 1),
    ("x\n1\n2\n", ["a\n7\n", "a\n1\n2\n"], [[0], [0]], False, 1, 1),
    ("x\n1\n2\n", ["a\n7\n", "a\n9\n"], [], False, 0, 0),
    # a list ignore_order is not split per gold: [false, false] is truthy
    ("x\n2\n1\n", ["a\n7\n", "a\n1\n2\n"], [], [False, False], 1, 0),
    ("x\n2\n1\n", ["a\n7\n", "a\n1\n2\n"], [], [False, True], 1, 1),
    # a flat condition_cols gives each gold one int: its cells become "columns"
    ("x,y\n1,5\n", ["a,b\n1,5\n", "a,b\n1,5\n"], [0, 1], False, 0, "gold_error"),
    ("x\n1\n", ["a\n1\n", "a\n1\n"], [[0]], False, 1, "gold_error"),
    # unreadable files
    (MISSING, "a\n1\n", [], False, "bad_prediction_file", "bad_prediction_file"),
    ("", "a\n1\n", [], False, "bad_prediction_file", "bad_prediction_file"),
    ("x\n1\n", MISSING, [], False, "gold_error", "gold_error"),
    ("x\n1\n", ["a\n1\n", None], [], False, "gold_error", "gold_error"),
]


@pytest.mark.parametrize(
    ("pred", "gold", "cols", "ignore_order", "official", "strict"), TABLE_CASES
)
def test_table_match(
    tmp_path: Path,
    pred: str | None,
    gold: str | list[str | None] | None,
    cols: Any,
    ignore_order: Any,
    official: Any,
    strict: Any,
) -> None:
    result = write(tmp_path / "result.csv", pred)
    golds: Path | list[Path]
    if isinstance(gold, list):
        golds = [write(tmp_path / f"gold{i}.csv", text) for i, text in enumerate(gold)]
    else:
        golds = write(tmp_path / "gold.csv", gold)
    assert outcome(table_match(result, golds, cols, ignore_order)) == official
    assert outcome(strict_table_match(result, golds, cols, ignore_order)) == strict


def test_table_match_reads_csv_like_pandas(tmp_path: Path) -> None:
    # "NA" is missing to pandas, so it equals an empty cell.
    result = write(tmp_path / "result.csv", "x,y\nNA,1\n")
    gold = write(tmp_path / "gold.csv", "a,b\n,1\n")
    assert table_match(result, gold).passed
    assert strict_table_match(result, str(gold)).passed


# ----------------------------------------------------------------------------- tables_match

# pred CSVs, gold CSVs, condition_cols, ignore_orders, official, strict
TABLES_CASES: list[tuple[list[str | None], list[str], Any, Any, Any, Any]] = [
    (["x\n1\n", "y\n2\n"], ["a\n1\n", "b\n2\n"], None, None, 1, 1),
    (["y\n2\n", "x\n1\n"], ["a\n1\n", "b\n2\n"], None, None, 0, 0),
    (["x,y\n2,a\n1,b\n"], ["a,b\n1,a\n2,b\n"], [[]], [True], 1, 0),
    (["x\n1\n"], ["a\n1\n", "b\n2\n"], None, None, 0, 0),
    (["x\n1\n"], ["a\n1\n"], None, [True, True], "gold_error", "gold_error"),
    ([None], ["a\n1\n"], None, None, "bad_prediction_file", "bad_prediction_file"),
]


@pytest.mark.parametrize(("preds", "golds", "cols", "orders", "official", "strict"), TABLES_CASES)
def test_tables_match(
    tmp_path: Path,
    preds: list[str | None],
    golds: list[str],
    cols: Any,
    orders: Any,
    official: Any,
    strict: Any,
) -> None:
    results = [write(tmp_path / f"result{i}.csv", text) for i, text in enumerate(preds)]
    gold_paths = [write(tmp_path / f"gold{i}.csv", text) for i, text in enumerate(golds)]
    assert outcome(tables_match(results, gold_paths, cols, orders)) == official
    assert outcome(strict_tables_match(results, gold_paths, cols, orders)) == strict


# ----------------------------------------------------------------------------- duckdb_match

GOLD_SQL = """
create table mrr(id int, name varchar, amount double);
insert into mrr values (1, 'a', 10.0), (2, 'b', 20.0), (3, NULL, NULL);
create table dims(k varchar, v int);
insert into dims values ('x', 1), ('y', 2);
"""
SAME = GOLD_SQL
SCRAMBLED = """
create table mrr(id int, name varchar, amount double);
insert into mrr values (3, NULL, 10.0), (1, 'a', NULL), (2, 'b', 20.0);
create table dims(v int, k varchar, extra int);
insert into dims values (2, 'y', 0), (1, 'x', 0);
"""
REORDERED = """
create table MRR(amount double, id bigint, name varchar);
insert into MRR values (NULL, 3, NULL), (20.004, 2, 'b'), (10.0, 1, 'a');
create table dims(k varchar, v int);
insert into dims values ('y', 2), ('x', 1);
"""
LISTS = "create table t(id int, tags int[]); insert into t values (1, [1, 2]), (2, [3]);"
NANOS = """
create table t(ts TIMESTAMP_NS, n int);
insert into t values ('2020-01-01 10:00:00', 1), ('2020-01-02 10:00:00', 2);
"""
RESERVED = 'create table "order"(id int); insert into "order" values (1), (2);'
EMPTY = "create table t(id int);"
NONE: dict[str, Any] = {}
BOTH = {"condition_tabs": ["mrr", "dims"], "ignore_orders": [True, True]}

# gold SQL, result SQL (or MISSING / GARBAGE), parameters, official, strict
DUCKDB_CASES: list[tuple[str, str | None, dict[str, Any], Any, Any]] = [
    (GOLD_SQL, SAME, NONE, 1, 1),
    (GOLD_SQL, SAME, BOTH, 1, 1),
    (GOLD_SQL, REORDERED, NONE, 0, 0),
    (GOLD_SQL, REORDERED, BOTH, 1, 1),
    (GOLD_SQL, REORDERED, {"condition_tabs": ["mrr"], "ignore_orders": [False]}, 0, 0),
    (GOLD_SQL, SCRAMBLED, BOTH, 1, 0),
    (GOLD_SQL, SCRAMBLED, {**BOTH, "condition_cols": [[0, 1], [0, 1]]}, 1, 1),
    (GOLD_SQL, SCRAMBLED, {**BOTH, "condition_cols": [[0, 2], [0, 1]]}, 1, 0),
    (GOLD_SQL, "create table mrr(id int);", {"condition_tabs": ["dims"]}, 0, 0),
    (GOLD_SQL, SAME, {"condition_tabs": ["nope"]}, "gold_error", "gold_error"),
    (GOLD_SQL, SAME, {"condition_tabs": ["mrr"], "ignore_orders": []}, "gold_error", "gold_error"),
    (GOLD_SQL, SAME, {"condition_tabs": ["mrr"], "condition_cols": [[9]]}, *["gold_error"] * 2),
    (GOLD_SQL, MISSING, NONE, "bad_prediction_file", "bad_prediction_file"),
    (GOLD_SQL, GARBAGE, NONE, "bad_prediction_file", "bad_prediction_file"),
    # no tables to compare: officially a pass, even without a result file
    (GOLD_SQL, MISSING, {"condition_tabs": []}, 1, "gold_error"),
    (EMPTY, EMPTY, {"condition_tabs": []}, 1, "gold_error"),
    ("select 1;", SAME, NONE, 1, "gold_error"),
    # cells and names the official cannot read
    (LISTS, LISTS, NONE, 0, 1),
    (NANOS, NANOS, {"condition_cols": [[0]]}, 0, 1),
    (NANOS, NANOS, NONE, 1, 1),
    (RESERVED, RESERVED, NONE, "gold_error", 1),
    (EMPTY, EMPTY, NONE, 1, 1),
]


@pytest.fixture(scope="module")
def reader() -> Iterator[DatabaseReader]:
    """One reader for the module: its child imports pandas once, not per match."""
    with DatabaseReader() as shared:
        yield shared


def build(path: Path, sql: str | None) -> Path:
    if sql == GARBAGE:
        path.write_text(sql)
    elif sql is not None:
        con = duckdb.connect(str(path))
        con.execute(sql)
        con.close()
    return path


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


@pytest.mark.parametrize(("gold_sql", "pred_sql", "params", "official", "strict"), DUCKDB_CASES)
def test_duckdb_match(
    tmp_path: Path,
    gold_sql: str,
    pred_sql: str | None,
    params: dict[str, Any],
    official: Any,
    strict: Any,
    reader: DatabaseReader,
) -> None:
    gold = build(tmp_path / "gold.duckdb", gold_sql)
    result = build(tmp_path / "result.duckdb", pred_sql)
    before = {path: digest(path) for path in (gold, result)}
    assert outcome(duckdb_match(result, gold, **params, reader=reader)) == official
    assert outcome(strict_duckdb_match(result, gold, **params, reader=reader)) == strict
    assert {path: digest(path) for path in (gold, result)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (gold, result) if before[p] is not None
    )


def test_duckdb_match_same_file_for_both(tmp_path: Path, reader: DatabaseReader) -> None:
    gold = build(tmp_path / "gold.duckdb", GOLD_SQL)
    assert duckdb_match(gold, gold, reader=reader).passed
    assert strict_duckdb_match(str(gold), str(gold), reader=reader).passed


def test_duckdb_match_reason(tmp_path: Path, reader: DatabaseReader) -> None:
    gold = build(tmp_path / "gold.duckdb", GOLD_SQL)
    result = build(tmp_path / "result.duckdb", "create table mrr(id int);")
    verdict = duckdb_match(result, gold, condition_tabs=["dims"], reader=reader)
    assert verdict.error == ErrorCode.WRONG_RESULT
    assert verdict.message is not None and verdict.message.startswith("cannot read table 'dims'")
