"""The big-column paths of both scorings (Arrow-sorted numeric columns, chunked comparisons),
forced on small generated tables and checked against the plain path and the reference scorer."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.official_baseline import compare_table
from querybench.evaluation.spider2 import official, strict


def frame(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


def verdicts(pred: pd.DataFrame, gold: pd.DataFrame, ignore_order: bool) -> tuple[bool, bool]:
    off = official.table_match(official.official_columns(pred), gold, [], ignore_order, "lite")
    st_ = strict.strict_table_match(
        strict.strict_columns(pred), strict.strict_columns(gold), ignore_order
    )
    return off, st_


@pytest.fixture
def large_path() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(official, "LARGE_ROWS", 0)
        mp.setattr(official, "CHUNK_ROWS", 2)
        mp.setattr(strict, "_CHUNK_ROWS", 2)
        yield


CELLS = st.one_of(
    st.sampled_from(["", "0", "1", "1.0", "-0", "10", "9", "2.5", "1e3", "inf", "-inf", "1e-05"]),
    st.integers(-12, 12).map(str),
    st.floats(-20, 20, allow_nan=False).map(lambda f: repr(round(f, 3))),
    st.floats(-1, 1, allow_nan=False).map(lambda f: repr(round(f, 2) + 0.004)),
)
TEXT_CELLS = st.one_of(CELLS, st.sampled_from(["a", "A", "b", "x y", "NA"]))


@st.composite
def tables(draw: st.DrawFn, n_rows: int, text: bool) -> str:
    n_cols = draw(st.integers(1, 3))
    cells = TEXT_CELLS if text else CELLS
    lines = [",".join(f"c{j}" for j in range(n_cols))]
    for _ in range(n_rows):
        lines.append(",".join(draw(cells) for _ in range(n_cols)))
    return "\n".join(lines) + "\n"


def _shuffled_or_perturbed(data: st.DataObject, gold_text: str) -> str:
    header, *rows = gold_text.splitlines()
    how = data.draw(st.sampled_from(["same", "shuffled", "one_changed", "other"]))
    if how == "shuffled":
        rows = data.draw(st.permutations(rows))
    elif how == "one_changed" and rows:
        i = data.draw(st.integers(0, len(rows) - 1))
        rows[i] = ",".join("7.5" for _ in header.split(","))
    elif how == "other":
        return "\n".join([header, *data.draw(st.lists(st.just(rows[0] if rows else "1")))]) + "\n"
    return "\n".join([header, *rows]) + "\n"


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data(), ignore_order=st.booleans(), text=st.booleans())
def test_forced_large_path_agrees_with_plain_path_and_reference(
    large_path: None, data: st.DataObject, ignore_order: bool, text: bool
) -> None:
    n_rows = data.draw(st.integers(0, 7))
    gold_text = data.draw(tables(n_rows, text))
    pred_text = _shuffled_or_perturbed(data, gold_text)
    pred, gold = frame(pred_text), frame(gold_text)
    got = verdicts(pred, gold, ignore_order)
    expected_official = bool(compare_table(pred, gold, [], ignore_order, "lite"))
    assert got[0] == expected_official
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(official, "LARGE_ROWS", 10**9)
        mp.setattr(official, "CHUNK_ROWS", 1 << 20)
        mp.setattr(strict, "_CHUNK_ROWS", 1 << 20)
        plain = verdicts(pred, gold, ignore_order)
    assert got == plain


CASES: list[tuple[str, str, bool, bool]] = [
    # (pred, gold, ignore_order, official expected)
    ("a\n10\n9\n1\n", "x\n1\n9\n10\n", True, True),
    ("a\n10.0\n9.0\n", "x\n9\n10\n", True, True),  # ints beside nothing: str order differs
    ("a,b\n1,0.5\n2,\n", "x,y\n1,0.5\n2,0\n", False, True),  # a gap is 0
    ("a\n1\n1\n2\n", "x\n1\n2\n2\n", True, False),  # duplicates count
    ("a\n-0.0\n0.0\n", "x\n0\n0\n", True, True),
    ("a\n1e-05\n2.5\n", "x\n2.5\n0.00001\n", True, True),
    ("a\ninf\n1\n", "x\n1\ninf\n", True, True),
]


@pytest.mark.parametrize(("pred", "gold", "ignore_order", "expected"), CASES)
def test_forced_large_path_cases(
    large_path: None, pred: str, gold: str, ignore_order: bool, expected: bool
) -> None:
    p, g = frame(pred), frame(gold)
    assert verdicts(p, g, ignore_order)[0] is expected
    assert bool(compare_table(p, g, [], ignore_order, "lite")) is expected


def test_numeric_order_equals_python_sort_by_str() -> None:
    rng = np.random.default_rng(3)
    floats = np.concatenate([np.round(rng.uniform(-1e6, 1e6, 250), d) for d in (0, 3)])
    floats[::11] *= 1e-9
    floats[::7] = np.nan
    ints = rng.integers(-(10**12), 10**12, 500)
    for source in (floats, ints, np.array([True, False, True])):
        keys: list[Any] = [
            "0" if isinstance(v, float) and np.isnan(v) else str(v) for v in source.tolist()
        ]
        expected = sorted(range(len(keys)), key=lambda i: keys[i])
        assert official._numeric_order(source).tolist() == expected
