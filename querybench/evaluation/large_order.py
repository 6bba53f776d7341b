"""The rows of a big table visited in a scorer's sort order, a bounded slice at a time.

The exact order-ignoring comparisons sort each side once and compare the two sorted sequences
position by position. For millions of rows the permutation, its sort keys and the exact
columns cost several times the tables themselves, so instead:

* a *coarse key* (a uint64 per row, non-decreasing in the exact order: a row whose coarse key
  is smaller never sorts after one whose key is larger) splits the rows into about `RANGES`
  ranges, bounded by quantiles of a sample of the keys;
* each range's rows (taken in ascending row order) are sorted by the exact, stable rule, and
  the ranges are visited in order, which is the exact order of the whole table;
* the two sides' sequences are cut into aligned windows of equal length for the comparison.

Only one range and one window per side are held beside the compact tables. A range is bounded
by the quantiles unless a quarter of the rows or so share one coarse key; the keys are chosen
to make that rare (8 bytes of text, all the bits of a number).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.intp]
CoarseKey = Callable[[Rows], npt.NDArray[np.uint64]]  # rows -> their coarse keys
ExactOrder = Callable[[Rows], Rows]  # ascending rows -> the stable exact order of them

RANGES = 64  # ranges per sorted side (tests lower it)
WINDOW_ROWS = 1 << 18  # rows per aligned window and per coarse-key step (tests lower it)
_SAMPLE_ROWS = 1 << 16
_SIGN = np.uint64(1 << 63)


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
    for r in range(len(bounds) + 1):
        members = np.flatnonzero(ranges == r)
        if len(members):
            yield members[exact(members)]


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


def text_prefix_key(texts: npt.NDArray[np.object_]) -> npt.NDArray[np.uint64]:
    """The first 8 bytes of each ASCII text, big-endian (shorter texts padded with zero bytes,
    so the key never decreases in code-point order)."""
    return texts.astype("S8").view(">u8").astype(np.uint64)


def packed_key(
    rows: int, parts: list[tuple[Callable[[], npt.NDArray[np.uint64]], int]]
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
