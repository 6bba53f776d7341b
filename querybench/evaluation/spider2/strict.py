"""The strict Spider 2.0 table comparison: what a passing score should mean.

Differences from the official comparison, each a flaw it fixes:

* a missing cell equals only a missing cell (officially missing becomes 0, so NULL == 0);
* numbers compare exactly as the official compares them (`official.isclose`: `math.isclose`
  with `abs_tol=1e-2` and its default `rel_tol=1e-9`), never more loosely, so a strict pass is
  never an official numeric failure; booleans are not numbers, and everything else compares
  by `str()`;
* each gold column needs its *own* predicted column (officially one predicted column may
  satisfy several gold columns);
* rows must match as whole rows: as a multiset (a one-to-one pairing) when order is ignored,
  position by position otherwise (officially each column is sorted on its own, so the values of
  a row may come from different predicted rows);
* an alternative whose `condition_cols` are out of range is skipped, not fatal for the instance;
* an integer beyond float64's range (a 400-digit cell) is a number the official `float()` cannot
  take; here it equals exactly the same integer and nothing else (kind BIG_INT, keyed by hex).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from querybench.evaluation.spider2.official import (  # never exceeded
    ABS_TOL,
    REL_TOL,
    isclose,
    table_arrays,
    text_fingerprint,
    text_ranks,
)
from querybench.evaluation.spider2.table import Table, is_missing, missing_and_text

if TYPE_CHECKING:
    import pandas as pd

MISSING, NUMBER, TEXT, BIG_INT = 0, 1, 2, 3  # BIG_INT: an int no float64 holds, as its digits
_MAX_ASSIGNMENTS = 20_000
MAX_BIPARTITE_ROWS = 3_000  # beyond this many rows a failed sorted pairing is final
_CHUNK_ROWS = 1 << 20  # cells compared per step, bounding the temporaries of a big column


@dataclass
class StrictColumn:
    kind: npt.NDArray[np.int8]  # MISSING / NUMBER / TEXT / BIG_INT per cell
    num: npt.NDArray[np.float64]  # value where NUMBER, else 0
    text: npt.NDArray[np.object_]  # str() where TEXT or BIG_INT, else ""
    _rank: npt.NDArray[np.intp] | None = field(default=None, repr=False)
    _order: npt.NDArray[np.intp] | None = field(default=None, repr=False)
    _stats: tuple[int, int, float, float] | None = field(default=None, repr=False)
    _fingerprint: int | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def fingerprint(self) -> int:
        """The multiset of its cells that are not numbers (their kinds and texts) as one
        integer: a cell equals another only of its kind, and but for numbers by its text."""
        if self._fingerprint is None:
            other = self.kind != NUMBER
            kinds = self.kind[other].astype(np.uint64)
            # each kind weighted apart, so that a TEXT "" and a MISSING cell differ
            by_kind = int((kinds * np.uint64(0x9E3779B97F4A7C15)).sum(dtype=np.uint64))
            self._fingerprint = (text_fingerprint(self.text[other]) + by_kind) % (1 << 64)
        return self._fingerprint

    @property
    def stats(self) -> tuple[int, int, float, float]:
        """(missing cells, numbers, their sum, their magnitudes' sum), for a quick reject."""
        if self._stats is None:
            numbers = self.num[self.kind == NUMBER]
            missing = int((self.kind == MISSING).sum())
            self._stats = (
                missing,
                len(numbers),
                float(numbers.sum()),
                float(np.abs(numbers).sum()),
            )
        return self._stats

    @property
    def rank(self) -> npt.NDArray[np.intp]:
        """Position of each cell's text in sorted order (an integer sort key for the text)."""
        if self._rank is None:
            if (self.kind >= TEXT).any():
                self._rank = text_ranks(self.text)
            else:
                self._rank = np.zeros(len(self.kind), dtype=np.intp)
        return self._rank

    def order(self) -> npt.NDArray[np.intp]:
        if self._order is None:
            self._order = _sort_rows([self])
        return self._order


def strict_columns(
    table: Table | pd.DataFrame | Sequence[npt.NDArray[Any]],
) -> list[StrictColumn]:
    return [_strict_column(a) for a in table_arrays(table)]


def _strict_column(raw: npt.NDArray[Any]) -> StrictColumn:
    n = len(raw)
    if raw.dtype.kind in "iuf":
        num = raw.astype(np.float64)
        missing = np.isnan(num)
        kind = np.where(missing, MISSING, NUMBER).astype(np.int8)
        return StrictColumn(kind, np.where(missing, 0.0, num), np.full(n, "", dtype=object))
    values = raw.astype(object, copy=False)
    missing, text_only = missing_and_text(values)
    if text_only:
        text = values.copy()
        text[missing] = ""
        kind = np.where(missing, MISSING, TEXT).astype(np.int8)
        return StrictColumn(kind, np.zeros(n, dtype=np.float64), text)
    kind = np.empty(n, dtype=np.int8)
    num = np.zeros(n, dtype=np.float64)
    text = np.full(n, "", dtype=object)
    for i, v in enumerate(values):
        if not isinstance(v, str) and is_missing(v):
            kind[i] = MISSING
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                kind[i], num[i] = NUMBER, float(v)
            except OverflowError:
                kind[i], text[i] = BIG_INT, hex(int(v))  # str() refuses 4300+ digits
        else:
            kind[i], text[i] = TEXT, str(v)
    return StrictColumn(kind, num, text)


def cells_equal(
    a: StrictColumn, b: StrictColumn, ia: npt.NDArray[np.intp], ib: npt.NDArray[np.intp]
) -> npt.NDArray[np.bool_]:
    """Elementwise equality of a[ia] and b[ib] under the strict cell rule."""
    ka, kb = a.kind[ia], b.kind[ib]
    close = isclose(a.num[ia], b.num[ib])  # an infinity equals only itself there too
    same_text = a.text[ia] == b.text[ib]
    equal: npt.NDArray[np.bool_] = (ka == kb) & (
        (ka == MISSING) | ((ka == NUMBER) & close) | ((ka >= TEXT) & same_text)
    )
    return equal


def _all_cells_equal(
    a: StrictColumn,
    b: StrictColumn,
    ia: npt.NDArray[np.intp] | None = None,
    ib: npt.NDArray[np.intp] | None = None,
) -> bool:
    """`cells_equal(a, b, ia, ib).all()` a chunk at a time (None: the rows in their order)."""
    if ia is None and ib is None and _same_cells(a, b):
        return True
    for start in range(0, len(a), _CHUNK_ROWS):
        window = np.arange(start, min(start + _CHUNK_ROWS, len(a)))
        wa = window if ia is None else ia[start : start + _CHUNK_ROWS]
        wb = window if ib is None else ib[start : start + _CHUNK_ROWS]
        if not cells_equal(a, b, wa, wb).all():
            return False
    return True


def _same_cells(a: StrictColumn, b: StrictColumn) -> bool:
    """Whether the two columns hold the very same cells in the same rows (kinds, numbers and
    texts equal), which `cells_equal` finds equal: a number here is never NaN (a NaN is a
    missing cell), and a NaN would fail this check anyway. False only means "not shown"."""
    return a is b or (
        np.array_equal(a.kind, b.kind)
        and np.array_equal(a.num, b.num)
        and bool((a.text == b.text).all())
    )


def strict_table_match(
    pred: Sequence[StrictColumn], gold: Sequence[StrictColumn], ignore_order: bool
) -> bool:
    if not gold:
        return True
    n = len(gold[0])
    if any(len(p) != n for p in pred) or len(pred) < len(gold):
        return False
    if _identity_matches(pred, gold, ignore_order):
        return True
    return assign_columns(
        len(gold),
        len(pred),
        lambda i, j: _column_compatible(gold[i], pred[j], ignore_order),
        lambda chosen: rows_match_as_multiset([pred[j] for j in chosen], gold),
        ignore_order,
    )


def _identity_matches(
    pred: Sequence[StrictColumn], gold: Sequence[StrictColumn], ignore_order: bool
) -> bool:
    """Whether gold column i as predicted column i matches, where that alone proves what the
    search of `assign_columns` would find (a correct prediction keeps the gold's columns).

    In order, an injective assignment then exists. Ignoring order, the search tries every
    assignment when there are at most `_MAX_ASSIGNMENTS`, this one among them; beyond that it
    may stop first, so the search decides.
    """
    k = len(gold)
    if ignore_order and math.perm(len(pred), k) > _MAX_ASSIGNMENTS:
        return False
    diagonal = pred[:k]
    if not all(_column_compatible(g, p, ignore_order) for g, p in zip(gold, diagonal, strict=True)):
        return False
    return not ignore_order or rows_match_as_multiset(diagonal, gold)


def assign_columns(
    n_gold: int,
    n_pred: int,
    compatible: Callable[[int, int], bool],
    rows_match: Callable[[tuple[int, ...]], bool],
    ignore_order: bool,
) -> bool:
    """The column-assignment search of `strict_table_match`, over any column representation.

    `compatible(i, j)`: gold column i may be predicted column j; `rows_match(chosen)`: with gold
    column i taken from predicted column chosen[i], the rows match as a multiset.
    """
    candidates = [[j for j in range(n_pred) if compatible(i, j)] for i in range(n_gold)]
    if any(not c for c in candidates):
        return False
    if not ignore_order:
        return _has_injective_assignment(candidates)
    for assignment in itertools.islice(_assignments(candidates), _MAX_ASSIGNMENTS):
        if rows_match(assignment):
            return True
    return False


def _column_compatible(g: StrictColumn, p: StrictColumn, ignore_order: bool) -> bool:
    if _cannot_match(g, p):
        return False
    if ignore_order:
        return rows_match_as_multiset([p], [g])
    return _all_cells_equal(g, p)


def _cannot_match(g: StrictColumn, p: StrictColumn) -> bool:
    """Necessary conditions, before any sorting: as many gaps and numbers, and sums of numbers
    no further apart than the tolerances of the pairs allow."""
    (g_missing, g_n, g_sum, g_abs), (p_missing, p_n, p_sum, p_abs) = g.stats, p.stats
    if (g_missing, g_n) != (p_missing, p_n):
        return True
    if not all(math.isfinite(x) for x in (g_sum, p_sum, g_abs, p_abs)):
        return False
    slack = ABS_TOL * g_n + 2 * REL_TOL * (g_abs + p_abs) + 1e-9
    return abs(g_sum - p_sum) > slack


def _has_injective_assignment(candidates: list[list[int]]) -> bool:
    """Whether every left node gets its own right node (augmenting paths, iterative)."""
    owner: dict[int, int] = {}
    for start in range(len(candidates)):
        # Depth-first search for an augmenting path from `start`, without recursion.
        parent: dict[int, tuple[int, int | None]] = {}  # right node -> (left node, prev right)
        stack: list[tuple[int, int | None]] = [(start, None)]
        seen: set[int] = set()
        found: int | None = None
        while stack and found is None:
            left, via = stack.pop()
            for right in candidates[left]:
                if right in seen:
                    continue
                seen.add(right)
                parent[right] = (left, via)
                if right not in owner:
                    found = right
                    break
                stack.append((owner[right], right))
        if found is None:
            return False
        right_node: int | None = found
        while right_node is not None:
            left, prev = parent[right_node]
            owner[right_node] = left
            right_node = prev
    return True


def _assignments(candidates: list[list[int]]) -> Iterator[tuple[int, ...]]:
    def extend(i: int, used: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        if i == len(candidates):
            yield used
            return
        for p in candidates[i]:
            if p not in used:
                yield from extend(i + 1, (*used, p))

    return extend(0, ())


def _sort_rows(columns: Sequence[StrictColumn]) -> npt.NDArray[np.intp]:
    """Row order by (kind, number, text) of each column in turn: a canonical multiset order."""
    keys: list[npt.NDArray[Any]] = []
    for col in reversed(columns):
        keys.extend([col.rank, col.num, col.kind])
    return np.lexsort(keys) if keys else np.arange(0)


def rows_match_as_multiset(pred: Sequence[StrictColumn], gold: Sequence[StrictColumn]) -> bool:
    """Whether the rows of `pred` (column i paired with gold column i) pair up one to one."""
    n = len(gold[0])
    if all(_all_cells_equal(g, p) for g, p in zip(gold, pred, strict=True)):
        return True  # the rows pair up in their own order
    if any(g.fingerprint != p.fingerprint for g, p in zip(gold, pred, strict=True)):
        return False  # a column's cells that are not numbers differ as multisets
    if len(gold) == 1:
        gi, pi = gold[0].order(), pred[0].order()
    else:
        gi, pi = _sort_rows(gold), _sort_rows(pred)
    if all(_all_cells_equal(g, p, gi, pi) for g, p in zip(gold, pred, strict=True)):
        return True
    # One column: sorted pairing is exact (each value's tolerance window is monotone in it).
    if len(gold) == 1 or n > MAX_BIPARTITE_ROWS or not _same_rows_ignoring_numbers(pred, gold):
        return False
    return _rows_pair_up(pred, gold)


def _same_rows_ignoring_numbers(pred: Sequence[StrictColumn], gold: Sequence[StrictColumn]) -> bool:
    """Necessary for any pairing: equal multisets of rows once numbers are blanked out."""

    def order(columns: Sequence[StrictColumn]) -> npt.NDArray[np.intp]:
        keys: list[npt.NDArray[Any]] = []
        for col in reversed(columns):
            keys.extend([col.rank, col.kind])
        return np.lexsort(keys)

    gi, pi = order(gold), order(pred)
    return all(
        (g.kind[gi] == p.kind[pi]).all() and (g.text[gi] == p.text[pi]).all()
        for g, p in zip(gold, pred, strict=True)
    )


def _rows_pair_up(pred: Sequence[StrictColumn], gold: Sequence[StrictColumn]) -> bool:
    """Exact check: is there a one-to-one pairing of rows? (tolerance can defeat sorting)."""
    n = len(gold[0])
    all_rows = np.arange(n)
    candidates: list[list[int]] = []
    for r in range(n):
        row = np.full(n, r)
        ok = np.ones(n, dtype=bool)
        for g, p in zip(gold, pred, strict=True):
            ok &= cells_equal(g, p, row, all_rows)
        candidates.append(np.flatnonzero(ok).tolist())
        if not candidates[-1]:
            return False
    return _has_injective_assignment(candidates)
