"""Strict Spider 2.0 scoring: each flaw of the official comparison, fixed, one line per case."""

from __future__ import annotations

import io
from typing import Any

import pandas as pd
import pytest

from querybench.evaluation.spider2.gold import EvalSpec
from querybench.evaluation.spider2.instance import score_frame, strict_condition_cols
from querybench.evaluation.spider2.strict import strict_columns, strict_table_match


def frame(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


def strict(pred: str, gold: str, ignore_order: bool) -> bool:
    return strict_table_match(
        strict_columns(frame(pred)), strict_columns(frame(gold)), ignore_order
    )


# (pred, gold, ignore_order, strict expected, official expected)
CASES = [
    ("a\n1\n2\n", "x\n1\n2\n", False, True, True),
    ("a\n0\n", "x,y\n,1\n", False, False, None),  # missing != 0 (official: equal)
    ("a,b\n1,x\n2,y\n", "x,y\n1,y\n2,x\n", True, False, True),  # rows must stay rows
    ("a\n1\n", "x,y\n1,1\n", False, False, True),  # each gold column needs its own column
    ("a,b\n1,1\n", "x,y\n1,1\n", False, True, True),
    # numbers: never looser than the official math.isclose(abs_tol=1e-2, rel_tol=1e-9)
    ("a\n1000000.5\n", "x\n1000000.0\n", False, False, False),
    ("a\n100000000\n", "x\n100000050\n", False, False, False),
    ("a\n53033035302\n", "x\n53033005302\n", False, False, False),  # a tract id 30,000 off
    ("a\n39538258\n", "x\n39538223\n", False, False, False),  # a population 0.9 ppm off
    ("a\n10000000000\n", "x\n10000000005\n", False, True, True),  # within rel 1e-9
    ("a\n1.0049\n", "x\n1.0\n", False, True, True),  # within abs 1e-2
    ("a\nTrue\n", "x\n1\n", False, False, True),  # booleans are not numbers
    ("a,b\nc,3\na,1\n", "x,y\n1,a\n3,c\n", True, True, True),
    ("a\n1\n1\n2\n", "x\n1\n2\n2\n", True, False, False),  # multisets, not sets
    ("a,b\n1.004,b\n1.002,a\n", "x,y\n1.000,a\n1.006,b\n", True, True, True),  # pairing under tol
    ("a\n", "x\n", True, True, True),
    ("a\n7.5\n", "x\ninf\n", False, False, False),  # an infinity equals only itself
    ("a\ninf\n", "x\ninf\n", False, True, True),
    ("a\n1\n", "x\n", True, False, False),  # row counts must be equal
]


@pytest.mark.parametrize(("pred", "gold", "ignore_order", "expected", "_official"), CASES)
def test_strict_cases(
    pred: str, gold: str, ignore_order: bool, expected: bool, _official: Any
) -> None:
    assert strict(pred, gold, ignore_order) is expected


@pytest.mark.parametrize(
    ("pred", "gold", "ignore_order", "_strict", "expected"), [c for c in CASES if c[4] is not None]
)
def test_official_side_by_side(
    pred: str, gold: str, ignore_order: bool, _strict: bool, expected: bool
) -> None:
    spec = EvalSpec("x", [], ignore_order)
    verdicts = score_frame(frame(pred), [frame(gold)], True, spec, "lite")
    assert verdicts.official.passed is expected


def test_out_of_range_alternative_is_skipped_not_fatal() -> None:
    spec = EvalSpec("x", [[5], [0]], False)
    golds = [frame("x\n2\n"), frame("x\n1\n")]
    verdicts = score_frame(frame("a\n1\n"), golds, False, spec, "lite")
    assert verdicts.strict.passed
    assert not verdicts.official.passed and verdicts.official.error == "gold_error"


def test_a_boolean_column_index_is_a_gold_error_not_a_crash() -> None:
    spec = EvalSpec("x", [True], False)
    verdicts = score_frame(frame("a,b\n1,2\n"), [frame("x,y\n1,2\n")], False, spec, "lite")
    assert not verdicts.strict.passed and verdicts.strict.error == "gold_error"
    assert "out of range" in str(verdicts.strict.message)


def test_flat_condition_cols_apply_to_every_alternative() -> None:
    assert strict_condition_cols([1, 2], 2) == [[1, 2], [1, 2]]
    assert strict_condition_cols([1, 2], 1) == [[1, 2]]
    assert strict_condition_cols([[0], [1]], 2) == [[0], [1]]
    assert strict_condition_cols([], 3) == [None, None, None]
    assert strict_condition_cols(0, 1) == [[0]]


def test_wrong_result_message_names_shapes() -> None:
    spec = EvalSpec("x", [], False)
    verdicts = score_frame(frame("a\n1\n"), [frame("x\n2\n")], True, spec, "lite")
    assert verdicts.strict.error == "wrong_result"
    assert "1x1" in (verdicts.strict.message or "")
