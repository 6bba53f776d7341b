"""The official Spider 2.0 comparison: its quirks, table-driven, and a property check against the
plain reference transcription on random small tables full of edge values."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.official_baseline import compare_multi, compare_table
from querybench.evaluation.spider2 import official


def frame(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


def ours(
    pred: str,
    gold: str,
    cc: Any = None,
    ignore_order: bool = False,
    variant: official.Variant = "lite",
) -> bool:
    return official.table_match(
        official.official_columns(frame(pred)),
        frame(gold),
        cc if cc is not None else [],
        ignore_order,
        variant,
    )


# (pred csv, gold csv, condition_cols, ignore_order, expected) — one line per quirk.
CASES = [
    ("a\n1\n2\n", "x\n1\n2\n", [], False, True),
    ("a\n2\n1\n", "x\n1\n2\n", [], False, False),
    ("a\n2\n1\n", "x\n1\n2\n", [], True, True),
    ("a\n1.005\n", "x\n1\n", [], False, True),  # abs tol 1e-2
    ("a\n1.02\n", "x\n1\n", [], False, False),
    ("a\n0\n", "x,y\n,5\n", [0], False, True),  # missing becomes 0
    ("a,b\nq,1\nr,2\n", "x\n1\n2\n", [], False, True),  # extra predicted columns ignored
    ("a\n1\n2\n", "x,y\n1,1\n2,2\n", [], False, True),  # one predicted column serves two
    ("a,b\n1,x\n2,y\n", "x,y\n1,y\n2,x\n", [], True, True),  # columns sorted independently
    ("a\nA\n", "x\na\n", [], False, False),  # case matters
    ("a\nTrue\n", "x\n1\n", [], False, True),  # bool is a number
    ("a\n10\n9\n", "x,y\n9.999,a\n10.001,b\n", [0], True, False),  # sorted by str(x)
    ("a\n", "x\n", [], False, True),  # header only vs header only
    ("a\n1\n", "x,y\n1,5\n", 0, False, False),  # lite: 0 means all columns
    ("a\n1\n", "x,y\n1,5\n", [0], False, True),
]


@pytest.mark.parametrize(("pred", "gold", "cc", "ignore_order", "expected"), CASES)
def test_official_quirks(pred: str, gold: str, cc: Any, ignore_order: bool, expected: bool) -> None:
    assert ours(pred, gold, cc, ignore_order) is expected
    assert bool(compare_table(frame(pred), frame(gold), cc, ignore_order, "lite")) is expected


def test_snow_reads_bare_zero_as_column_zero() -> None:
    assert ours("a\n1\n", "x,y\n1,5\n", 0, False, "snow") is True
    assert ours("a\n1\n", "x,y\n1,5\n", 0, False, "lite") is False


def test_out_of_range_condition_cols_raise_like_the_official() -> None:
    with pytest.raises(IndexError):
        ours("a\n1\n", "x\n1\n", [3])


def test_single_alternative_gets_only_the_first_flat_entry() -> None:
    pred = official.official_columns(frame("a\n1\n"))
    gold = frame("x,y\n7,1\n")
    # [1, 0] with one alternative: only `1` is handed on, so column 1 alone must match.
    assert official.multi_table_match(pred, [gold], [1, 0], False, "lite")
    # with two alternatives the flat list is broadcast: both columns must match.
    assert not official.multi_table_match(pred, [gold, gold], [1, 0], False, "lite")


def test_error_on_an_earlier_alternative_zeroes_the_instance() -> None:
    pred = official.official_columns(frame("a\n1\n"))
    with pytest.raises(IndexError):
        official.multi_table_match(
            pred, [frame("x\n2\n"), frame("x\n1\n")], [[5], [0]], False, "lite"
        )
    # ... but a match before the broken alternative wins.
    assert official.multi_table_match(
        pred, [frame("x\n1\n"), frame("x\n2\n")], [[0], [5]], False, "lite"
    )


EDGE_CELLS = st.one_of(
    st.sampled_from(
        [
            "",
            "0",
            "1",
            "1.0",
            "-0",
            "10",
            "9",
            "2.5",
            "1e3",
            "True",
            "false",
            "NA",
            "null",
            "None",
            "nan",
            "inf",
            "a",
            "A",
            "b",
            " 1",
            "01",
            '"1,000"',
            "x y",
        ]
    ),
    st.integers(-20, 20).map(str),
    st.floats(-20, 20, allow_nan=False).map(lambda f: repr(round(f, 3))),
    st.floats(-1, 1, allow_nan=False).map(lambda f: repr(round(f, 2) + 0.004)),
)


@st.composite
def csv_tables(draw: st.DrawFn, rows: int | None = None) -> str:
    n_cols = draw(st.integers(1, 3))
    n_rows = rows if rows is not None else draw(st.integers(0, 5))
    lines = [",".join(f"c{j}" for j in range(n_cols))]
    for _ in range(n_rows):
        lines.append(",".join(draw(EDGE_CELLS) for _ in range(n_cols)))
    return "\n".join(lines) + "\n"


def _quote_free(text: str) -> str:
    return text.replace('"', "")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), ignore_order=st.booleans(), variant=st.sampled_from(["lite", "snow"]))
def test_property_agrees_with_reference(
    data: st.DataObject, ignore_order: bool, variant: official.Variant
) -> None:
    n_rows = data.draw(st.integers(0, 5))
    gold = frame(data.draw(csv_tables(n_rows)))
    pred = frame(data.draw(csv_tables(data.draw(st.sampled_from([n_rows, n_rows + 1])))))
    cc = data.draw(st.sampled_from([[], [0], 0, [0, 0], [gold.shape[1] - 1]]))
    expected = compare_table(pred, gold, cc, ignore_order, variant)
    got = official.table_match(official.official_columns(pred), gold, cc, ignore_order, variant)
    assert got == bool(expected)


def test_multi_reference_agreement_on_alternatives(tmp_path: Path) -> None:
    golds = [frame("x,y\n1,a\n2,b\n"), frame("x,y\n1,a\n3,c\n")]
    pred = frame("p,q\nc,3\na,1\n")
    for cc in ([], [0], [[0], [1]], [[1], [0]], [1, 0]):
        assert official.multi_table_match(
            official.official_columns(pred), golds, cc, True, "lite"
        ) == bool(compare_multi(pred, golds, cc, True, "lite"))
