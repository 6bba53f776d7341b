"""`table`'s pandas-free cell checks give exactly pandas' answers on the cells a parse holds."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from querybench.evaluation.spider2.table import Table, is_missing, missing_and_text

CELLS = st.one_of(
    st.sampled_from(["", "a", "0", "NA", "nan", "1.5"]),
    st.text(max_size=3),
    st.sampled_from([math.nan, 0.0, -0.0, 1.5, math.inf, None, True, False, 0, 1, 10**30]),
    st.floats(allow_nan=True),
    st.integers(),
    st.sampled_from([np.float64("nan"), np.float64(2.0), pd.NA, pd.NaT, np.datetime64("NaT")]),
)


def _objects(items: list[Any]) -> np.ndarray[Any, Any]:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


@settings(max_examples=2000, deadline=None)
@given(st.lists(CELLS, max_size=8))
def test_missing_and_text_is_pandas(items: list[Any]) -> None:
    values = _objects(items)
    missing, text = missing_and_text(values)
    expected = pd.isna(values)
    assert missing.dtype == bool and missing.tolist() == expected.tolist()
    inferred = pd.api.types.infer_dtype(values[~expected], skipna=False)
    assert text == (inferred in ("string", "empty"))
    for value in items:
        assert is_missing(value) == bool(pd.isna(value))


def test_a_table_s_frame_is_the_frame_of_its_columns() -> None:
    table = Table(["a", "a"], [np.array([1, 2]), _objects(["x", math.nan])], 2)
    frame = table.frame()
    assert list(frame.columns) == ["a", "a"] and frame.columns.dtype == object
    assert [str(d) for d in frame.dtypes] == ["int64", "object"]
    assert isinstance(frame.index, pd.RangeIndex) and len(frame) == 2
    assert all(not a.flags.writeable for a in table.arrays)
    assert Table.of_frame(frame).frame() is frame
