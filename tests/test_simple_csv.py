"""The plain-CSV reader gives exactly `read_result_csv`'s frame (pandas' parse, with the values
of record), or leaves the file to pandas."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pandas._libs.parsers import STR_NA_VALUES  # type: ignore[import-not-found]

from querybench.evaluation.spider2 import result_csv, simple_csv
from querybench.evaluation.spider2.simple_csv import NA_TEXTS, read_simple
from tests.conftest import require_data
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
    *["5e-324", "-1e-320", "2.2250738585072014e-308", "1.7976931348623157e308", "1e309"],
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
    *["1,5", '"a"', '"a,b"', "a\tb", "\t", " \t", "1\t", "\t-1", "\u00a01", "1\u3000"],
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


# cells meant to reach what quoting changes: quotes, delimiters, line ends and spaces inside a
# cell, missing texts and numbers with them or beside them
QUOTED_CELLS = [
    *["", "NA", "n/a", "None", "nan", "NULL", " NA", "NA ", "1", "-1", "007", "-0", "1.5", "1e5"],
    *["12345678901234567890", "True", "false", "abc", "a b", " 1", "1 ", " ", "1\n", "\n1"],
    *["1\r\n", "\r\n", "\n", "1\n2", "a\nb", "a\r\nb", "x\ry", "\r", "a,b", ",", "1,5"],
    *['a"b', '"', '""', '"a"', '"1"', '"NA"', 'a""b', "\t", "a\tb", "1\t", "é", "日本"],
]
QUOTED_NAMES = ["a", "b", "c", "d", "a,b", 'a"b', "a\nb", "a\r\nb", "1", "NA", "a.1", " a", ""]


def _field(draw: Any, cell: str, broken: bool) -> str:
    """`cell` as a field: quoted (its quotes doubled) most often, else as it is where that
    keeps its text, or (`broken`) as it is whatever it holds or in a way pandas reads otherwise
    than a quoted field: never closed, text after the closing quote, a quote inside an unquoted
    field, a quote not doubled."""
    inner = cell.replace('"', '""')
    ways = ["quoted"] * 3
    if broken:
        ways += ["raw", "open", "after", "inside", "lone"]
    elif not any(c in cell for c in ',"\r\n'):
        ways.append("raw")
    way = draw(st.sampled_from(ways))
    if way == "quoted":
        return f'"{inner}"'
    if way == "raw":
        return cell
    if way == "open":
        return f'"{inner}'
    if way == "after":
        after = draw(st.sampled_from(["x", " ", '"', "1"]))
        return f'"{inner}"{after}'
    if way == "inside":
        return f'x"{inner}"'
    return f'"{cell}"'


@st.composite
def quoted_files(draw: Any) -> bytes:
    broken = draw(st.booleans())
    width = draw(st.integers(1, 3))
    names = st.sampled_from(QUOTED_NAMES)
    heads = draw(st.lists(names, min_size=width, max_size=width, unique=not broken))
    rows = draw(st.integers(0 if broken else 1, 5))
    pools = [draw(st.lists(st.sampled_from(QUOTED_CELLS), min_size=1, max_size=3)) for _ in heads]
    lines = [",".join(_field(draw, n, broken) for n in heads)]
    for _ in range(rows):
        lines.append(",".join(_field(draw, draw(st.sampled_from(p)), broken) for p in pools))
    ends = ["\n", "\r\n"] + (["\r"] if broken else [])
    text = "".join(line + draw(st.sampled_from(ends)) for line in lines[:-1]) + lines[-1]
    text += draw(
        st.sampled_from(["\n", "\r\n", ""] + (["\r", "\n\n", "\r\n\r\n"] if broken else []))
    )
    return text.encode()


@settings(max_examples=4000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quoted_files())
def test_generated_quoted_files_as_pandas(data: bytes) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _check(data, monkeypatch)


def _suite(variant: str, *parts: str) -> list[Path]:
    folder = require_data("spider2", f"spider2-{variant}", "evaluation_suite", *parts)
    return sorted(folder.glob("*.csv"))


# the most files of each corpus left to pandas (1 of the 1,525 gold files of lite, as many of
# snow, none of the 13 example predictions; 301, 301 and 4 before quoted fields, CRLF, tabs,
# booleans, missing columns, headers alone, long integers, subnormal floats, long runs of
# digits among decimals, short rows and a lone \r inside quotes were read here)
MOST_LEFT_TO_PANDAS = {"gold lite": 1, "gold snow": 1, "example predictions": 0}


@pytest.mark.parametrize("corpus", sorted(MOST_LEFT_TO_PANDAS))
def test_every_spider2_csv_is_read_as_pandas_or_left_to_it(
    corpus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if corpus == "example predictions":
        parts = ("example_submission_folder_csv",)
        paths = _suite("lite", *parts) + _suite("snow", *parts)
    else:
        paths = _suite(corpus.split()[1], "gold", "exec_result")
    assert paths
    left = [p.name for p in paths if not _check(p.read_bytes(), monkeypatch)]
    assert len(left) <= MOST_LEFT_TO_PANDAS[corpus], left


def test_plain_files_are_read_here(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = [
        b"a,b\n1,x\n2,y\n",
        b"a,b\n1,1.5\n,2\n",
        b"a,b,c\n-0,-0,2017-04\n007,1e5,nan\n",
        b"a\n1970700367141744.8123\n823080230511524167.5\n",
        b"d,n\n2021-04-27,True\n2021-04-28,abc\n",
        b"a,b\n5,x",
        b"a,b\r\n1,x\r\n2,y\r\n",  # CRLF line ends
        b"a,b\r\n1,x\n2,y",  # mixed
        b'a,b\n"1","x"\n"2",y\n',  # quoted numbers are numbers
        b'"a,1",b\n1,"x,y"\n2,"say ""hi"""\n',
        b'a,b\n"",x\n"NA",y\n3,z\n',  # quoted missing texts are missing
        b'a,b\n1,"line\nbreak"\r\n2,"crlf\r\ninside"\r\n',
        b'a\n"x"\n""\n',  # a quoted empty field is a row, not a blank line
        b'a,b\n1," NA"\n2,"1\n2"\n',
        b'a\n"x\n  y"\n z\n',  # lines starting with spaces, none of spaces alone
        b'a,b\n"x\ty",\t\n\tz,w\n',  # tabs
        b"a\n1234567890123456789\n-9223372036854775808\n",  # 19 digits: int64
        b"a\n18446744073709551615\n0312226371899637611\n",  # beyond int64: uint64
        b"a\n-9223372036854775809\n",  # beyond int64, and negative: text (pandas 2.2)
        b"a\n18446744073709551616\n5\n",  # beyond uint64: text
        b"a\n9223372036854775808\n-1\n",
        b"a\n9223372036854775808\n-0\n",
        b"a,b\n5e-324,1e-320\n1.5,2.5e-310\n",  # subnormal floats
        # runs of 19 digits and more among decimals, a decimal first: pandas 2.2's integer
        # parse stops at it, before any overflow, and every cell is a float
        b"a\n1.5\n12345678901234567890\n123456789012345678901234\n",
        b"a,b\n1.0000000000000001e+21,x\n9323372036854775807,y\n-18446744073709551616,z\n",
        b"a\n9223372036854775807\n-0.5\n1234567890123456789012.25\n",
        # an integer past uint64 first, both integer parses overflow there: text, as it is
        b"a,b\n2021-04-27,501031809891940837977.000000000\n2021-04-28,1.5\n",
        b"a\n123456789012345678901234\n1.5\n-7\n",
        # rows shorter than the header: their last fields are missing (bq088_b's kind)
        b"a,b,c\n1,2\n3,4,5\n",
        b"s,x,y,z\nAnxiety,9.6178846153846163\nDepression,6.0082692307692307",
        b"a,b\nTrue\nFalse,x\n",
        b"a,b\n1\n",
        b"a,b\n",  # a header alone
        b'"a,b"\r\n',
        b"a\nTrue\nFalse\n",
        b"a,b\ntrue,1\nNA,2\nFALSE,3\n",  # booleans beside missing cells: objects
        b"a\nNA\n",  # all missing
        b'"a"\n""\n',
        b'a,b\n"1",\n',
        b'a\n"x\ry"\n',  # a `\r` alone inside quotes is text (sf_bq193_d)
        b'a,b\r\n"x\ry",1\r\n"p\r\nq",2\r\n',
    ]
    for data in plain:
        assert _check(data, monkeypatch), data


def test_left_to_pandas() -> None:
    for data in [
        b"",
        b"a,a\n1,2\n",  # names pandas mangles
        b"a,\n1,2\n",
        b"\xef\xbb\xbfa\n1\n",
        b'a\n"1"x\n',  # text after a closing quote
        b'a\nx"1"\n',  # a quote inside an unquoted field
        b'a\n"1\n',  # a quote never closed
        b'a\n"x""\n',
        b'a\n"x"\r',  # a `\r` alone: a line end
        b"a\r1\r",
        b'a\n"x"\ry\n',
        b'a\n"1\n"\n2\n',  # a number with a line end (pandas: 1)
        b'a\n"1"\n\n2\n',
        b"a\n1\n\n2\n",
        b"a\nx\n \ny\n",  # pandas skips a line of spaces alone
        b"a\nx\n\t \ny\n",  # and of tabs
        b"a\n1\t\n2\n",  # pandas: 1
        b'a\n"x"\n \r\n"y"\n',
        b"a,b\n1,2,3\n",  # a row longer than the header
        b"a\n1\n\n",
        b"a\n\n",
        b"a,b\n1234567890123456789,1\n,2\n",
        b"a,b\n123456789012345678901234,1\n,2\n",  # beside a missing cell
        b"a\n1\ninf\n",
        b"a\n+1\n",
        b"a\n 1\n",
        b"a\n12345678901234567890\n1.5\n",  # the overflow first: uint64 tried, then floats
        b"a\n-12345678901234567890\n1.5\n",  # and a minus
        b"a\n1.5\n12345678901234567890\nNA\n",  # beside a missing cell
        b"a\n1e400\n",
        b"a\n1e309\n5e-324\n",  # one beyond the double range: pandas 2.2 keeps the text
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


@pytest.mark.parametrize("width", [1, 9])
def test_more_rows_than_pandas_types_at_once(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # pandas types a big file's rows a chunk at a time and joins the chunks: a chunk of
    # numbers before one of text keeps its numbers, ints among the strings
    chunk = simple_csv._chunk_rows(width)
    head = ",".join(f"c{j}" for j in range(width))

    def rows(cells: list[str]) -> bytes:
        return "\n".join([head, *(",".join([c] * width) for c in cells)]).encode()

    mixed = rows(["1"] * chunk + ["x"])
    expected = _by_pandas(mixed, monkeypatch)
    assert expected is not None and type(expected.iloc[0, 0]) is int
    for data in [mixed, rows(["1"] * chunk + ["2", "NA"])]:  # int64, then float64
        assert read_simple(data) is None
    for data in [
        rows(["x"] + ["1"] * (chunk - 1) + ["y", "2"]),  # text in every chunk
        rows(["1.5"] * chunk + ["2", "NA"]),
        rows(["1"] * (chunk - 1) + ["x"]),  # one chunk
    ]:
        assert _check(data, monkeypatch)


@pytest.mark.parametrize(("text", "dtype", "cells"), RECORD)
def test_record_fixtures(text: str, dtype: str, cells: list[str]) -> None:
    simple = read_simple(text.encode())
    if simple is not None:
        column = result_csv._frame(*simple)["a"]
        assert str(column.dtype) == dtype
        assert [repr(v) for v in column.tolist()] == cells
