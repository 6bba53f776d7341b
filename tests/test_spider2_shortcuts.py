"""The scorers' shortcuts for predictions that keep the gold's columns (the common correct
answer) give the verdicts of the full comparisons: the official reference transcription, and
strict's column-assignment search. Predictions here are derived from the gold (the same table,
rows or columns reordered, one cell changed, dtypes changed) so the shortcuts are taken."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.official_baseline import compare_table
from querybench.evaluation.spider2 import official, strict
from querybench.evaluation.spider2.gold import EvalSpec
from querybench.evaluation.spider2.instance import score_frame
from querybench.evaluation.spider2.result_csv import column_arrays
from tests.test_spider2_official import EDGE_CELLS


def frame(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


def _csv(head: list[str], rows: list[list[str]]) -> str:
    return "\n".join([",".join(head), *(",".join(r) for r in rows)]) + "\n"


def _cell(text: str) -> str:
    return text.replace('"', "").replace(",", "")  # one field, unquoted


@st.composite
def gold_and_derived(draw: st.DrawFn) -> tuple[str, str]:
    n_cols, n_rows = draw(st.integers(1, 3)), draw(st.integers(0, 6))
    rows = [[_cell(draw(EDGE_CELLS)) for _ in range(n_cols)] for _ in range(n_rows)]
    head = [f"c{j}" for j in range(n_cols)]
    ways = ["same", "rows", "columns", "each column", "cell", "extra", "float"]
    way = draw(st.sampled_from(ways))
    derived = [list(r) for r in rows]
    pred_head = list(head)
    if way == "rows":
        derived = draw(st.permutations(derived))
    elif way == "columns":
        order = draw(st.permutations(range(n_cols)))
        derived, pred_head = [[r[j] for j in order] for r in derived], [head[j] for j in order]
    elif way == "each column":  # every column reordered on its own: rows no longer pair
        shuffled = [draw(st.permutations([r[j] for r in rows])) for j in range(n_cols)]
        derived = [[shuffled[j][i] for j in range(n_cols)] for i in range(n_rows)]
    elif way == "cell" and derived:
        derived[draw(st.integers(0, n_rows - 1))][0] = _cell(draw(EDGE_CELLS))
    elif way == "extra":
        derived, pred_head = [[*r, "x"] for r in derived], [*head, "extra"]
    elif way == "float":
        derived = [[f"{c}.0" if c.lstrip("-").isdigit() else c for c in r] for r in derived]
    return _csv(head, rows), _csv(pred_head, derived)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tables=gold_and_derived(),
    ignore_order=st.booleans(),
    variant=st.sampled_from(["lite", "snow"]),
    cc=st.sampled_from([[], [0], 0, [0, 0]]),
)
def test_official_shortcuts_agree_with_the_reference(
    tables: tuple[str, str], ignore_order: bool, variant: official.Variant, cc: Any
) -> None:
    gold, pred = frame(tables[0]), frame(tables[1])
    expected = bool(compare_table(pred, gold, cc, ignore_order, variant))
    columns = official.official_columns(pred)
    picked = official.table_match(columns, gold, cc, ignore_order, variant, column_arrays(gold))
    assert picked == expected
    assert official.table_match(columns, gold, cc, ignore_order, variant) == expected


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables=gold_and_derived(), ignore_order=st.booleans())
def test_strict_shortcut_agrees_with_the_full_search(
    tables: tuple[str, str], ignore_order: bool
) -> None:
    gold = strict.strict_columns(frame(tables[0]))
    pred = strict.strict_columns(frame(tables[1]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(strict, "_identity_matches", lambda *_: False)
        expected = strict.strict_table_match(pred, gold, ignore_order)
    fresh_gold = strict.strict_columns(frame(tables[0]))
    fresh_pred = strict.strict_columns(frame(tables[1]))
    assert strict.strict_table_match(fresh_pred, fresh_gold, ignore_order) == expected


# (pred, gold, ignore_order): pairs a looser shortcut would get wrong
SIGNED_ZERO_AND_GAPS = [
    ("x\n0.0\n-5.0\n", "x\n-0.0\n-5.0\n", True),  # -0.0 sorts before "-5.0", 0.0 after
    ("x\n-0.0\n-5.0\n", "x\n-0.0\n-5.0\n", True),
    ("x\n0\n1\n", "x\n\n1\n", True),  # a gap is the integer 0
    ("x\n0.0\n1.5\n", "x\n\n1.5\n", True),  # ... which prints "0", not "0.0"
    ("x\n1\n10\n", "x\n1.0\n10.0\n", True),  # ints and floats print apart
    ("x\nTrue\n0\n", "x\n1\n0\n", True),  # a bool is a number printing "True"
    ("x\na\nb\n", "x\nb\na\n", True),
    ("x\na\n\n", "x\n\na\n", True),
]


@pytest.mark.parametrize(("pred", "gold", "ignore_order"), SIGNED_ZERO_AND_GAPS)
@pytest.mark.parametrize("variant", ["lite", "snow"])
def test_official_near_identical_columns(
    pred: str, gold: str, ignore_order: bool, variant: official.Variant
) -> None:
    p, g = frame(pred), frame(gold)
    expected = bool(compare_table(p, g, [], ignore_order, variant))
    columns = official.official_columns(p)
    assert official.table_match(columns, g, [], ignore_order, variant, column_arrays(g)) == (
        expected
    )


def test_score_frame_takes_the_gold_columns_it_is_told() -> None:
    gold = frame("a,b,c\n1,x,2.5\n2,y,3.5\n")
    pred = frame("b,c\ny,3.5\nx,2.5\n")
    for cc, ok in (([1, 2], True), ([0], False), ([2], True)):
        spec = EvalSpec("local001", condition_cols=cc, ignore_order=True)
        verdicts = score_frame(pred, [gold], True, spec, "lite")
        assert verdicts.official.passed is ok
        assert verdicts.strict.passed is ok


_BIG_INT = "9" * 400  # beyond float64: the official float() raises


@st.composite
def tables_with_big_ints(draw: st.DrawFn) -> str:
    n_cols, n_rows = draw(st.integers(1, 3)), draw(st.integers(0, 5))
    cells = st.one_of(EDGE_CELLS.map(_cell), st.just(_BIG_INT))
    rows = [[draw(cells) for _ in range(n_cols)] for _ in range(n_rows)]
    return _csv([f"c{j}" for j in range(n_cols)], rows)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.one_of(tables_with_big_ints(), gold_and_derived().map(lambda t: t[1])),
    other=gold_and_derived().map(lambda t: t[0]),
    ignore_order=st.booleans(),
    variant=st.sampled_from(["lite", "snow"]),
    cc=st.sampled_from([[], [0], 0, [0, 0], [5], [[0], []]]),
)
def test_a_gold_of_the_prediction_s_very_frame_scores_as_its_own_parse(
    text: str, other: str, ignore_order: bool, variant: official.Variant, cc: Any
) -> None:
    """A prediction of its gold's bytes is parsed once (`csv_cache`), so the scorers meet the
    same frame twice and convert its columns once: the verdicts, messages and details are
    those of two separate parses, overflow and out-of-range columns included."""
    pred = frame(text)
    spec = EvalSpec("local001", condition_cols=cc, ignore_order=ignore_order)
    for golds, single in (([pred], True), ([frame(other), pred], False)):
        apart = [frame(text) if g is pred else g for g in golds]
        assert score_frame(pred, golds, single, spec, variant) == score_frame(
            pred, apart, single, spec, variant
        )


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables=gold_and_derived(), big=st.booleans())
def test_strict_same_cells_shortcut_agrees_with_the_cell_rule(
    tables: tuple[str, str], big: bool
) -> None:
    text = tables[0].replace("\n1\n", f"\n{_BIG_INT}\n") if big else tables[0]
    for g, p in zip(
        strict.strict_columns(frame(text)), strict.strict_columns(frame(tables[1])), strict=False
    ):
        if len(g) != len(p):
            continue
        rows = np.arange(len(g))
        assert strict._all_cells_equal(g, p) == bool(strict.cells_equal(g, p, rows, rows).all())
        assert strict._all_cells_equal(g, g)


@pytest.mark.parametrize("variant", ["lite", "snow"])
@pytest.mark.parametrize(
    "cc", [[], None, 0, 1, 2, [0], [2, 0], [0, 0], [-1], [3], [1.0], [True], (0, 1), "a", [[0]]]
)
def test_compared_positions_are_pandas_projection(cc: Any, variant: official.Variant) -> None:
    width = 3
    try:
        dummy = pd.DataFrame(np.zeros((0, width)))
        expected: Any = [int(c) for c in official.project_gold(dummy, cc, variant).columns]
    except Exception as exc:
        expected = type(exc)
    try:
        got: Any = official.compared_positions(width, cc, variant)
    except Exception as exc:
        got = type(exc)
    assert got == expected
