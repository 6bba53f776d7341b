"""How one predicted table is compared with one gold table by the Spider 2.0 agentic / DBT scorer.

`official_compare` reproduces the official `compare_pandas_table` of the DBT `eval_utils`
(tolerance 1e-2; a raising comparison fails as a whole, as the driver scores it 0); the agentic
copy in `spider2/evaluation_suite` is the same at db1d8e1b (an older revision used 1e-3, which
callers can pass as `tolerance`).
`strict_compare` fixes its flaws (see its docstring). Both return `None` on a match, else a short
reason. The official semantics are defined on pandas objects (`.transpose().values.tolist()`,
`pd.isna`), so pandas is used here on purpose.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

OFFICIAL_TOLERANCE = 1e-2
"""`compare_pandas_table`'s `abs_tol` in spider2-dbt/evaluation_suite/eval_utils.py."""

AGENTIC_TOLERANCE = 1e-3
"""The same tolerance in the older spider2/evaluation_suite/eval_utils.py copy."""

# Column assignments tried by `strict_compare` before it gives up on an ambiguous table.
MAX_ASSIGNMENTS = 32


def has_injective_assignment(candidates: Sequence[Sequence[int]]) -> bool:
    """Whether every left item can take a distinct right item among its candidates (Kuhn)."""
    owner: dict[int, int] = {}

    def augment(left: int, seen: set[int]) -> bool:
        for right in candidates[left]:
            if right in seen:
                continue
            seen.add(right)
            if right not in owner or augment(owner[right], seen):
                owner[right] = left
                return True
        return False

    return all(augment(left, set()) for left in range(len(candidates)))


# --------------------------------------------------------------------------- official


def _official_sort_key(cell: Any) -> tuple[bool, str, bool]:
    return (cell is None, str(cell), isinstance(cell, int | float))


def _official_cells_match(gold: Any, pred: Any, tolerance: float) -> bool:
    # Deliberately the official operations on whatever the vectors hold (pandas NA, arrays,
    # a bare cell when `iloc` returned a Series); an exception propagates, as officially.
    if len(gold) != len(pred):
        return False
    for a, b in zip(gold, pred, strict=False):
        if pd.isna(a) and pd.isna(b):
            continue
        if isinstance(a, int | float) and isinstance(b, int | float):
            if not math.isclose(float(a), float(b), abs_tol=tolerance):
                return False
        elif a != b:
            return False
    return True


class _Sorted:
    """Each vector sorted on first use, as the official sorts it inside every comparison (a
    vector that cannot be sorted raises only when it is reached)."""

    def __init__(self, vectors: list[Any], ignore_order: bool) -> None:
        self.vectors = vectors
        self.ignore_order = ignore_order
        self._done: dict[int, Any] = {}

    def __getitem__(self, index: int) -> Any:
        if not self.ignore_order:
            return self.vectors[index]
        if index not in self._done:
            self._done[index] = sorted(self.vectors[index], key=_official_sort_key)
        return self._done[index]


def _label(frame: pd.DataFrame | pd.Series[Any], index: int) -> str:
    if isinstance(frame, pd.DataFrame):
        return f"{index} ({frame.columns[index]!s})"
    return f"{index}"


def official_compare(
    pred: pd.DataFrame,
    gold: pd.DataFrame,
    condition_cols: Any = (),
    ignore_order: Any = False,
    *,
    tolerance: float = OFFICIAL_TOLERANCE,
) -> str | None:
    """Official `compare_pandas_table`: every gold column must equal some predicted column.

    * `condition_cols` other than `[]`/`()` selects gold columns with `iloc` (an int selects one
      column, whose cells then each act as a "column" — reproduced, not fixed); `ignore_order`
      is used for its truthiness.
    * Both tables become column vectors through `.transpose().values.tolist()`, so a table's
      columns share one dtype first (ints turn into floats next to a float column).
    * With `ignore_order` each vector is sorted on its own by `(is None, str(x), is number)`.
    * Cells match when both are missing (`pd.isna`), when both are int/float (bools included)
      within `math.isclose(abs_tol=tolerance)` (its default `rel_tol` kept), or when `==`; an
      exception anywhere (a LIST cell met before the matching column, say) fails the whole
      comparison, as the official driver scores the raising call 0.
    * Extra predicted columns are ignored and one predicted column may serve several gold ones.

    Raises whatever `iloc` raises for a bad `condition_cols`: that is a gold problem.
    """
    selector = list(condition_cols) if isinstance(condition_cols, tuple) else condition_cols
    selected: pd.DataFrame | pd.Series[Any] = gold if selector == [] else gold.iloc[:, selector]
    order = bool(ignore_order)
    golds = _Sorted(selected.transpose().values.tolist(), order)
    preds = _Sorted(pred.transpose().values.tolist(), order)
    first_miss = None
    try:
        # Every gold column is looked at (officially the loop goes on after a miss, and a later
        # column can still raise); the pred columns in order, up to the first match.
        for index in range(len(golds.vectors)):
            if not any(
                _official_cells_match(golds[index], preds[j], tolerance)
                for j in range(len(preds.vectors))
            ):
                first_miss = first_miss if first_miss is not None else index
    except Exception as exc:  # the official driver scores a raising comparison 0
        return f"the official comparison raises {type(exc).__name__}: {exc}"
    if first_miss is not None:
        return f"gold column {_label(selected, first_miss)} matches no predicted column"
    return None


# --------------------------------------------------------------------------- strict


@dataclass(frozen=True)
class _Struct:
    """A STRUCT / dict cell: fields by name, values normalised."""

    fields: tuple[tuple[str, object], ...]


def _normalise(cell: Any) -> object:
    """Missing → None, every number (bools too, as officially) → float, lists → tuples."""
    if cell is None:
        return None
    if isinstance(cell, bool | np.bool_):
        return float(cell)
    if isinstance(cell, int | float | Decimal | np.integer | np.floating):
        value = float(cell)
        return None if math.isnan(value) else value
    if isinstance(cell, str):
        return cell
    if isinstance(cell, np.ndarray | list | tuple):
        return tuple(_normalise(item) for item in cell)
    if isinstance(cell, dict):
        items = sorted(((str(k), _normalise(v)) for k, v in cell.items()), key=lambda kv: kv[0])
        return _Struct(tuple(items))
    try:
        if bool(pd.isna(cell)):
            return None
    except (TypeError, ValueError):
        pass
    return cell


def strict_columns(frame: pd.DataFrame) -> list[list[object]]:
    """A table as normalised columns, one `Series.tolist()` each (no shared-dtype cast)."""
    return [[_normalise(c) for c in frame.iloc[:, j].tolist()] for j in range(frame.shape[1])]


def _cells_equal(a: object, b: object, tolerance: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, abs_tol=tolerance)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(
            _cells_equal(x, y, tolerance) for x, y in zip(a, b, strict=True)
        )
    if isinstance(a, _Struct) and isinstance(b, _Struct):
        return [k for k, _ in a.fields] == [k for k, _ in b.fields] and all(
            _cells_equal(x, y, tolerance) for (_, x), (_, y) in zip(a.fields, b.fields, strict=True)
        )
    try:
        return bool(a == b)
    except Exception:
        return False


def _sort_key(cell: object, tolerance: float) -> tuple[Any, ...]:
    # Numbers sort numerically, quantised to the tolerance so near-equal values tie and the
    # next column decides a row's place.
    if cell is None:
        return (0,)
    if isinstance(cell, float):
        scaled = cell / tolerance if tolerance > 0 else cell
        return (1, round(scaled) if math.isfinite(scaled) else scaled)
    if isinstance(cell, str):
        return (2, cell)
    if isinstance(cell, tuple):
        return (3, tuple(_sort_key(item, tolerance) for item in cell))
    if isinstance(cell, _Struct):
        return (4, tuple((k, _sort_key(v, tolerance)) for k, v in cell.fields))
    return (5, str(cell))  # timestamps and the like: equal values print alike


def _vectors_equal(gold: Sequence[object], pred: Sequence[object], tolerance: float) -> bool:
    return len(gold) == len(pred) and all(
        _cells_equal(a, b, tolerance) for a, b in zip(gold, pred, strict=True)
    )


def strict_compare(
    pred: Sequence[Sequence[object]],
    gold: Sequence[Sequence[object]],
    ignore_order: bool,
    *,
    gold_names: Sequence[str] | None = None,
    tolerance: float = OFFICIAL_TOLERANCE,
) -> str | None:
    """Compare normalised columns (see `strict_columns`) without the official flaws.

    Kept from the official: extra predicted columns and column names are ignored, cells compare
    as in `official_compare` (missing = missing, numbers within `tolerance`, bools as 0/1).
    Fixed:

    * with `ignore_order` the official sorts every column on its own, so rows are never
      compared: gold rows (a, 1), (b, 2) match predicted rows (a, 2), (b, 1). Strict compares
      the rows as a multiset;
    * one predicted column may serve several gold columns, so a prediction with a single column
      passes a gold that holds two equal columns. Strict pairs gold columns with distinct
      predicted columns;
    * the official order sorts numbers as strings, so values within tolerance on either side of
      a digit boundary (9.999 and 10.0) end up in different places and fail. Strict sorts
      numbers numerically;
    * list / array cells (DuckDB LIST columns) never match officially (`pd.isna` on an array
      raises, which counts as a mismatch); strict compares them element-wise;
    * the official shared-dtype cast turns ints into floats next to a float column (harmless)
      and nanosecond timestamps (DuckDB TIMESTAMP_NS, pandas datetime64[ns]) into integers when
      the gold selection holds only such columns, so they never equal the predicted
      `Timestamp`s. Strict reads each column on its own.

    Limitation: rows are paired by sorting on tolerance-quantised values, so two rows whose
    numbers differ by less than the tolerance but fall on either side of a quantum boundary can
    be paired wrongly, giving a false mismatch.
    """
    names = list(gold_names) if gold_names is not None else [str(i) for i in range(len(gold))]
    gold_rows = len(gold[0]) if gold else 0
    pred_rows = len(pred[0]) if pred else 0
    if gold_rows != pred_rows:
        return f"predicted {pred_rows} rows, gold has {gold_rows}"
    if ignore_order:
        gold_keys = [[_sort_key(c, tolerance) for c in column] for column in gold]
        pred_keys = [[_sort_key(c, tolerance) for c in column] for column in pred]
        gold_seen = [_sorted_by(col, keys) for col, keys in zip(gold, gold_keys, strict=True)]
        pred_seen = [_sorted_by(col, keys) for col, keys in zip(pred, pred_keys, strict=True)]
    else:
        gold_seen, pred_seen = [list(c) for c in gold], [list(c) for c in pred]
    candidates = [
        [j for j, p in enumerate(pred_seen) if _vectors_equal(g, p, tolerance)] for g in gold_seen
    ]
    for name, found in zip(names, candidates, strict=True):
        if not found:
            return f"gold column {name} matches no predicted column"
    if not has_injective_assignment(candidates):
        return "gold columns need more distinct predicted columns than match them"
    if not ignore_order:
        return None
    return _rows_match(pred, gold, candidates, pred_keys, gold_keys, tolerance)


def _sorted_by(column: Sequence[object], keys: Sequence[tuple[Any, ...]]) -> list[object]:
    order = sorted(range(len(column)), key=keys.__getitem__)
    return [column[i] for i in order]


def _rows_match(
    pred: Sequence[Sequence[object]],
    gold: Sequence[Sequence[object]],
    candidates: list[list[int]],
    pred_keys: list[list[tuple[Any, ...]]],
    gold_keys: list[list[tuple[Any, ...]]],
    tolerance: float,
) -> str | None:
    # Identical predicted columns are interchangeable: assign gold columns to groups of them.
    representative: dict[int, int] = {}
    for j in sorted({j for found in candidates for j in found}):
        representative[j] = next(
            (r for r in set(representative.values()) if _same_column(pred[r], pred[j])), j
        )
    capacity: dict[int, int] = {}
    for rep in representative.values():
        capacity[rep] = capacity.get(rep, 0) + 1
    grouped = [sorted({representative[j] for j in found}) for found in candidates]
    order = sorted(range(len(gold)), key=lambda g: len(grouped[g]))
    gold_sorted = _sorted_rows(gold, gold_keys, range(len(gold)))
    tried = 0
    chosen: dict[int, int] = {}

    def search(position: int) -> bool:
        nonlocal tried
        if position == len(order):
            tried += 1
            columns = [chosen[g] for g in range(len(gold))]
            pred_sorted = _sorted_rows(pred, pred_keys, columns)
            return all(
                _vectors_equal(a, b, tolerance)
                for a, b in zip(gold_sorted, pred_sorted, strict=True)
            )
        g = order[position]
        for rep in grouped[g]:
            if capacity[rep] == 0 or tried >= MAX_ASSIGNMENTS:
                continue
            capacity[rep] -= 1
            chosen[g] = rep
            if search(position + 1):
                return True
            capacity[rep] += 1
        return False

    if search(0):
        return None
    if tried >= MAX_ASSIGNMENTS:
        return f"no row-wise match within {MAX_ASSIGNMENTS} column assignments"
    return "every gold column has a match, but the rows combine the values differently"


def _same_column(a: Sequence[object], b: Sequence[object]) -> bool:
    try:
        return bool(list(a) == list(b))
    except Exception:
        return False


def _sorted_rows(
    columns: Sequence[Sequence[object]],
    keys: Sequence[Sequence[tuple[Any, ...]]],
    chosen: Sequence[int],
) -> list[tuple[object, ...]]:
    picked = list(chosen)
    if not picked:
        return []
    rows = range(len(columns[picked[0]]))
    order = sorted(rows, key=lambda i: tuple(keys[c][i] for c in picked))
    return [tuple(columns[c][i] for c in picked) for i in order]
