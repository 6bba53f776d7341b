"""Both Spider 2.0 scorings on `CompactTable`s, verdict for verdict those of the exact path.

Each column pair is decided without materialising whole columns where that is provable:

* in row order, a chunk of rows at a time through the exact scorers (each cell decides alone);
* ignoring order, equal multisets of cell keys (compared bucket by bucket: sorted key runs of
  1/16 of the rows) mean identical sorted columns, hence a match under both scorings; for text
  columns the multisets decide alone, since text cells only match equal text;
* numbers ignoring order with unequal multisets: no tolerance-respecting pairing can exist when
  the infinities, minimum, maximum or sum differ by more than any pairing allows (the sorted
  pairing minimises the largest difference), which rejects unrelated columns cheaply;
* otherwise (a near miss, say) each side is visited in the exact scorer's sort order a bounded
  slice at a time (`large_order`) and the sorted sequences are compared window by window with
  the exact cell rules, which is the exact comparison without its whole-column temporaries.

Mixed pairs (one table compact, one a DataFrame) compare the compact table's exact frame.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from querybench.evaluation.spider2 import official, strict
from querybench.evaluation.spider2.large_order import (
    Rows,
    aligned_windows,
    number_key,
    packed_key,
    rows_in,
    sorted_rows,
    str_order_key,
)
from querybench.evaluation.spider2.large_result import CompactTable, ResultTable

CHUNK_ROWS = 1 << 18  # rows per step of an in-order comparison (tests lower it)
BUCKET_BITS = 6  # multisets compared in 2**BUCKET_BITS hash buckets
_KEY_ROWS = 1 << 18  # rows hashed per step
_MIX = np.uint64(0x9E3779B97F4A7C15)
_NAN_BITS = np.array([np.nan]).view(np.uint64)[0]

Keys = Callable[[Any], list[npt.NDArray[np.uint64]]]  # rows -> one key array per column


def official_match(
    pred: ResultTable, gold: ResultTable, condition_cols: Any, ignore_order: bool, variant: Any
) -> bool:
    """`official.table_match` for tables of which at least one is compact."""
    if not isinstance(pred, CompactTable) or not isinstance(gold, CompactTable):
        pred_frame = pred.to_frame() if isinstance(pred, CompactTable) else pred
        gold_frame = gold.to_frame() if isinstance(gold, CompactTable) else gold
        columns = official.official_columns(pred_frame)
        return official.table_match(columns, gold_frame, condition_cols, ignore_order, variant)
    positions = official.compared_positions(gold.shape[1], condition_cols, variant)
    pair = _Pair(pred, gold)
    pred_cols = list(range(pred.shape[1]))
    return all(
        any(pair.official(g, positions, p, pred_cols, ignore_order) for p in pred_cols)
        for g in positions
    )


def strict_match(
    pred: ResultTable, gold: ResultTable, cols: list[int] | None, ignore_order: bool
) -> bool:
    """`strict_table_match` of pred against gold's columns `cols` (None: all), one compact."""
    if not isinstance(pred, CompactTable) or not isinstance(gold, CompactTable):
        pred_frame = pred.to_frame() if isinstance(pred, CompactTable) else pred
        gold_frame = gold.to_frame() if isinstance(gold, CompactTable) else gold
        projected = gold_frame if cols is None else gold_frame.iloc[:, cols]
        return strict.strict_table_match(
            strict.strict_columns(pred_frame), strict.strict_columns(projected), ignore_order
        )
    positions = list(range(gold.shape[1])) if cols is None else cols
    if not positions:
        return True
    if pred.rows != gold.rows or pred.shape[1] < len(positions):
        return False
    pair = _Pair(pred, gold)
    return strict.assign_columns(
        len(positions),
        pred.shape[1],
        lambda i, j: pair.strict(positions[i], j, ignore_order),
        lambda chosen: pair.strict_rows([positions[i] for i in range(len(chosen))], chosen),
        ignore_order,
    )


def _official_dtype(table: CompactTable, cols: Sequence[int]) -> np.dtype[Any]:
    """The common dtype `.values` gives these columns (object beside any text)."""
    columns = [table.columns[j] for j in cols]
    if any(c.is_text for c in columns):
        return np.dtype(object)
    kinds = [np.int64 if c.values.dtype.kind == "i" else np.float64 for c in columns]
    return np.result_type(*kinds)


class _Pair:
    """A prediction and a gold table, with text codes mapped into one shared dictionary."""

    def __init__(self, pred: CompactTable, gold: CompactTable) -> None:
        self.pred, self.gold = pred, gold
        shared = np.union1d(pred.dictionary, gold.dictionary)
        self._shared = len(shared)
        # A trailing -1 lets code -1 (missing) map to -1.
        self._luts = {
            id(t): np.append(np.searchsorted(shared, t.dictionary), -1).astype(np.int64)
            for t in (pred, gold)
        }

    # -- official --------------------------------------------------------------------------

    def official(
        self, g: int, g_cols: list[int], p: int, p_cols: list[int], ignore_order: bool
    ) -> bool:
        gold, pred = self.gold, self.pred
        g_dtype, p_dtype = _official_dtype(gold, g_cols), _official_dtype(pred, p_cols)
        exact = _official_column
        if gold.rows != pred.rows:
            return False
        g_col, p_col = gold.columns[g], pred.columns[p]
        if g_col.is_text != p_col.is_text:
            return False  # a text column has a text cell, which no number equals
        if not ignore_order:
            return all(
                official.vectors_match(
                    exact(gold, g, g_dtype, w), exact(pred, p, p_dtype, w), ignore_order=False
                )
                for w in _windows(gold.rows)
            )
        if g_col.is_text:
            return self._same_counts(g, p)
        g_float = g_dtype.kind == "f" or (g_dtype.kind == "O" and g_col.values.dtype.kind == "f")
        p_float = p_dtype.kind == "f" or (p_dtype.kind == "O" and p_col.values.dtype.kind == "f")
        if g_float == p_float and self._same_multiset(
            _number_keys(g_col.values, g_float, signed_zero=True),
            _number_keys(p_col.values, p_float, signed_zero=True),
        ):
            return True  # identical str keys: identical sorted columns
        if _no_pairing(g_col.values, p_col.values, official.REL_TOL, missing_is_zero=True):
            return False
        return all(
            official.vectors_match(
                exact(gold, g, g_dtype, gi), exact(pred, p, p_dtype, pi), ignore_order=False
            )
            for gi, pi in aligned_windows(
                _official_sorted(gold, g, g_dtype), _official_sorted(pred, p, p_dtype)
            )
        )

    # -- strict ----------------------------------------------------------------------------

    def strict(self, g: int, p: int, ignore_order: bool) -> bool:
        gold, pred = self.gold, self.pred
        g_col, p_col = gold.columns[g], pred.columns[p]
        if g_col.is_text != p_col.is_text:
            return False  # kinds TEXT and NUMBER never pair up
        if not ignore_order:
            return all(
                strict.strict_table_match(
                    strict.strict_columns([pred.exact(p, w)]),
                    strict.strict_columns([gold.exact(g, w)]),
                    ignore_order=False,
                )
                for w in _windows(gold.rows)
            )
        if g_col.is_text:
            return self._same_counts(g, p)
        if self._same_multiset(
            _number_keys(g_col.values, True, signed_zero=False),
            _number_keys(p_col.values, True, signed_zero=False),
        ):
            return True
        if _no_pairing(g_col.values, p_col.values, official.REL_TOL, missing_is_zero=False):
            return False
        return self._strict_sorted([g], [p])  # one column: the sorted pairing decides

    def strict_rows(self, g_cols: list[int], p_cols: tuple[int, ...]) -> bool:
        """Rows as a multiset, gold column g_cols[i] against predicted column p_cols[i]."""
        gold_keys, pred_keys = self._row_keys(self.gold, g_cols), self._row_keys(self.pred, p_cols)
        if self._same_multiset(gold_keys, pred_keys) or self._strict_sorted(g_cols, p_cols):
            return True
        if len(g_cols) == 1 or self.gold.rows > strict.MAX_BIPARTITE_ROWS:
            return False  # where `rows_match_as_multiset` trusts the sorted pairing alone
        return strict.rows_match_as_multiset(  # a small table: its one-to-one pairing search
            strict.strict_columns([self.pred.exact(j) for j in p_cols]),
            strict.strict_columns([self.gold.exact(j) for j in g_cols]),
        )

    def _strict_sorted(self, g_cols: Sequence[int], p_cols: Sequence[int]) -> bool:
        """Whether both sides' rows, each sorted as `rows_match_as_multiset` sorts them, are
        equal cell for cell (gold column g_cols[i] beside predicted column p_cols[i])."""
        for gi, pi in aligned_windows(
            self._strict_order(self.gold, g_cols), self._strict_order(self.pred, p_cols)
        ):
            at = np.arange(len(gi))
            gold = strict.strict_columns([self.gold.exact(j, gi) for j in g_cols])
            pred = strict.strict_columns([self.pred.exact(j, pi) for j in p_cols])
            if not all(
                strict.cells_equal(a, b, at, at).all() for a, b in zip(gold, pred, strict=True)
            ):
                return False
        return True

    def _strict_order(self, table: CompactTable, cols: Sequence[int]) -> Iterator[Rows]:
        """Rows in `strict`'s multiset order: by each column in turn, a number column
        by (missing first, value), a text column by (missing first, text), i.e. by
        `number_key` and by shared code."""
        lut = self._luts[id(table)]

        def key(j: int, rows: Rows) -> npt.NDArray[np.uint64]:
            column = table.columns[j]
            if column.is_text:
                codes: npt.NDArray[np.int64] = lut[column.values[rows]] + 1
                return codes.astype(np.uint64)
            return number_key(table.exact(j, rows).astype(np.float64))

        def width(j: int) -> int:
            return self._shared.bit_length() if table.columns[j].is_text else 64

        def coarse(rows: Rows) -> npt.NDArray[np.uint64]:
            parts = [(functools.partial(key, j, rows), width(j)) for j in cols]
            return packed_key(len(rows), parts)

        def exact(rows: Rows) -> Rows:
            order: Rows = np.lexsort([key(j, rows) for j in reversed(cols)])
            return order

        return sorted_rows(table.rows, coarse, exact)

    # -- keys and multisets ----------------------------------------------------------------

    def _text_keys(self, table: CompactTable, j: int) -> Keys:
        lut, codes = self._luts[id(table)], table.columns[j].values
        return lambda rows: [lut[codes[rows]].view(np.uint64)]

    def _row_keys(self, table: CompactTable, cols: Sequence[int]) -> Keys:
        parts = [
            self._text_keys(table, j)
            if table.columns[j].is_text
            else _number_keys(table.columns[j].values, True, signed_zero=False)
            for j in cols
        ]
        return lambda rows: [key for part in parts for key in part(rows)]

    def _same_counts(self, g: int, p: int) -> bool:
        """Whether gold text column g and predicted column p hold the same values as often."""
        counts = []
        for table, j in ((self.gold, g), (self.pred, p)):
            lut, codes = self._luts[id(table)], table.columns[j].values
            total = np.zeros(self._shared + 1, dtype=np.int64)
            for window in _windows(len(codes)):
                total += np.bincount(lut[codes[window]] + 1, minlength=self._shared + 1)
            counts.append(total)
        return bool(np.array_equal(counts[0], counts[1]))

    def _same_multiset(self, a: Keys, b: Keys) -> bool:
        """Whether a's key tuples and b's are equal multisets (rows counted alike)."""
        a_buckets, b_buckets = _buckets(a, self.gold.rows), _buckets(b, self.pred.rows)
        for bucket in range(1 << BUCKET_BITS):
            a_rows = rows_in(a_buckets, bucket, bucket + 1)
            b_rows = rows_in(b_buckets, bucket, bucket + 1)
            if len(a_rows) != len(b_rows):
                return False
            a_keys, b_keys = a(a_rows), b(b_rows)
            a_order, b_order = np.lexsort(a_keys[::-1]), np.lexsort(b_keys[::-1])
            for x, y in zip(a_keys, b_keys, strict=True):
                if not np.array_equal(x[a_order], y[b_order]):
                    return False
        return True


def _official_column(
    table: CompactTable, j: int, dtype: np.dtype[Any], rows: Any
) -> official.OfficialColumn:
    """Column j's `rows` as the official scorer sees them in a frame of common `dtype`."""
    values = table.exact(j, rows)
    if dtype.kind in "biuf":  # the frame's common dtype is numeric: `.values` casts
        values = values.astype(dtype, copy=False)
    return official.official_columns([values])[0]


def _official_sorted(table: CompactTable, j: int, dtype: np.dtype[Any]) -> Iterator[Rows]:
    """Column j's rows in `OfficialColumn.order()`'s order (by `str(x)`; numbers only here),
    formatting cells only where `str_order_key` cannot tell their order."""

    def cells(rows: Rows) -> npt.NDArray[Any]:
        values = table.exact(j, rows)
        return values.astype(dtype, copy=False) if dtype.kind in "biuf" else values

    def exact(rows: Rows) -> Rows:
        values = cells(rows)
        key, simple = str_order_key(values)
        if not simple.all():
            return official.official_columns([values])[0].order()
        magnitude = np.abs(np.nan_to_num(values.astype(np.float64)))
        order: Rows = np.lexsort((magnitude, key))
        return order

    return sorted_rows(table.rows, lambda rows: str_order_key(cells(rows))[0], exact)


def _windows(rows: int) -> list[slice]:
    return [slice(start, start + CHUNK_ROWS) for start in range(0, rows, CHUNK_ROWS)]


def _number_keys(values: npt.NDArray[Any], as_float: bool, signed_zero: bool) -> Keys:
    """Keys equal exactly when `str(x)` is (official: ints stay ints, -0.0 is not 0.0) or,
    with `signed_zero=False`, when the strict scorer sees the same value (1 == 1.0 == 1.0e0)."""

    def keys(rows: Any) -> list[npt.NDArray[np.uint64]]:
        part = values[rows]
        if not as_float:
            return [part.astype(np.int64).view(np.uint64)]
        number = part.astype(np.float64)
        if not signed_zero:
            number += 0.0  # -0.0 + 0.0 == +0.0
        bits = number.view(np.uint64)
        bits[np.isnan(number)] = _NAN_BITS
        return [bits]

    return keys


def _buckets(keys: Keys, rows: int) -> npt.NDArray[np.uint8]:
    out = np.empty(rows, dtype=np.uint8)
    for window in [slice(start, start + _KEY_ROWS) for start in range(0, rows, _KEY_ROWS)]:
        mixed = np.zeros(len(range(rows)[window]), dtype=np.uint64)
        for key in keys(window):
            mixed = (mixed ^ key) * _MIX
            mixed ^= mixed >> np.uint64(29)
        out[window] = (mixed >> np.uint64(64 - BUCKET_BITS)).astype(np.uint8)
    return out


def _no_pairing(
    a: npt.NDArray[Any], b: npt.NDArray[Any], rel_tol: float, missing_is_zero: bool
) -> bool:
    """True when provably no one-to-one pairing keeps every pair within the tolerance."""
    sa, sb = _stats(a, missing_is_zero), _stats(b, missing_is_zero)
    if sa[:3] != sb[:3]:
        return True  # missing / +inf / -inf only pair with their own kind
    if sa[3] == 0:
        return False
    low_a, high_a, sum_a, abs_a, big_a = sa[4:]
    low_b, high_b, sum_b, abs_b, big_b = sb[4:]
    bound = max(official.ABS_TOL, rel_tol * max(big_a, big_b)) * 1.001
    if not all(np.isfinite([bound, sum_a, sum_b, abs_a, abs_b])):
        return False
    slack = sa[3] * bound + 1e-9 * (abs_a + abs_b)
    return bool(
        abs(low_a - low_b) > bound or abs(high_a - high_b) > bound or abs(sum_a - sum_b) > slack
    )


def _stats(values: npt.NDArray[Any], missing_is_zero: bool) -> tuple[Any, ...]:
    """(missing, +inf, -inf, finite count, min, max, sum, sum of |x|, max |x|), by chunks."""
    missing = pinf = ninf = finite = 0
    low, high, total, total_abs, big = np.inf, -np.inf, 0.0, 0.0, 0.0
    for window in _windows(len(values)):
        part = values[window].astype(np.float64)
        nan = np.isnan(part)
        if missing_is_zero:
            part[nan] = 0.0
        else:
            missing += int(nan.sum())
        pinf += int(np.isposinf(part).sum())
        ninf += int(np.isneginf(part).sum())
        part = part[np.isfinite(part)]
        if len(part):
            finite += len(part)
            low, high = min(low, float(part.min())), max(high, float(part.max()))
            total += float(part.sum())
            magnitude = np.abs(part)
            total_abs += float(magnitude.sum())
            big = max(big, float(magnitude.max()))
    return missing, pinf, ninf, finite, low, high, total, total_abs, big
