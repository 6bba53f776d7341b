"""The rows of a big table visited in a scorer's sort order, a bounded slice at a time.

The exact order-ignoring comparisons sort each side once and compare the two sorted sequences
position by position. For millions of rows the permutation, its sort keys and the exact
columns cost several times the tables themselves, so instead:

* a *coarse key* (a uint64 per row, non-decreasing in the exact order: a row whose coarse key
  is smaller never sorts after one whose key is larger) splits the rows into about `RANGES`
  ranges, bounded by quantiles of a sample of the keys;
* each range's rows (taken in ascending row order) are sorted by the exact, stable rule (by
  their coarse keys alone when those are distinct: then no other order is possible), and the
  ranges are visited in order, which is the exact order of the whole table;
* the two sides' sequences are cut into aligned windows of equal length for the comparison.

Only one range and one window per side are held beside the compact tables. A range is bounded
by the quantiles unless many rows share one coarse key (a 64-bit number key never ties
distinct numbers; `str_order_key` ties the numbers of one integer part).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.intp]
CoarseKey = Callable[[Rows], npt.NDArray[np.uint64]]  # rows -> their coarse keys
ExactOrder = Callable[[Rows], Rows]  # ascending rows -> the stable exact order of them

RANGES = 256  # ranges per sorted side (tests lower it)
WINDOW_ROWS = 1 << 15  # rows per aligned window and per coarse-key step (tests lower it)
_GROUP = 4  # ranges picked out per scan
_SCAN_ROWS = 1 << 18
_SAMPLE_ROWS = 1 << 15
_SIGN = np.uint64(1 << 63)
_POWERS = 10 ** np.arange(19, dtype=np.int64)  # 1, 10, ..., 10**18
_INT_LIMIT = 10**18


def sorted_rows(rows: int, coarse: CoarseKey, exact: ExactOrder) -> Iterator[Rows]:
    """All `rows` row numbers in the exact order, as consecutive runs (one per range)."""
    if rows == 0:
        return
    sample = np.sort(coarse(np.arange(0, rows, max(1, rows // _SAMPLE_ROWS), dtype=np.intp)))
    cuts = (np.arange(1, RANGES) * len(sample)) // RANGES
    bounds = np.unique(sample[cuts]) if len(cuts) else sample[:0]
    ranges = np.empty(rows, dtype=np.uint8 if len(bounds) < 256 else np.uint16)
    for start in range(0, rows, WINDOW_ROWS):
        window = np.arange(start, min(rows, start + WINDOW_ROWS), dtype=np.intp)
        ranges[window] = np.searchsorted(bounds, coarse(window), side="right")
    # Ranges are picked out a group at a time: one scan of `ranges` per group, not per range.
    for first in range(0, len(bounds) + 1, _GROUP):
        in_group = rows_in(ranges, first, first + _GROUP)
        of_range = ranges[in_group].astype(np.intp) - first
        by_range = np.argsort(of_range, kind="stable")  # rows stay ascending in each range
        ends = np.cumsum(np.bincount(of_range, minlength=_GROUP))
        for members in np.split(in_group[by_range], ends[:-1]):
            if len(members):
                yield members[_exact_order(members, coarse, exact)]


def rows_in(ranges: npt.NDArray[Any], low: int, high: int) -> Rows:
    """Rows whose label is in [low, high), a step at a time (no row-long temporaries)."""
    parts = [
        np.flatnonzero((part >= low) & (part < high)) + start
        for start in range(0, len(ranges), _SCAN_ROWS)
        for part in [ranges[start : start + _SCAN_ROWS]]
    ]
    return np.concatenate(parts).astype(np.intp, copy=False)


def _exact_order(members: Rows, coarse: CoarseKey, exact: ExactOrder) -> Rows:
    keys = coarse(members)
    by_key: Rows = np.argsort(keys, kind="stable")
    if (np.diff(keys[by_key]) > 0).all():
        return by_key  # distinct coarse keys: their order is the exact order
    return exact(members)


def aligned_windows(a: Iterable[Rows], b: Iterable[Rows]) -> Iterator[tuple[Rows, Rows]]:
    """Windows of equal length, position k of one side beside position k of the other (the two
    sides must hold as many rows)."""
    return zip(_windows(a), _windows(b), strict=True)


def _windows(runs: Iterable[Rows]) -> Iterator[Rows]:
    pending: list[Rows] = []
    held = 0
    for run in runs:
        pending.append(run)
        held += len(run)
        while held >= WINDOW_ROWS:
            joined = np.concatenate(pending)
            yield joined[:WINDOW_ROWS]
            pending, held = [joined[WINDOW_ROWS:]], len(joined) - WINDOW_ROWS
    if held:
        yield np.concatenate(pending)


def number_key(values: npt.NDArray[np.float64]) -> npt.NDArray[np.uint64]:
    """Missing (NaN) first, then numbers in numeric order (-0.0 as 0.0), as unsigned ints."""
    number = values.astype(np.float64) + 0.0  # a copy; -0.0 + 0.0 == +0.0
    missing = np.isnan(number)
    bits = number.view(np.uint64)
    key = np.where(bits & _SIGN, ~bits, bits | _SIGN)
    key[missing] = 0  # -inf's key is 0x000F_FFFF_FFFF_FFFF, above 0
    return key


def str_order_key(
    values: npt.NDArray[Any],
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """A coarse key for sorting numbers by `str(x)` (the official order), without formatting.

    The key is the prefix of `str(x)` up to its first '.' (included), at most 8 bytes, as a
    big-endian integer padded with zero bytes: cutting every string by that one rule keeps
    code-point order (two strings that agree up to one's cut agree on where the other is cut).
    Where no other string can share the prefix, the padding holds the fraction's top bits.
    A missing float is the integer 0, hence "0". For ints and for floats written without an
    exponent (0, and 1e-4 <= |x| < 1e16) the prefix is the sign and the integer part's digits,
    exact in integer arithmetic; other values (rare) are formatted.

    `simple` marks the cells whose whole prefix fits: between two simple cells of one key the
    strings differ only after the '.', so they sort as their magnitudes do (floats) or are
    equal (ints of at most 8 characters).
    """
    n = len(values)
    chars = np.zeros((n, 8), dtype=np.uint8)
    is_float = values.dtype.kind == "f"
    with np.errstate(invalid="ignore"):
        magnitude = np.abs(values.astype(np.float64)) if is_float else None
        if magnitude is not None:
            regular = (magnitude == 0) | ((magnitude >= 1e-4) & (magnitude < 1e16))
            missing = np.isnan(magnitude)
            negative = np.signbit(values) & ~missing
            whole = np.where(regular, magnitude, 0).astype(np.int64)
        else:
            regular = (values > -_INT_LIMIT) & (values < _INT_LIMIT)
            missing = np.zeros(n, dtype=bool)
            negative = values < 0
            whole = np.abs(np.where(regular, values, 0)).astype(np.int64)
    digits = np.maximum(np.searchsorted(_POWERS, whole, side="right"), 1)
    offset = negative.astype(np.int64)
    chars[:, 0] = np.where(negative, ord("-"), 0)
    rows = np.arange(n)
    for k in range(8):
        shift = _POWERS[np.maximum(digits - 1 - k, 0)]
        digit = (whole // shift) % 10
        at = offset + k
        fits = (k < digits) & (at < 8)
        chars[rows[fits], at[fits]] = ord("0") + digit[fits]
    length = offset + digits + (1 if is_float else 0)
    if is_float:
        dot = regular & (length <= 8)
        chars[rows[dot], (offset + digits)[dot]] = ord(".")
    chars[missing] = 0
    chars[missing, 0] = ord("0")
    simple = regular & (length <= 8) | missing
    odd = np.flatnonzero(~regular & ~missing)
    if len(odd):
        chars[odd] = _cut(values[odd].astype(str))
    key = chars.view(">u8").reshape(n).astype(np.uint64)
    if magnitude is not None:
        # The bytes after a float's '.' order it within its integer part, by the fraction (the
        # strings differ only there). Not after a single nonzero digit: "1.5e-05" shares "1.".
        spare = 8 * (8 - length)
        refine = simple & ~missing & ((whole == 0) | (digits > 1))
        fraction = magnitude[refine] - whole[refine]  # exact: the integer part of a float
        step = np.ldexp(1.0, spare[refine].astype(np.int32))
        key[refine] |= np.floor(fraction * step).astype(np.uint64)
    return key, simple


def _cut(texts: npt.NDArray[np.str_]) -> npt.NDArray[np.uint8]:
    """`str_order_key`'s cut of formatted cells, as 8 bytes each."""
    cut = [t[: t.index(".") + 1] if "." in t else t for t in texts.tolist()]
    return np.frombuffer(np.array(cut, dtype="S8").tobytes(), dtype=np.uint8).reshape(-1, 8)


def packed_key(
    rows: int, parts: Sequence[tuple[Callable[[], npt.NDArray[np.uint64]], int]]
) -> npt.NDArray[np.uint64]:
    """Lexicographic keys (each `(make_key, width)`, key < 2**width) packed into 64 bits:
    whole keys while they fit, then the top bits of the next one (later keys are not made)."""
    out = np.zeros(rows, dtype=np.uint64)
    free = 64
    for make_key, width in parts:
        take = min(width, free)
        if take == 0:
            break
        out |= (make_key() >> np.uint64(width - take)) << np.uint64(free - take)
        free -= take
        if take < width:
            break
    return out
