"""One predicted table against one gold table, official and strict: one case per line."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from querybench.evaluation.spider2.agentic.compare import (
    AGENTIC_TOLERANCE,
    has_injective_assignment,
    official_compare,
    strict_columns,
    strict_compare,
)

NaN = np.nan

# gold, pred, condition_cols, ignore_order, official, strict
CASES: list[tuple[dict[str, list[Any]], dict[str, list[Any]], list[int], bool, int, int]] = [
    ({"a": [1, 2]}, {"x": [1, 2]}, [], False, 1, 1),  # names are ignored
    ({"a": [1, 2]}, {"x": [0, 0], "y": [1, 2]}, [], False, 1, 1),  # extra columns are fine
    ({"a": [1, 2]}, {"a": [1, 2, 3]}, [], True, 0, 0),
    ({"a": [1, 2]}, {"a": [2, 1]}, [], False, 0, 0),
    ({"a": [1, 2]}, {"a": [2, 1]}, [], True, 1, 1),
    ({"a": [1.0]}, {"a": [1.009]}, [], False, 1, 1),
    ({"a": [1.0]}, {"a": [1.02]}, [], False, 0, 0),
    ({"a": [1, 2], "b": [3, 4]}, {"x": [1, 2]}, [0], False, 1, 1),
    ({"a": [1, 2], "b": [3, 4]}, {"x": [3, 4], "y": [1, 2]}, [1, 0], False, 1, 1),
    # missing cells: equal to missing only (no missing-means-0 here)
    ({"a": [None, 1]}, {"a": [NaN, 1]}, [], False, 1, 1),
    ({"a": [None, 1.0]}, {"a": [0.0, 1.0]}, [], False, 0, 0),
    ({"a": ["x", None]}, {"a": ["x", NaN]}, [], True, 1, 1),
    # booleans count as 0/1 (kept), strings never equal numbers
    ({"a": [1, 0]}, {"a": [True, False]}, [], False, 1, 1),
    ({"a": ["1"]}, {"a": [1]}, [], False, 0, 0),
    # ignore_order sorts every column on its own: rows are never compared
    ({"k": ["a", "b"], "v": [1, 2]}, {"k": ["a", "b"], "v": [2, 1]}, [], True, 1, 0),
    ({"k": ["a", "b"], "v": [1, 2]}, {"v": [2, 1], "k": ["b", "a"]}, [], True, 1, 1),
    # one predicted column may serve two gold columns
    ({"a": [1, 2], "b": [1, 2]}, {"x": [1, 2]}, [], False, 1, 0),
    ({"a": [1, 2], "b": [1, 2]}, {"x": [1, 2], "y": [1, 2]}, [], True, 1, 1),
    # numbers sorted as strings: 9.999 and 10.0 land on different sides of 5
    ({"v": [9.999, 5.0]}, {"v": [10.0, 5.0]}, [], True, 0, 1),
    ({"v": [9.999, 5.0]}, {"v": [10.0, 5.0]}, [], False, 1, 1),
    # list cells never match officially
    ({"l": [[1, 2], [3, 4]]}, {"l": [[1, 2], [3, 4]]}, [], False, 0, 1),
    ({"l": [[1, 2], [3, 4]]}, {"l": [[1, 2], [3, 5]]}, [], False, 0, 0),
    ({"s": [{"a": 1}]}, {"s": [{"a": 1.001}]}, [], False, 0, 1),
    # an array cell (a DuckDB LIST) met before the matching column raises officially (`!=` gives
    # an array): the whole table fails; met after it, it is never compared
    ({"a": [1, 2]}, {"l": [np.array([1, 2]), np.array([3])], "a": [1, 2]}, [], False, 0, 1),
    ({"a": [1, 2]}, {"a": [1, 2], "l": [np.array([1, 2]), np.array([3])]}, [], False, 1, 1),
    # empty tables
    ({"a": []}, {"a": []}, [], True, 1, 1),
]


@pytest.mark.parametrize(("gold", "pred", "cols", "ignore_order", "official", "strict"), CASES)
def test_compare(
    gold: dict[str, list[Any]],
    pred: dict[str, list[Any]],
    cols: list[int],
    ignore_order: bool,
    official: int,
    strict: int,
) -> None:
    gold_frame, pred_frame = pd.DataFrame(gold), pd.DataFrame(pred)
    assert (official_compare(pred_frame, gold_frame, cols, ignore_order) is None) == official
    picked = gold_frame.iloc[:, cols] if cols else gold_frame
    verdict = strict_compare(strict_columns(pred_frame), strict_columns(picked), ignore_order)
    assert (verdict is None) == strict


def test_official_tolerance_is_a_parameter() -> None:
    gold, pred = pd.DataFrame({"a": [1.0]}), pd.DataFrame({"a": [1.005]})
    assert official_compare(pred, gold) is None
    assert official_compare(pred, gold, tolerance=AGENTIC_TOLERANCE) is not None


def test_official_int_condition_col_compares_cells() -> None:
    # `iloc[:, 0]` gives a Series, whose cells are then taken as "columns": never a match...
    gold, pred = pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [1, 2]})
    assert official_compare(pred, gold, 0) is not None
    # ...unless the gold has no rows at all.
    assert official_compare(pred.iloc[:0], gold.iloc[:0], 0) is None


def test_official_ignore_order_is_truthiness() -> None:
    gold, pred = pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [2, 1]})
    assert official_compare(pred, gold, [], [False]) is None


def test_reasons_name_the_column() -> None:
    gold, pred = pd.DataFrame({"a": [1], "name": ["x"]}), pd.DataFrame({"a": [1]})
    assert official_compare(pred, gold) == "gold column 1 (name) matches no predicted column"
    reason = strict_compare(strict_columns(pred), strict_columns(gold), False)
    assert reason == "gold column 1 matches no predicted column"


def test_interchangeable_columns_do_not_explode() -> None:
    # Many identical all-null columns on both sides: one assignment up to symmetry.
    gold = pd.DataFrame({f"g{i}": [None] * 3 for i in range(8)} | {"k": [1, 2, 3]})
    pred = pd.DataFrame({f"p{i}": [None] * 3 for i in range(12)} | {"k": [3, 2, 1]})
    assert strict_compare(strict_columns(pred), strict_columns(gold), True) is None


@pytest.mark.parametrize(
    ("candidates", "expected"),
    [([[0], [1]], True), ([[0], [0]], False), ([[0, 1], [0]], True), ([], True), ([[]], False)],
)
def test_has_injective_assignment(candidates: list[list[int]], expected: bool) -> None:
    assert has_injective_assignment(candidates) is expected
