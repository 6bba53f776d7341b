"""Reading Spider 2.0 result CSVs exactly as the official scorers do.

The official `evaluate.py` reads every prediction and gold with a bare `pd.read_csv(path)`, and
its verdicts depend on the types pandas infers (an integer column with a gap becomes floats, a
column with one word becomes text, `NA`/`null`/`None` become missing). Matching those verdicts
bit for bit means parsing with the very same function, so this is the one place pandas is used.

The verdicts of record are those of the leaderboard's environment, pandas 2.2. pandas 3 parses
two kinds of number differently: an integer column beyond 64 bits (pandas 2.2 keeps its text,
pandas 3 makes Python ints) and floats of more than 15 significant digits or a large exponent
(pandas 2.2's `precise_xstrtod` is not correctly rounded, pandas 3's parser is). Under pandas 3
those columns are made again from their text the pandas 2.2 way (`_as_of_record`), so a
prediction gets the verdict of record whichever supported pandas is installed.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt
import pandas as pd
from pandas._libs.parsers import STR_NA_VALUES  # type: ignore[import-not-found]

from querybench.errors import DataError
from querybench.evaluation.spider2.record_floats import plain_floats
from querybench.evaluation.spider2.record_floats import precise_xstrtod as precise_xstrtod
from querybench.evaluation.spider2.simple_csv import (
    first_int_error,
    first_uint_error,
    int_error,
    read_simple,
    text_column,
)
from querybench.evaluation.spider2.table import PARSER_VERSION as PARSER_VERSION
from querybench.evaluation.spider2.table import column_arrays as column_arrays
from querybench.evaluation.spider2.table import interleaved_dtype as interleaved_dtype

_OPTION_LOCK = threading.Lock()
# pandas from which numbers are parsed otherwise than the record's (pandas 2.2)
_NEW_NUMBERS = int(pd.__version__.split(".", 1)[0]) >= 3
# Bytes without any of these hold no number the two parsers read apart: a field starting with
# 16 digits or dots (a mantissa beyond 2**53, an integer beyond 64 bits) or a number with a
# two-digit exponent.
_LONG_NUMBER = re.compile(rb'(?<![^,\n\r" \t])[+-]?(?:[0-9.]{16}|[0-9.]*[0-9][eE][+-]?[0-9]{2})')
# Byte maps for fast scans: digits to "0", everything else to "x" (19 digits in a row: an
# integer beyond 64 bits); and digits and dots to "0", exponent marks to "e", signs to "s"
# (what `_LONG_NUMBER` needs to match).
_DIGIT_RUNS = bytes(48 if 48 <= b <= 57 else 120 for b in range(256))
_NUMBER_SHAPES = bytes(
    48 if 48 <= b <= 57 or b == 46 else 101 if b in b"eE" else 115 if b in b"+-" else 120
    for b in range(256)
)
_SPACE = " \t\n\v\f\r"
_INFINITIES = frozenset({"inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"})
_NA_TOKENS = frozenset(STR_NA_VALUES)  # pandas' default missing-value texts


def read_result_csv(
    source: str | Path | BinaryIO, name: str | None = None, simple: bool = True
) -> pd.DataFrame:
    """Parse one result CSV like the official scorer; any failure is a `DataError` with a reason.

    `source` is a path or an open binary file (parsed alike); `name` is the path errors say;
    `simple=False`: the caller found `read_simple` refuses it (it is not tried again).
    """
    path = name if name is not None else source
    try:
        data = _bytes_of(source)
        plain = read_simple(data) if simple else None
        if plain is not None:
            return _frame(*plain)
        with _text_as_objects():
            if not _NEW_NUMBERS:
                return pd.read_csv(io.BytesIO(data))
            frame = pd.read_csv(io.BytesIO(data))
            return _as_of_record(frame, data) if _has_long_number(data) else frame
    except FileNotFoundError as exc:
        raise DataError(f"{path}: file not found") from exc
    except pd.errors.EmptyDataError as exc:
        raise DataError(f"{path}: empty file (no header)") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except (pd.errors.ParserError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{path}: unreadable CSV ({first})") from exc


def _frame(names: list[str], arrays: list[npt.NDArray[Any]]) -> pd.DataFrame:
    """The frame `pd.read_csv` gives for these distinct names and typed columns (`simple_csv`),
    built without pandas' inference (which would make text its `str` dtype under pandas 3)."""
    frame: pd.DataFrame = pd.DataFrame._from_arrays(  # type: ignore[attr-defined]
        arrays,
        columns=pd.Index(names, dtype=object),
        index=pd.RangeIndex(len(arrays[0])),
        verify_integrity=False,
    )
    return frame


def _bytes_of(source: str | Path | BinaryIO) -> bytes:
    if isinstance(source, (str, Path)):
        return Path(source).read_bytes()
    data = source.read()
    return data.encode() if isinstance(data, str) else bytes(data)


def _has_long_number(data: bytes) -> bool:
    """`_LONG_NUMBER.search(data)`, the regular expression run only where a fast scan finds
    what it needs: 16 digits or dots in a row, or a digit, an exponent mark and two digits."""
    shapes = data.translate(_NUMBER_SHAPES)
    if b"0" * 16 not in shapes and b"0e00" not in shapes and b"0es00" not in shapes:
        return False
    return _LONG_NUMBER.search(data) is not None


def _as_of_record(frame: pd.DataFrame, data: bytes) -> pd.DataFrame:
    """`frame` with each column pandas 3 may parse otherwise than pandas 2.2 (its floats, and
    text made Python ints) made again from its raw text by pandas 2.2's inference
    (`_record_column`); the raw text of those columns only is read once more, when there are
    any."""
    overflows = b"0" * 19 in data.translate(_DIGIT_RUNS)
    suspects = [
        j
        for j, dtype in enumerate(frame.dtypes)
        if dtype.kind == "f" or (dtype.kind == "O" and overflows)
    ]
    if not suspects:
        return frame
    # with an implicit index column, positions in the file are not the frame's: read it all
    implicit_index = not frame.index.equals(pd.RangeIndex(len(frame)))
    raw = pd.read_csv(
        io.BytesIO(data),
        dtype=object,
        keep_default_na=False,
        na_filter=False,
        usecols=None if implicit_index else suspects,
    )
    out = frame.copy()
    for k, j in enumerate(suspects):
        column = _record_column(raw.iloc[:, j if implicit_index else k].tolist(), frame.iloc[:, j])
        if column is not None:
            out.isetitem(j, column)
    return out


def _record_column(tokens: list[str], parsed: pd.Series) -> npt.NDArray[Any] | None:
    """pandas 2.2's column of these raw tokens where it differs from `parsed` (None: the
    same). pandas 2.2 tries int64, on an overflow uint64, else float64 (`precise_xstrtod`),
    each stopping at its first bad token, and keeps the text when a number overflows both
    integer types or no type takes every token."""
    present = [t for t in tokens if t not in _NA_TOKENS]
    signed = first_int_error(present)
    if signed == "overflow":
        unsigned = first_uint_error(present)
        if unsigned == "overflow":
            return text_column(tokens, na_filter=True)
        if not unsigned:
            signs = [t.lstrip(_SPACE).startswith("-") for t in present]
            negative = any(signs)
            beyond = any(not m and int_error(t) for t, m in zip(present, signs, strict=True))
            if beyond and (negative or len(present) < len(tokens)):
                return text_column(tokens, na_filter=False)  # a conflict: the text as it is
            if negative:
                return text_column(tokens, na_filter=True)
            return None  # uint64 alike
    elif not signed:
        return None  # int64 alike
    if parsed.dtype.kind != "f":
        floats = []
        for token in tokens:  # text, as a rule: its first word settles it
            value = math.nan if token in _NA_TOKENS else _record_float(token)
            if value is None:
                return None
            floats.append(value)
        return np.array(floats)
    # Only a long token, or one with an exponent, can be read apart: the others' values are
    # pandas 3's, both parsers being exact on up to 15 digits scaled by 10**22 at most.
    out = parsed.to_numpy(dtype=np.float64, copy=True)
    at = np.array(
        [i for i, t in enumerate(tokens) if len(t) > 15 or "e" in t or "E" in t], dtype=np.intp
    )
    values, plain = plain_floats([tokens[i] for i in at.tolist()])  # most of them, at once
    out[at[plain]] = values[plain]
    for i in at[~plain].tolist():
        if (token := tokens[i]) not in _NA_TOKENS:
            value = _record_float(token)
            if value is None:
                return text_column(tokens, na_filter=True)
            out[i] = value
    return out


def _record_float(token: str) -> float | None:
    if token.strip(_SPACE).lower() in _INFINITIES:
        return float(token.strip(_SPACE))
    return precise_xstrtod(token)


@contextlib.contextmanager
def _text_as_objects() -> Iterator[None]:
    """Text columns as plain object arrays of `str` (pandas 2's, and the official suite's,
    representation) rather than pandas 3's Arrow-backed `str` dtype: the same values, parsed
    about a third faster, since the scorers convert them to objects anyway. The switch is
    deprecated in pandas 3 and gone in 4, where this falls back to the default. The option is
    global, so one thread at a time parses (another's exit would restore it mid-parse)."""
    with _OPTION_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            pd.get_option("future.infer_string")
        except (KeyError, pd.errors.OptionError):
            yield  # pandas 4: text is always the `str` dtype
            return
        with pd.option_context("future.infer_string", False):
            yield


def record_float_column(
    tokens: list[str], parsed: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64] | None:
    """pandas 2.2's values of a float column pandas 3 parsed as `parsed` from these raw tokens
    (a part of a big file read in chunks, `large_result`), or `parsed` itself when they are
    the same or when pandas 3 is not installed; None when pandas 2.2 would keep the column's
    text (the caller then parses the whole file)."""
    if not _NEW_NUMBERS:
        return parsed
    column = _record_column(tokens, pd.Series(parsed))
    if column is None:
        return parsed
    return column if column.dtype == np.float64 else None


# A block `may_read_apart` scans at a time: the scan holds three of them (the block, the tail
# joined to it, their shapes), 48 MiB at 16 MiB, a sixth of a 5M-row pair's peak.
READ_APART_BLOCK = 4 << 20


def may_read_apart(source: BinaryIO) -> bool:
    """Whether the file holds a number pandas 3 may parse otherwise than pandas 2.2 (always
    False under pandas 2); read in blocks, so a big file is never held whole."""
    if not _NEW_NUMBERS:
        return False
    tail = b""
    while block := source.read(READ_APART_BLOCK):
        if _has_long_number(tail + block):
            return True
        tail = block[-64:]  # a number the regular expression needs is shorter than this
    return False
