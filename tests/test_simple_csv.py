"""The plain-CSV reader gives exactly `read_result_csv`'s frame (pandas' parse, with the values
of record), or leaves the file to pandas."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pandas._libs.parsers import STR_NA_VALUES  # type: ignore[import-not-found]

from querybench.evaluation.spider2 import result_csv
from querybench.evaluation.spider2.simple_csv import NA_TEXTS, read_simple
from tests.test_result_csv_record import RECORD

# cells meant to reach every branch of pandas' typing, its missing texts and their neighbours
CELLS = [
    *sorted(STR_NA_VALUES),
    *["0", "1", "-0", "-1", "007", "+1", " 1", "1 ", " ", "  ", "12", "-5", "999999999999999"],
    *["123456789012345678", "-123456789012345678", "1234567890123456789", "9223372036854775807"],
    *[
        "9223372036854775808",
        "-9223372036854775809",
        "18446744073709551616",
        "12345678901234567890",
    ],
    *["1.5", "-0.0", "0.1", "1.", ".5", ".", "-", "1e5", "1E-05", "1e400", "1e-400", "2.5e+3"],
    *[
        "123456789012345678.5",
        "1234567890123456789.5",
        "0.30000000000000004",
        "1.23456789012345678",
    ],
    *["8230802305115241676.5", "1970700367141744.8123", "3.14159265358979323846", "1e22", "1e23"],
    *["inf", "-inf", "+inf", "Inf", "INF", "infinity", "-Infinity", "nan", "NAN", "nan!"],
    *["True", "TRUE", "true", "False", "FALSE", "false", "tRUE", "yes", "no", "T", "F"],
    *["abc", "a b", "2017-04", "2017-04-01", "12:30:00", "1-2", "x1", "é", "日本", "#", "'q'"],
    *["1,5", '"a"', '"a,b"', "a\tb", "\u00a01", "1\u3000"],
]
NAMES = ["a", "b", "c", "NA", "1", " a", "a.1", "", "Unnamed: 0", "é"]


def _frames_identical(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    assert a.columns.dtype == b.columns.dtype
    assert type(a.index) is type(b.index) and a.index.equals(b.index)
    assert list(a.dtypes) == list(b.dtypes)
    for x, y in zip(result_csv.column_arrays(a), result_csv.column_arrays(b), strict=True):
        assert x.dtype == y.dtype
        if x.dtype.kind == "f":
            assert x.view(np.int64).tolist() == y.view(np.int64).tolist()  # bit for bit
            continue
        for u, v in zip(x.tolist(), y.tolist(), strict=True):
            assert type(u) is type(v)
            assert u == v or (u != u and v != v)


def _by_pandas(data: bytes, monkeypatch: pytest.MonkeyPatch) -> pd.DataFrame | None:
    with monkeypatch.context() as m:
        m.setattr(result_csv, "read_simple", lambda data: None)
        try:
            return result_csv.read_result_csv(io.BytesIO(data))
        except Exception:
            return None


def _check(data: bytes, monkeypatch: pytest.MonkeyPatch) -> bool:
    simple = read_simple(data)
    if simple is None:
        return False
    expected = _by_pandas(data, monkeypatch)
    assert expected is not None, data  # pandas reads every file read here
    _frames_identical(result_csv._frame(*simple), expected)
    _frames_identical(result_csv.read_result_csv(io.BytesIO(data)), expected)
    return True


def test_na_texts_are_pandas_defaults() -> None:
    assert frozenset(STR_NA_VALUES) == NA_TEXTS


@st.composite
def csv_files(draw: Any) -> bytes:
    width = draw(st.integers(1, 4))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=width, max_size=width))
    rows = draw(st.integers(0, 6))
    # a column draws from a few cells, so that whole columns of one kind are common
    pools = [draw(st.lists(st.sampled_from(CELLS), min_size=1, max_size=3)) for _ in names]
    body = [[draw(st.sampled_from(pool)) for pool in pools] for _ in range(rows)]
    end = draw(st.sampled_from(["\n", "", "\r\n", "\n\n"]))
    text = "\n".join(",".join(r) for r in [names, *body]) + end
    if draw(st.booleans()) and rows:
        lines = text.split("\n")
        k = draw(st.integers(1, len(lines) - 1))
        lines[k] = draw(st.sampled_from(["", lines[k] + ",x", lines[k].rsplit(",", 1)[0]]))
        text = "\n".join(lines)
    prefix = draw(st.sampled_from(["", "", "", "\ufeff"]))
    return (prefix + text).encode()


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(csv_files())
def test_generated_files_as_pandas(data: bytes) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _check(data, monkeypatch)


def test_plain_files_are_read_here(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = [
        b"a,b\n1,x\n2,y\n",
        b"a,b\n1,1.5\n,2\n",
        b"a,b,c\n-0,-0,2017-04\n007,1e5,nan\n",
        b"a\n1970700367141744.8123\n823080230511524167.5\n",
        b"d,n\n2021-04-27,True\n2021-04-28,abc\n",
        b"a,b\n5,x",
    ]
    for data in plain:
        assert _check(data, monkeypatch), data


def test_left_to_pandas() -> None:
    for data in [
        b"",
        b"a,b\n",  # a header alone
        b"a,a\n1,2\n",  # names pandas mangles
        b"a,\n1,2\n",
        b"\xef\xbb\xbfa\n1\n",
        b'a\n"1"\n',
        b"a\r\n1\r\n",
        b"a\n1\n\n2\n",
        b"a\nx\n \ny\n",  # pandas skips a line of spaces alone
        b"a,b\n1,2,3\n",
        b"a,b\n1\n",
        b"a\nTrue\nFalse\n",
        b"a\n1\n\n",
        b"a\n\n",
        b"a\nNA\n",  # all missing
        b"a\n1234567890123456789\n",
        b"a\n1\ninf\n",
        b"a\n+1\n",
        b"a\n 1\n",
        b"a\n501031809891940837977.000000000\n",  # pandas 2.2: an integer overflow, text
        b"a\n1e400\n",
        b"a,b\n,1\n-0,2\n",  # pandas 3: 0.0, pandas 2.2: -0.0
        b"a\n\xff\n",
        b"a\n1\x002\n",
    ]:
        assert read_simple(data) is None, data


def test_a_long_integer_beside_missing_cells_keeps_pandas_raw_texts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pandas' numeric inference, having seen an integer past int64, then a minus or a missing
    # cell, gives the column's raw texts back, a missing text among them; read here the same
    # files would make that cell NaN
    first = b"a\n9223372036854775808\n--1\nn/a\n"
    expected = _by_pandas(first, monkeypatch)
    assert expected is not None and expected["a"].tolist() == ["9223372036854775808", "--1", "n/a"]
    for data in [
        first,
        b"a\n9223372036854775808\n-5\nN/A\n",
        b"a,b\n-9223372036854775809,x\n12345678901234567890,\n-,y\n",
    ]:
        expected = _by_pandas(data, monkeypatch)
        assert expected is not None
        _frames_identical(result_csv.read_result_csv(io.BytesIO(data)), expected)


@pytest.mark.parametrize(("text", "dtype", "cells"), RECORD)
def test_record_fixtures(text: str, dtype: str, cells: list[str]) -> None:
    simple = read_simple(text.encode())
    if simple is not None:
        column = result_csv._frame(*simple)["a"]
        assert str(column.dtype) == dtype
        assert [repr(v) for v in column.tolist()] == cells
