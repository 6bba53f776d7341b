"""Big result CSVs read a chunk at a time into compact columns, only where provably exact.

A whole-file `pd.read_csv` of a multi-million-row result costs gigabytes once both scorings
have their Python objects. A file of at least `prediction_file.LARGE_FILE_BYTES` is therefore
read with `pd.read_csv(chunksize=...)` and kept as one NumPy array per column: numbers as
int32/int64 or float64 (NaN: missing), text as integer codes into one sorted dictionary (-1:
missing).

Chunked parsing types each chunk on its own, so the compact table is used only when the
whole-file parse is bound to give the same values; anything else returns None and the caller
parses the whole file as before:

* every chunk types a column alike: all int64 (-> int64); ints, floats and all-missing chunks
  (-> float64, ints below 2**53 so the cast is exact, as pandas' own merge of its internal
  chunks does); text and all-missing chunks (-> text, at least one text cell); anything else
  (bool, uint64, object with non-strings, text beside numbers) falls back;
* a RangeIndex throughout (no implicit index column), and no parser error in any chunk;
* no text value that pandas might type otherwise (a number, `inf`, `nan`, `True`/`False`):
  whole-file parsing splits the file at other places, and a part holding only such values
  would be typed as numbers or booleans there.

Under pandas 3 a float column's long numbers are then made pandas 2.2's (the values of
record, as `result_csv.read_result_csv` gives them) from a second chunked read of those
columns' raw text, only when the file holds such a number.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from querybench.evaluation import prediction_file
from querybench.evaluation.prediction_file import Scanned
from querybench.evaluation.spider2.result_csv import (
    may_read_apart,
    read_result_csv,
    record_float_column,
)

log = logging.getLogger(__name__)

# Rows per chunk of a file of `prediction_file.LARGE_FILE_BYTES` or more (tests lower both).
READ_CHUNK_ROWS = 100_000
# Pandas could type any text starting like this as a number or a boolean.
_TYPEABLE_TEXT = r"(?i)^\s*[-+]?\s*([0-9.]|inf|nan|true|false)"
_EXACT_INT_FLOAT = 2**53
_INT32 = np.iinfo(np.int32)


@dataclass(frozen=True)
class CompactColumn:
    """Numbers (int32/int64, or float64 with NaN for missing) or text codes (-1: missing)."""

    values: npt.NDArray[Any]
    is_text: bool


@dataclass(frozen=True)
class CompactTable:
    """A result CSV as compact columns; `exact` gives back what the pandas frame would hold."""

    columns: tuple[CompactColumn, ...]
    dictionary: npt.NDArray[np.object_]  # sorted, distinct: the text that codes stand for
    rows: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows, len(self.columns)

    def exact(self, j: int, rows: slice | npt.NDArray[np.intp] = slice(None)) -> npt.NDArray[Any]:
        """`column_arrays(frame)[j][rows]` of the whole-file frame."""
        column = self.columns[j]
        values = column.values[rows]
        if not column.is_text:
            return values.astype(np.int64 if values.dtype.kind == "i" else np.float64)
        out: npt.NDArray[Any] = self.dictionary[np.maximum(values, 0)]
        out[values < 0] = np.nan
        return out

    def to_frame(self) -> pd.DataFrame:
        """The whole-file frame's values, for comparisons with a table that is not compact."""
        return pd.DataFrame({j: self.exact(j) for j in range(len(self.columns))})


ResultTable = pd.DataFrame | CompactTable


def read_result(source: str | Path | Scanned) -> ResultTable:
    """`read_result_csv(source)`, or for a big file the same values as a `CompactTable`."""
    if isinstance(source, Scanned):
        size = source.size
    else:
        try:
            size = Path(source).stat().st_size
        except OSError:
            size = 0
    if size >= prediction_file.LARGE_FILE_BYTES:
        compact = read_compact(source, READ_CHUNK_ROWS)
        if compact is not None:
            return compact
    if isinstance(source, Scanned):
        source.handle.seek(0)
        return read_result_csv(source.handle, name=source.name)
    return read_result_csv(source)


def read_compact(source: str | Path | Scanned, chunk_rows: int) -> CompactTable | None:
    """The compact table of `source`, or None when it might differ from a whole-file parse."""
    try:
        if isinstance(source, Scanned):
            source.handle.seek(0)
        expected_rows = source.lines + 1 if isinstance(source, Scanned) else _count_newlines(source)
        csv_source = source.handle if isinstance(source, Scanned) else source
        with pd.read_csv(csv_source, chunksize=chunk_rows) as reader:
            table = _compact(reader, expected_rows)
        return _as_of_record(table, source, chunk_rows) if table is not None else None
    except Exception as exc:  # any doubt: the whole-file parse decides, errors included
        log.debug(
            "chunked CSV read gave up (%s: %s); parsing the whole file", type(exc).__name__, exc
        )
        return None


def _as_of_record(
    table: CompactTable, source: str | Path | Scanned, chunk_rows: int
) -> CompactTable | None:
    """`table` with its float columns' values pandas 2.2's (`result_csv.record_float_column`,
    a chunk of raw text at a time); None when a column would be text there."""
    floats = [j for j, c in enumerate(table.columns) if c.values.dtype == np.float64]
    if not floats or not _may_read_apart(source):
        return table
    if isinstance(source, Scanned):
        source.handle.seek(0)
    csv_source = source.handle if isinstance(source, Scanned) else source
    raw_options: dict[str, Any] = {"keep_default_na": False, "na_filter": False}
    start = 0
    with pd.read_csv(
        csv_source, dtype=object, usecols=floats, chunksize=chunk_rows, **raw_options
    ) as reader:
        for chunk in reader:
            end = start + len(chunk)
            for k, j in enumerate(floats):
                values = table.columns[j].values
                tokens = chunk.iloc[:, k].tolist()
                record = record_float_column(tokens, values[start:end])
                if record is None:
                    return None
                values[start:end] = record
            start = end
    return table if start == table.rows else None


def _may_read_apart(source: str | Path | Scanned) -> bool:
    if isinstance(source, Scanned):
        source.handle.seek(0)
        return may_read_apart(source.handle)
    with open(source, "rb") as f:
        return may_read_apart(f)


def _count_newlines(path: str | Path) -> int:
    """About the number of rows, to size each column once (a wrong guess only costs a copy)."""
    count = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 24):
            count += block.count(b"\n")
    return count + 1


class _Builder:
    """One column filled a chunk at a time into one buffer, widened only when a chunk needs it."""

    def __init__(self, capacity: int) -> None:
        self.kinds: set[str] = set()
        self.buffer = np.empty(0, dtype=np.int8)
        self.capacity = capacity
        self.filled = 0
        self.texts = 0

    def add(self, kind: str, part: npt.NDArray[Any]) -> None:
        if kind == "missing" and "text" in self.kinds:
            part = np.full(len(part), -1, dtype=np.int8)  # gaps of a text column
        elif kind == "text" and self.kinds == {"missing"}:
            self.buffer = np.full(max(self.capacity, len(self.buffer)), -1, dtype=np.int8)
        self.kinds.add(kind)
        dtype = np.result_type(self.buffer, part) if self.filled else part.dtype
        end = self.filled + len(part)
        if dtype != self.buffer.dtype or end > len(self.buffer):
            grown = np.empty(max(end, self.capacity, len(self.buffer) * 5 // 4), dtype=dtype)
            grown[: self.filled] = self.buffer[: self.filled]
            self.buffer = grown
        self.buffer[self.filled : end] = part
        self.filled = end


def _compact(chunks: Iterable[pd.DataFrame], expected_rows: int) -> CompactTable | None:
    names: list[Any] | None = None
    builders: list[_Builder] = []
    codes_of: dict[str, int] = {}
    rows = 0
    for chunk in chunks:
        index = chunk.index
        if not isinstance(index, pd.RangeIndex) or index.start != rows or index.step != 1:
            return None
        if names is None:
            names = list(chunk.columns)
            builders = [_Builder(expected_rows) for _ in names]
        elif list(chunk.columns) != names:
            return None
        rows += len(chunk)
        for builder, (_, series) in zip(builders, chunk.items(), strict=True):
            if not _add_part(builder, series, codes_of):
                return None
        del chunk
    if names is None or rows == 0:
        return None
    dictionary, recode = _sorted_dictionary(codes_of)
    if dictionary is None:
        return None
    columns = []
    for builder in builders:
        column = _finish(builder, recode)
        if column is None:
            return None
        columns.append(column)
    return CompactTable(tuple(columns), dictionary, rows)


def _add_part(builder: _Builder, series: pd.Series, codes_of: dict[str, int]) -> bool:
    dtype = series.dtype
    if dtype == np.int64:
        values = series.to_numpy()
        low, high = (int(values.min()), int(values.max())) if len(values) else (0, 0)
        fits = _INT32.min <= low and high <= _INT32.max
        exact_as_float = low > -_EXACT_INT_FLOAT and high < _EXACT_INT_FLOAT
        builder.add(
            "int" if exact_as_float else "bigint", values.astype(np.int32) if fits else values
        )
        return True
    if dtype == np.float64:
        values = series.to_numpy()
        builder.add("missing" if np.isnan(values).all() else "float", values)
        return True
    if dtype.kind == "O" or isinstance(dtype, pd.StringDtype):
        if builder.kinds - {"text", "missing"}:
            return False
        codes, uniques = pd.factorize(series)
        if not all(isinstance(u, str) for u in uniques):
            return False
        mapped = np.fromiter(
            (codes_of.setdefault(u, len(codes_of)) for u in uniques),
            dtype=np.int64,
            count=len(uniques),
        )
        part = np.where(codes >= 0, mapped[codes] if len(mapped) else -1, -1)
        builder.texts += int((codes >= 0).sum())
        builder.add("text", part.astype(_code_dtype(len(codes_of))))
        return True
    return False  # bool, uint64, anything else: not provably the whole-file type


def _sorted_dictionary(
    codes_of: dict[str, int],
) -> tuple[npt.NDArray[np.object_] | None, npt.NDArray[np.int32]]:
    """The text values in code point order (Arrow compares UTF-8 bytes) and old -> new codes."""
    texts = pa.array(list(codes_of), type=pa.string())
    if len(texts) and pc.any(pc.match_substring_regex(texts, _TYPEABLE_TEXT)).as_py():
        return None, np.zeros(0, dtype=np.int32)
    order = pc.sort_indices(texts).to_numpy()
    recode = np.empty(len(order), dtype=np.int32)
    recode[order] = np.arange(len(order), dtype=np.int32)
    dictionary = np.empty(len(order), dtype=object)
    dictionary[:] = texts.take(pa.array(order)).to_pylist()
    return dictionary, recode


def _finish(builder: _Builder, recode: npt.NDArray[np.int32]) -> CompactColumn | None:
    kinds, values = builder.kinds, builder.buffer[: builder.filled]
    if kinds <= {"int", "bigint"}:
        return CompactColumn(values, is_text=False)
    if kinds <= {"int", "float", "missing"}:
        return CompactColumn(values.astype(np.float64, copy=False), is_text=False)
    if kinds <= {"text", "missing"} and builder.texts:
        recode = recode.astype(values.dtype, copy=False)
        for start in range(0, len(values), 1 << 20):
            part = values[start : start + (1 << 20)]  # a view: recoded in place
            present = part >= 0
            part[present] = recode[part[present]]
        return CompactColumn(values, is_text=True)
    return None


def _code_dtype(size: int) -> type[np.signedinteger[Any]]:
    return np.int8 if size < 2**7 else np.int16 if size < 2**15 else np.int32
