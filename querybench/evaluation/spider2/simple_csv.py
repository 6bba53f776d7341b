"""The common result CSV read without pandas' tokenizer, only where its values are certain.

Most result CSVs are plain: UTF-8 without a byte order mark, one record a row, no control
character but tabs and line ends, every row as many fields as the header, distinct non-empty
names. Lines end in `\\n` or `\\r\\n`. A field may be quoted as pandas' tokenizer reads it:
opened by a `"` as its first character, `""` inside it one quote, delimiters, line ends and
a `\\r` alone inside it its own text, closed by a `"` just before a delimiter or a line end;
the cell is then its text inside the quotes, typed like any other (`"1"` is 1, `"NA"`
missing, `"1\\n"` 1).
Each column of such a file is typed here as `pd.read_csv` (defaults) types it, the values of
record (`result_csv`) with it:

* every cell plain digits with an optional minus, at most 18 of them: int64; up to 100 of
  them: int64 when every value fits, else uint64 when every one does and none has a minus,
  else objects of `str`, every cell as it is (pandas 2.2 keeps the text);
* the same with missing cells (pandas' default missing texts), at most 15 digits: float64,
  each integer exact (no `-0`: pandas 3 makes it 0.0, pandas 2.2's float parse -0.0);
* plain decimals (`record_floats.precise_xstrtod` reads every one of them), at most 18 digits
  before the point, integers beside them, missing cells: float64, pandas 2.2's values; with
  longer runs of digits and no missing cell, the same where pandas 2.2's integer parse meets a
  decimal before any integer overflows; where an integer past uint64 comes first, objects of
  `str`, every cell as it is (pandas 2.2 keeps the text);
* text with at least one cell that no parse of pandas takes for a number or a boolean (so
  the column is text, every cell as it is), missing cells as NaN: objects of `str` (not
  beside a run of 19 digits: pandas may then keep the missing texts as they are);
* every cell missing: float64, all NaN;
* every cell one of pandas' boolean texts (`True`, `TRUE`, `true`, the same of `False`):
  bool; with missing cells beside them, objects of `bool` and NaN;
* a header alone: no row, every column of objects.

A row of fewer fields than the header (unquoted files) has its last fields missing, as pandas
reads it.

pandas types the rows of a big file a chunk at a time (`_chunk_rows`) and joins the chunks;
so does this reader, where every chunk of a column has one dtype.

Anything else (text after a closing quote, a quote inside an unquoted field, a quote never
closed, a `\\r` not before `\\n` outside quotes, a control character but a tab, a blank
line (spaces and tabs alone too), a name repeated, empty or with a space around it, an
integer beyond 18 digits beside missing cells, or among decimals overflowing int64 first but
not uint64, `inf` or a `+` among numbers, a column with a line end in a cell and no cell of
text, chunks of a column of dtypes apart...) returns None, and the file is parsed by pandas
as before.
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
import operator
import re
from typing import Any

import numpy as np
import numpy.typing as npt

from querybench.evaluation.spider2.record_floats import (
    decimal_floats,
    plain_floats,
    precise_xstrtod,
)

# pandas' default missing-value texts (`pandas._libs.parsers.STR_NA_VALUES`, checked by a test)
NA_TEXTS = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)
# a column's present cells joined by newlines, tested at once
_INTS = re.compile(r"-?[0-9]{1,18}(?:\n-?[0-9]{1,18})*")
_SHORT_INTS = re.compile(r"-?[0-9]{1,15}(?:\n-?[0-9]{1,15})*")
_LONG_INTS = re.compile(r"-?[0-9]{1,100}(?:\n-?[0-9]{1,100})*")
_NUMBER = r"-?(?:[0-9]{1,18}(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?"
_NUMBERS = re.compile(f"{_NUMBER}(?:\\n{_NUMBER})*")
# the same with runs of up to 100 digits before the point
_LONG_NUMBER = r"-?(?:[0-9]{1,100}(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?"
_LONG_NUMBERS = re.compile(f"{_LONG_NUMBER}(?:\\n{_LONG_NUMBER})*")
# a superset of what any parse of pandas reads as a number (spaces, a sign, digits and points,
# an exponent) or as infinity, NaN or a boolean
_MAYBE_NUMBER = re.compile(r"[ \t\n\v\f\r]*[-+]?[0-9]*\.?[0-9]*(?:[eE][-+]?[0-9]*)?[ \t\n\v\f\r]*")
_SPACES = " \t\n\v\f\r"  # what pandas' number parses skip around a number (`isspace_ascii`)
_WORDS = frozenset({"inf", "infinity", "nan", "true", "false"})
# pandas' boolean texts (`true_values`, `false_values` left as they are)
_TRUE = frozenset({"True", "TRUE", "true"})
_BOOLEANS = _TRUE | {"False", "FALSE", "false"}
# a run of digits that may lie past int64: pandas' inference, having seen one, may give back
# the column's raw texts, missing ones too, so text beside missing cells with one is left to it
_LONG_DIGITS = re.compile(r"[0-9]{19}")


def _refused(token: str) -> bool:
    """Whether every parse of pandas refuses this cell as a number and as a boolean, so that a
    column holding it is kept as text, every cell as it is."""
    if _MAYBE_NUMBER.fullmatch(token):
        return False
    return token.strip(_SPACES).lstrip("+-").lower() not in _WORDS


_COMMAS = operator.methodcaller("count", ",")
# control characters but tabs and line ends (a `\r` before a `\n`: one line end)
_UNSAFE_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# every other byte: what `bytes.translate` deletes, leaving the unsafe ones (ten times the
# speed of the pattern's search over a whole file)
_SAFE_BYTES = bytes(b for b in range(256) if not _UNSAFE_BYTES.fullmatch(bytes([b])))
# a whole file of fields as pandas' tokenizer reads them with quotes: each quoted from its
# first character to a closing quote just before a delimiter or a line end, or unquoted
# without a quote; blank lines and rows of another width are refused after `csv` reads it
_FIELD = r'(?:"[^"]*+(?:""[^"]*+)*+"|[^,"\r\n]*+)'
_QUOTED_FILE = re.compile(f"{_FIELD}(?:(?:,|\r?\n){_FIELD})*+")
# a line of spaces and tabs alone (after the header; or inside a quoted field)
_SPACES_LINE = re.compile(r"\n[ \t]+(?:\r?\n|$)")


def read_simple(data: bytes) -> tuple[list[str], list[npt.NDArray[Any]]] | None:
    """The column names and arrays `read_result_csv` gives for `data`, or None when this file
    is not one of the plain kind (the caller parses it with pandas)."""
    if not data or data.startswith(b"\xef\xbb\xbf") or data.translate(None, _SAFE_BYTES):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if '"' in text:
        return _quoted(text)  # a `\r` alone inside quotes is text; outside, `_QUOTED_FILE` fails
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        return None  # a `\r` alone: a line end to pandas
    if "\r" in text:
        text = text.replace("\r\n", "\n")  # every `\r` ends a line here: one line end
    if text.endswith("\n"):
        text = text[:-1]
    lines = text.split("\n")
    names = lines[0].split(",")
    width = len(names)
    if not _plain_names_and_lines(names, text):
        return None
    if len(lines) == 1:
        return _header_alone(names)
    if "" in lines:
        return None  # a blank line, which pandas skips
    commas = list(map(_COMMAS, lines))
    if max(commas) != width - 1:
        return None  # a row longer than the header
    if min(commas) < width - 1:  # a short row: pandas makes its last fields missing
        lines = [line + "," * (width - 1 - n) for line, n in zip(lines, commas, strict=True)]
    cells: list[str] = ",".join(lines[1:]).split(",")
    return _typed(names, cells, False)


def _quoted(text: str) -> tuple[list[str], list[npt.NDArray[Any]]] | None:
    """`read_simple` of a file with a quote: its fields as `csv` reads them (the very fields of
    pandas' tokenizer, once `_QUOTED_FILE` holds the whole file)."""
    if not _QUOTED_FILE.fullmatch(text):
        return None
    try:
        records = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error:  # a field beyond `csv.field_size_limit`
        return None
    if not records:
        return None
    names = records[0]
    width = len(names)
    if not _plain_names_and_lines(names, text) or any(len(r) != width for r in records):
        return None  # a blank line is a record of no field
    if len(records) == 1:
        return _header_alone(names)
    cells = list(itertools.chain.from_iterable(records[1:]))
    return _typed(names, cells, True)


def _plain_names_and_lines(names: list[str], text: str) -> bool:
    """Whether pandas keeps these names as they are (no `Unnamed: 0`, no `a.1`), none with a
    space around it, and skips no line of the file's `text` but empty ones (a line of spaces
    and tabs alone, in a file of one column, is blank to pandas too)."""
    if "" in names or len(set(names)) != len(names):
        return False
    if len(names) == 1 and _SPACES_LINE.search(text):
        return False
    return all(n == n.strip() for n in names)


def _header_alone(names: list[str]) -> tuple[list[str], list[npt.NDArray[Any]]]:
    """A file of names and no row: pandas' columns of objects, empty."""
    return names, [np.empty(0, dtype=object) for _ in names]


def _typed(
    names: list[str], cells: list[str], quoted: bool
) -> tuple[list[str], list[npt.NDArray[Any]]] | None:
    width = len(names)
    chunk = _chunk_rows(width)
    arrays = []
    for j in range(width):
        tokens = cells[j::width]
        if len(tokens) <= chunk:
            column = _column(tokens, quoted)
        else:
            column = _chunked_column(tokens, quoted, chunk)
        if column is None:
            return None
        arrays.append(column)
    return names, arrays


@functools.cache
def _chunk_rows(width: int) -> int:
    """The rows pandas' tokenizer types at a time in a file of `width` columns (`low_memory`:
    `TextReader.buffer_lines`: the largest power of two whose double is below `2**20 // width`)."""
    most = 2**20 // width
    rows = 1
    while rows * 2 < most:
        rows *= 2
    return rows


def _chunked_column(tokens: list[str], quoted: bool, chunk: int) -> npt.NDArray[Any] | None:
    """A column of more rows than pandas types at a time: each chunk typed apart and joined,
    as pandas does, when every chunk has the same dtype (else pandas casts them to a common
    one, each chunk's values otherwise: left to it)."""
    parts: list[npt.NDArray[Any]] = []
    for start in range(0, len(tokens), chunk):
        part = _column(tokens[start : start + chunk], quoted)
        if part is None or (parts and part.dtype != parts[0].dtype):
            return None
        parts.append(part)
    return np.concatenate(parts)


def _column(tokens: list[str], quoted: bool) -> npt.NDArray[Any] | None:
    missing = not NA_TEXTS.isdisjoint(tokens)
    present = [t for t in tokens if t not in NA_TEXTS] if missing else tokens
    if not present:
        return np.full(len(tokens), np.nan)  # every cell missing: floats
    joined = "\n".join(present)
    # a quoted cell may hold a line end: then the numbers' patterns do not see cells apart
    numbers = not quoted or (joined.count("\n") == len(present) - 1 and "\r" not in joined)
    if numbers and _INTS.fullmatch(joined):
        if not missing:
            return np.array(list(map(int, present)), dtype=np.int64)
        if not _SHORT_INTS.fullmatch(joined) or "\n-0" in f"\n{joined}":
            return None  # a -0 may be 0.0 or -0.0 as the version of pandas reads it
        return np.array([np.nan if t in NA_TEXTS else float(int(t)) for t in tokens])
    if numbers and not missing and _LONG_INTS.fullmatch(joined):
        return _long_ints(present)
    if numbers and _NUMBERS.fullmatch(joined):
        return _floats(tokens, missing, joined)
    if numbers and not missing and _LONG_NUMBERS.fullmatch(joined):
        # a run of 19 digits or more among decimals: pandas 2.2's int64 parse stops at its
        # first bad cell. A decimal there (no integer overflowed before it) makes it read
        # every cell as a float; an overflow there, then one in its uint64 parse, keeps the
        # text; any other way (a minus, a decimal first in the uint64 parse) is left to pandas
        signed = first_int_error(present)
        if signed == "invalid":
            return _floats(tokens, False, joined)
        if signed == "overflow" and first_uint_error(present) == "overflow":
            return text_column(tokens, na_filter=False)
        return None
    if _BOOLEANS.issuperset(present):
        if not missing:
            return np.array([t in _TRUE for t in tokens], dtype=np.bool_)
        out = np.empty(len(tokens), dtype=object)
        out[:] = [np.nan if t in NA_TEXTS else t in _TRUE for t in tokens]
        return out
    if not any(map(_refused, present)):
        return None  # no cell that every parse of pandas refuses: left to pandas
    if missing and _LONG_DIGITS.search(joined):
        return None
    return text_column(tokens, na_filter=missing)


def text_column(tokens: list[str], na_filter: bool) -> npt.NDArray[np.object_]:
    """A column of objects, each cell its text (with `na_filter`, the missing texts NaN)."""
    out = np.empty(len(tokens), dtype=object)
    out[:] = [np.nan if t in NA_TEXTS else t for t in tokens] if na_filter else tokens
    return out


def _long_ints(tokens: list[str]) -> npt.NDArray[Any]:
    """Integers of up to 100 digits, none missing: int64 when every one fits, else uint64 when
    every one does and none has a minus (pandas' second try), else the column's text, as
    pandas 2.2 keeps it (`result_csv._record_column`; pandas 3 makes Python ints)."""
    values = list(map(int, tokens))
    if min(values) >= -(2**63) and max(values) < 2**63:
        return np.array(values, dtype=np.int64)
    if max(values) < 2**64 and not any(t.startswith("-") for t in tokens):
        return np.array(values, dtype=np.uint64)
    return text_column(tokens, na_filter=False)


def _floats(tokens: list[str], missing: bool, joined: str) -> npt.NDArray[np.float64] | None:
    """pandas 2.2's floats (`precise_xstrtod`) of plain decimal tokens and missing cells: a
    token of at most 15 characters without an exponent is correctly rounded by both parsers
    (at most 15 digits scaled by at most 10**14), so Python's `float` reads it; the longer
    ones are read at once, by `decimal_floats` in a column without an exponent, else by
    `plain_floats`, those it leaves (a scale beyond 10**±308) one at a time; one beyond the
    double range leaves the file to pandas (pandas 2.2 keeps the text).
    `joined`: the present cells joined, which tells whether any has an exponent."""
    if missing:
        tokens = ["nan" if t in NA_TEXTS else t for t in tokens]
    values = np.array(list(map(float, tokens)))
    if "e" not in joined and "E" not in joined:  # lengths alone decide, read in C
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        at = np.flatnonzero(lengths > 15)
        if len(at):  # plain decimals, every one of them
            values[at] = decimal_floats([tokens[i] for i in at.tolist()])
        return values
    long = [i for i, t in enumerate(tokens) if len(t) > 15 or "e" in t or "E" in t]
    if long:
        exact, plain = plain_floats([tokens[i] for i in long])
        values[long] = exact
        for k in np.flatnonzero(~plain).tolist():
            value = precise_xstrtod(tokens[long[k]])
            if value is None:
                return None
            values[long[k]] = value
    return values


def first_int_error(tokens: list[str]) -> str:
    """The first of the tokens' `int_error`s ("" if none): plain digits, up to 18 of them,
    are an int64 without a look."""
    for token in tokens:
        if len(token) <= 18 and token.isdigit() and token.isascii():
            continue
        if error := int_error(token):
            return error
    return ""


def int_error(token: str, bound: int = (1 << 63) - 1) -> str:
    """pandas' `str_to_int64`: "" for an integer in range, "overflow", or "invalid"."""
    s = token.lstrip(_SPACES)
    negative = s.startswith("-")
    s = s[1:] if s[:1] in ("-", "+") else s
    digits = len(s) - len(s.lstrip("0123456789"))
    if digits == 0:
        return "invalid"
    if int(s[:digits]) > bound + negative:
        return "overflow"  # found before the text after the digits
    return "" if not s[digits:].strip(_SPACES) else "invalid"


def first_uint_error(tokens: list[str]) -> str:
    """The first of the tokens' `uint_error`s ("" if none)."""
    return next(filter(None, map(uint_error, tokens)), "")


def uint_error(token: str) -> str:
    """pandas' `str_to_uint64` (a negative number is no error here: the caller sees it)."""
    if token.lstrip(_SPACES).startswith("-"):
        return ""
    return int_error(token, (1 << 64) - 1)
