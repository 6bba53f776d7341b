"""Spider 2.0 agentic / DBT answers given as tables: `table_match`, `tables_match`, `duckdb_match`.

Each official function reproduces the verdict of the official `eval_utils` together with the
driver around it (`evaluate.py` turns an exception while scoring a file answer into 0): a
prediction that cannot be read is `bad_prediction_file`, a gold or config that cannot be used is
`gold_error`, anything else that does not match is `wrong_result`. The `strict_*` counterparts take
the same inputs, compare with `strict_compare` and reject ambiguous configs (see each docstring).
DuckDB files are only opened in the killable query child, locked down (`database_answer`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from querybench.errors import DatabaseProblem, ErrorCode, PredictionRefused, ScoringStopped
from querybench.evaluation.database_answer import DatabaseReader
from querybench.evaluation.detail import Shape, VerdictDetail
from querybench.evaluation.prediction_file import ReadLimits, open_prediction
from querybench.evaluation.spider2.agentic.compare import (
    OFFICIAL_TOLERANCE,
    official_compare,
    strict_columns,
    strict_compare,
)
from querybench.evaluation.verdict import Verdict

PathLike = str | os.PathLike[str]


def _scored(body: Callable[[], Verdict]) -> Verdict:
    try:
        return body()
    except ScoringStopped as problem:
        return Verdict.fail(problem.code, str(problem))


def _read_csv(path: PathLike, code: ErrorCode, *, low_memory: bool = False) -> pd.DataFrame:
    """A gold or predicted CSV as the official driver reads it. A prediction is opened as
    every prediction is (`prediction_file.open_prediction`): a regular file in its own folder,
    never a FIFO, device or link out of it, bounded in time and size."""
    try:
        if code is not ErrorCode.BAD_PREDICTION_FILE:
            return pd.read_csv(path, low_memory=low_memory)
        where = Path(path)
        with open_prediction(where, where.parent, ReadLimits()) as scanned:
            return pd.read_csv(scanned.handle, low_memory=low_memory)
    except PredictionRefused as refused:  # a missing file stays a read failure, as officially
        missing = refused.code is ErrorCode.MISSING_PREDICTION
        raise ScoringStopped(code if missing else refused.code, str(refused)) from None
    except Exception as exc:  # the official driver treats any read failure alike
        raise ScoringStopped(code, f"cannot read {os.fspath(path)!r}: {exc}") from None


def _official(
    pred: pd.DataFrame, gold: pd.DataFrame, cols: Any, ignore_order: Any, tolerance: float
) -> str | None:
    try:
        return official_compare(pred, gold, cols, ignore_order, tolerance=tolerance)
    except Exception as exc:  # `iloc` rejected condition_cols
        raise ScoringStopped(ErrorCode.GOLD_ERROR, f"bad condition_cols {cols!r}: {exc}") from None


# --------------------------------------------------------------------------- table_match


def table_match(
    result: PathLike,
    gold: PathLike | Sequence[PathLike],
    condition_cols: Any = (),
    ignore_order: Any = False,
    *,
    tolerance: float = OFFICIAL_TOLERANCE,
) -> Verdict:
    """Official `table_match`: a result CSV against one gold CSV, or against any of several.

    Both sides are read with `pd.read_csv(low_memory=False)` and compared by `official_compare`.
    With several gold CSVs, `condition_cols` of `[]`, `[[]]`, `[None]` or `None` means all
    columns of each, otherwise entry `i` belongs to gold `i` (a flat `[0, 3]` gives gold `i`
    the single int `condition_cols[i]`); `ignore_order` is not split per gold: the whole value is
    used for its truthiness, so `[false, false]` ignores the order.
    """

    def body() -> Verdict:
        pred = _read_csv(result, ErrorCode.BAD_PREDICTION_FILE)
        if isinstance(gold, str | os.PathLike):
            frame = _read_csv(gold, ErrorCode.GOLD_ERROR)
            reason = _official(pred, frame, condition_cols, ignore_order, tolerance)
            return Verdict.ok() if reason is None else _wrong(reason, pred, [frame])
        if not isinstance(gold, list | tuple):
            raise ScoringStopped(
                ErrorCode.GOLD_ERROR, f"table_match gold must be a path or a list, not {gold!r}"
            )
        frames = [_read_csv(path, ErrorCode.GOLD_ERROR) for path in gold]
        cols: Any = condition_cols
        if cols in ([], [[]], [None], None, ()):
            cols = [[] for _ in frames]
        reasons = []
        for index, frame in enumerate(frames):
            try:
                selected = cols[index]
            except (IndexError, TypeError, KeyError):
                raise ScoringStopped(
                    ErrorCode.GOLD_ERROR, f"no condition_cols for gold {index}"
                ) from None
            reason = _official(pred, frame, selected, ignore_order, tolerance)
            if reason is None:
                return Verdict.ok()
            reasons.append(reason)
        return _wrong(_any_of(reasons), pred, frames)

    return _scored(body)


def _wrong(reason: str, pred: pd.DataFrame, golds: Sequence[pd.DataFrame]) -> Verdict:
    """No gold matched: the shapes compared (a report counts it `wrong_values`, as before)."""
    shapes = tuple(Shape(*gold.shape) for gold in golds)
    return Verdict.fail(
        ErrorCode.WRONG_RESULT, reason, VerdictDetail(None, Shape(*pred.shape), shapes)
    )


def _any_of(reasons: Sequence[str]) -> str:
    if len(reasons) == 1:
        return reasons[0]
    return f"matches none of {len(reasons)} gold tables (first: {reasons[0]})"


def _strict_select(frame: pd.DataFrame, cols: Any) -> tuple[list[list[object]], list[str]]:
    """Gold columns named by `cols` (None or [] = all), each once, with their labels."""
    if cols is None or cols == []:
        indexes = list(range(frame.shape[1]))
    elif isinstance(cols, list | tuple) and all(
        isinstance(c, int) and not isinstance(c, bool) for c in cols
    ):
        indexes = list(dict.fromkeys(cols))
        width = frame.shape[1]
        if any(not -width <= c < width for c in indexes):
            raise ScoringStopped(
                ErrorCode.GOLD_ERROR, f"condition_cols {cols!r} out of range for {width} columns"
            )
        indexes = list(dict.fromkeys(c % width for c in indexes))
    else:
        raise ScoringStopped(
            ErrorCode.GOLD_ERROR, f"condition_cols must be a list of column indexes: {cols!r}"
        )
    if not indexes:
        raise ScoringStopped(ErrorCode.GOLD_ERROR, "gold table has no columns")
    picked = frame.iloc[:, indexes]
    names = [f"{i} ({frame.columns[i]!s})" for i in indexes]
    return strict_columns(picked), names


def _strict_table(
    pred: pd.DataFrame, gold: pd.DataFrame, cols: Any, ignore_order: Any, tolerance: float
) -> str | None:
    if not isinstance(ignore_order, bool):
        raise ScoringStopped(
            ErrorCode.GOLD_ERROR, f"ignore_order must be true or false, not {ignore_order!r}"
        )
    columns, names = _strict_select(gold, cols)
    return strict_compare(
        strict_columns(pred), columns, ignore_order, gold_names=names, tolerance=tolerance
    )


def _per_table(value: Any, count: int, default: Any, what: str) -> list[Any]:
    """A per-gold-table parameter: None → default for each, else a list of exactly `count`."""
    if value is None:
        return [default] * count
    if not isinstance(value, list | tuple) or len(value) != count:
        raise ScoringStopped(
            ErrorCode.GOLD_ERROR, f"{what} must list one entry per gold table: {value!r}"
        )
    return list(value)


def strict_table_match(
    result: PathLike,
    gold: PathLike | Sequence[PathLike],
    condition_cols: Any = (),
    ignore_order: Any = False,
    *,
    tolerance: float = OFFICIAL_TOLERANCE,
) -> Verdict:
    """`table_match` compared with `strict_compare`; same inputs.

    Config flaws fixed: with several gold CSVs a list `ignore_order` is split per gold (officially
    `[false, false]` ignores the order because the list is truthy), `condition_cols` must list
    one entry per gold (a flat `[0, 3]` officially makes every comparison fail), and a column
    named twice in `condition_cols` is required once. Bad configs are `gold_error`.
    """

    def body() -> Verdict:
        pred = _read_csv(result, ErrorCode.BAD_PREDICTION_FILE)
        if isinstance(gold, str | os.PathLike):
            frame = _read_csv(gold, ErrorCode.GOLD_ERROR)
            cols = None if condition_cols == () else condition_cols
            reason = _strict_table(pred, frame, cols, ignore_order, tolerance)
            return Verdict.ok() if reason is None else _wrong(reason, pred, [frame])
        if not isinstance(gold, list | tuple) or not gold:
            raise ScoringStopped(
                ErrorCode.GOLD_ERROR, f"table_match gold must be a path or a list, not {gold!r}"
            )
        frames = [_read_csv(path, ErrorCode.GOLD_ERROR) for path in gold]
        all_cols = condition_cols in ([], [[]], [None], None, ())
        cols = (
            [None] * len(frames)
            if all_cols
            else _per_table(condition_cols, len(frames), None, "condition_cols")
        )
        orders = (
            [ignore_order] * len(frames)
            if isinstance(ignore_order, bool)
            else _per_table(ignore_order, len(frames), False, "ignore_order")
        )
        reasons = []
        for frame, selected, order in zip(frames, cols, orders, strict=True):
            reason = _strict_table(pred, frame, selected, order, tolerance)
            if reason is None:
                return Verdict.ok()
            reasons.append(reason)
        return _wrong(_any_of(reasons), pred, frames)

    return _scored(body)


# --------------------------------------------------------------------------- tables_match


def tables_match(
    result: Sequence[PathLike],
    gold: Sequence[PathLike],
    condition_cols: Any = None,
    ignore_orders: Any = None,
    *,
    tolerance: float = OFFICIAL_TOLERANCE,
) -> Verdict:
    """Official `tables_match`: result CSV `i` against gold CSV `i`, all of them must match.

    CSVs are read with `pd.read_csv()` defaults (unlike `table_match`, `low_memory` stays on);
    `ignore_orders` defaults to false and `condition_cols` to all columns for every table.
    """
    return _scored(lambda: _tables(result, gold, condition_cols, ignore_orders, tolerance, False))


def strict_tables_match(
    result: Sequence[PathLike],
    gold: Sequence[PathLike],
    condition_cols: Any = None,
    ignore_orders: Any = None,
    *,
    tolerance: float = OFFICIAL_TOLERANCE,
) -> Verdict:
    """`tables_match` compared with `strict_compare`; same inputs, configs checked strictly."""
    return _scored(lambda: _tables(result, gold, condition_cols, ignore_orders, tolerance, True))


def _tables(
    result: Sequence[PathLike],
    gold: Sequence[PathLike],
    condition_cols: Any,
    ignore_orders: Any,
    tolerance: float,
    strict: bool,
) -> Verdict:
    if isinstance(gold, str | os.PathLike) or isinstance(result, str | os.PathLike):
        raise ScoringStopped(ErrorCode.GOLD_ERROR, "tables_match takes lists of CSV paths")
    golds = [_read_csv(path, ErrorCode.GOLD_ERROR, low_memory=True) for path in gold]
    preds = [_read_csv(path, ErrorCode.BAD_PREDICTION_FILE, low_memory=True) for path in result]
    if len(preds) != len(golds):
        return Verdict.fail(
            ErrorCode.WRONG_RESULT, f"{len(preds)} result files for {len(golds)} gold ones"
        )
    labels = [str(index) for index in range(len(golds))]
    return _all_match(preds, golds, labels, condition_cols, ignore_orders, tolerance, strict)


def _all_match(
    preds: Sequence[pd.DataFrame],
    golds: Sequence[pd.DataFrame],
    labels: Sequence[str],
    condition_cols: Any,
    ignore_orders: Any,
    tolerance: float,
    strict: bool,
) -> Verdict:
    """Table `i` of `preds` against table `i` of `golds`, every one must match (per-table
    `condition_cols` default to all columns, `ignore_orders` to false)."""
    orders = _per_table(ignore_orders, len(golds), False, "ignore_orders")
    cols = _per_table(condition_cols, len(golds), [], "condition_cols")
    compare = _strict_table if strict else _official
    for label, pred, frame, selected, order in zip(labels, preds, golds, cols, orders, strict=True):
        reason = compare(pred, frame, selected, order, tolerance)
        if reason is not None:
            return Verdict.fail(ErrorCode.WRONG_RESULT, f"table {label}: {reason}")
    return Verdict.ok()


# --------------------------------------------------------------------------- duckdb_match


def _table_names(condition_tabs: Any) -> list[str] | None:
    if condition_tabs is None:
        return None
    if not isinstance(condition_tabs, list | tuple) or not all(
        isinstance(t, str) for t in condition_tabs
    ):
        raise ScoringStopped(
            ErrorCode.GOLD_ERROR, f"condition_tabs must be a list of names: {condition_tabs!r}"
        )
    return list(condition_tabs)


def duckdb_match(
    result: PathLike,
    gold: PathLike,
    condition_tabs: Any = None,
    condition_cols: Any = None,
    ignore_orders: Any = None,
    *,
    tolerance: float = OFFICIAL_TOLERANCE,
    reader: DatabaseReader | None = None,
) -> Verdict:
    """Official `duckdb_match`: tables of a result DuckDB file against a gold DuckDB file.

    `condition_tabs` names the tables (default: the gold's `SHOW TABLES`); each is read with
    `SELECT * FROM <name>` (unquoted) and `fetchdf()`, and compared by `official_compare` with
    its entry of `condition_cols` (default: all columns) and `ignore_orders` (default: false).
    Reproduced as is: an empty `condition_tabs` passes without opening the result at all, and a
    gold file without tables passes anything.
    """

    return _scored(
        lambda: _duckdb(
            result, gold, condition_tabs, condition_cols, ignore_orders, tolerance, False, reader
        )
    )


def strict_duckdb_match(
    result: PathLike,
    gold: PathLike,
    condition_tabs: Any = None,
    condition_cols: Any = None,
    ignore_orders: Any = None,
    *,
    tolerance: float = OFFICIAL_TOLERANCE,
    reader: DatabaseReader | None = None,
) -> Verdict:
    """`duckdb_match` compared with `strict_compare`; same inputs.

    Also fixed: no tables to compare (an empty `condition_tabs`, or a gold file without tables)
    is a `gold_error` instead of a pass, table names are quoted (officially a name that is a
    reserved word, such as `order`, cannot be read even from the gold), and `ignore_orders`
    entries must be booleans.
    """

    return _scored(
        lambda: _duckdb(
            result, gold, condition_tabs, condition_cols, ignore_orders, tolerance, True, reader
        )
    )


def _duckdb(
    result: PathLike,
    gold: PathLike,
    condition_tabs: Any,
    condition_cols: Any,
    ignore_orders: Any,
    tolerance: float,
    strict: bool,
    reader: DatabaseReader | None,
) -> Verdict:
    if reader is None:
        with DatabaseReader() as own:
            return _duckdb(
                result, gold, condition_tabs, condition_cols, ignore_orders, tolerance, strict, own
            )
    # Strict quotes table names and refuses to pass when there is nothing to compare.
    wanted = _table_names(condition_tabs)
    try:
        names, golds = reader.gold(Path(gold), wanted, quote=strict)
        if not names:
            if strict:
                raise ScoringStopped(ErrorCode.GOLD_ERROR, "no tables to compare")
            return Verdict.ok()
        rows = max((len(frame) for frame in golds), default=0)
        _, preds = reader.prediction(
            Path(result), names, quote=strict, gold=Path(gold), min_rows=rows
        )
    except DatabaseProblem as problem:
        raise ScoringStopped(problem.code, str(problem)) from None
    return _all_match(preds, golds, names, condition_cols, ignore_orders, tolerance, strict)
