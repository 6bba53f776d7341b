"""Scoring Spider 2.0-lite / -snow predictions under both scorings, official and strict."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any, TypeAlias, cast, overload

import numpy.typing as npt

from querybench.benchmarks import spec
from querybench.errors import DataError, ErrorCode
from querybench.evaluation.detail import Shape, VerdictDetail
from querybench.evaluation.spider2 import official, strict
from querybench.evaluation.spider2.gold import Benchmark, EvalSpec
from querybench.evaluation.spider2.table import Table
from querybench.evaluation.spider2.verdicts import Verdicts
from querybench.evaluation.verdict import Verdict

if TYPE_CHECKING:  # results of 32 MiB or more only: their scorer loads with the first
    import pandas as pd

    from querybench.evaluation.spider2.large_result import CompactTable, ResultTable

_log = logging.getLogger(__name__)
# What the scorers take: a parse's columns (`Table`), a compact big file, or a frame.
Scored: TypeAlias = "Table | CompactTable | pd.DataFrame"
PredArrays = Callable[[], list[npt.NDArray[Any]]]
GoldArrays = Callable[[int], list[npt.NDArray[Any]]]  # alternative i's columns


def variant_of(benchmark: Benchmark) -> official.Variant:
    return cast(official.Variant, spec(benchmark).official_variant)


def score_frame(
    pred: Scored,
    golds: Sequence[Scored],
    single: bool,
    spec: EvalSpec,
    variant: official.Variant,
) -> Verdicts:
    """Both verdicts for one parsed prediction against the instance's gold result(s).

    A big prediction or gold may come as a `CompactTable`; any pair with one is scored by
    `large_scoring`, which gives the same verdicts. A frame is scored as its `Table`.
    """
    if not golds:
        missing = Verdict.fail(ErrorCode.GOLD_ERROR, "no gold result file for this instance")
        return Verdicts(missing, missing)
    table = _as_table(pred)
    tables = _Tables(golds)

    @cache
    def arrays() -> list[npt.NDArray[Any]]:  # shared by both scorings
        assert isinstance(table, Table)
        return table.arrays

    @cache
    def gold_arrays(i: int) -> list[npt.NDArray[Any]]:  # the same for the gold alternatives
        gold = tables[i]
        assert isinstance(gold, Table)
        return gold.arrays

    return Verdicts(
        guarded(
            "official",
            lambda: _official_verdict(table, arrays, tables, gold_arrays, single, spec, variant),
        ),
        guarded("strict", lambda: _strict_verdict(table, arrays, tables, gold_arrays, spec)),
    )


def _as_table(result: Scored) -> Table | CompactTable:
    if isinstance(result, Table):
        return result
    from querybench.evaluation.spider2.large_result import CompactTable

    return result if isinstance(result, CompactTable) else Table.of_frame(result)


class _Tables(Sequence["Table | CompactTable"]):
    """The gold alternatives as tables, each converted once, on first use (reading one may
    raise its `DataError`, as the alternatives themselves do)."""

    def __init__(self, golds: Sequence[Scored]) -> None:
        self._golds = golds
        self._tables: dict[int, Table | CompactTable] = {}

    def __len__(self) -> int:
        return len(self._golds)

    @overload
    def __getitem__(self, index: int) -> Table | CompactTable: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Table | CompactTable]: ...

    def __getitem__(
        self, index: int | slice
    ) -> Table | CompactTable | Sequence[Table | CompactTable]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        if index not in self._tables:
            self._tables[index] = _as_table(self._golds[index])
        return self._tables[index]


def _frame_or_compact(result: Table | CompactTable) -> ResultTable:
    """What `large_scoring` takes: a compact table, or a frame beside one."""
    return result.frame() if isinstance(result, Table) else result


def guarded(what: str, verdict: Callable[[], Verdict]) -> Verdict:
    """`verdict()`, with any error raised while scoring turned into this instance's verdict:
    one odd prediction or gold file fails its instance, never the run (or every resume)."""
    try:
        return verdict()
    except MemoryError:
        return Verdict.fail(ErrorCode.TOO_LARGE, f"{what}: ran out of memory")
    except DataError as exc:  # a gold alternative read on demand was unreadable
        return Verdict.fail(ErrorCode.GOLD_ERROR, str(exc))
    except Exception as exc:
        return Verdict.fail(ErrorCode.SCORER_ERROR, f"{what} failed: {type(exc).__name__}: {exc}")


def _shape(frame: Table | CompactTable) -> str:
    return f"{frame.shape[0]}x{frame.shape[1]}"


def _shapes(pred: Table | CompactTable, golds: Sequence[Table | CompactTable]) -> VerdictDetail:
    """A wrong prediction's shape against every gold alternative's, in their order."""
    return VerdictDetail.of_shapes(Shape(*pred.shape), [Shape(*gold.shape) for gold in golds])


@dataclass
class _Compared:
    """One gold alternative's official comparison, kept to say which columns matched."""

    index: int
    width: int  # the gold's columns
    condition_cols: Any  # of which these were compared
    matches: Iterator[bool]  # `column_matches`, consumed up to the official loop's first miss
    hits: list[bool] = field(default_factory=list)


def _official_verdict(
    pred: Table | CompactTable,
    arrays: PredArrays,
    golds: Sequence[Table | CompactTable],
    gold_arrays: GoldArrays,
    single: bool,
    spec: EvalSpec,
    variant: official.Variant,
) -> Verdict:
    columns: list[official.OfficialColumn] = []
    compared: list[_Compared] = []

    def match(index: int, condition_cols: Any) -> bool:
        """`official.table_match`; `multi_table_match`'s loop is spelled out below."""
        gold = golds[index]
        if isinstance(pred, Table) and isinstance(gold, Table):
            if not columns:
                columns.extend(official.official_columns(arrays()))
            projected = official.projected_gold(gold, condition_cols, variant, gold_arrays(index))
            # the prediction's very columns (a gold of its bytes, all compared): converted once
            same = projected is arrays()
            gold_columns = columns if same else official.official_columns(projected)
            matches = official.column_matches(columns, gold_columns, spec.ignore_order)
            one = _Compared(index, gold.shape[1], condition_cols, matches)
            compared.append(one)
            for hit in one.matches:  # `all`, keeping each answer
                one.hits.append(hit)
                if not hit:
                    return False
            return True
        from querybench.evaluation.spider2 import large_scoring as large

        return large.official_match(
            _frame_or_compact(pred),
            _frame_or_compact(gold),
            condition_cols,
            spec.ignore_order,
            variant,
        )

    try:
        if single:
            ok = match(0, spec.condition_cols)
        else:
            per_gold = official.per_gold_condition_cols(spec.condition_cols, len(golds))
            ok = any(match(i, per_gold[i]) for i in range(len(golds)))
    except (MemoryError, DataError):
        raise  # not the comparison's doing: `guarded` names it
    except OverflowError as exc:  # an int beyond float64 met a number: the official float() fails
        return Verdict.fail(
            ErrorCode.WRONG_RESULT, f"official comparison raises OverflowError ({exc})"
        )
    except Exception as exc:  # the official scorer zeroes an instance on any error here
        return Verdict.fail(
            ErrorCode.GOLD_ERROR, f"official comparison failed: {type(exc).__name__}: {exc}"
        )
    if ok:
        return Verdict.ok()
    return Verdict.fail(
        ErrorCode.WRONG_RESULT,
        f"prediction {_shape(pred)} matches no gold "
        f"({', '.join(_shape(g) for g in golds)}; condition_cols={spec.condition_cols}, "
        f"ignore_order={spec.ignore_order})",
        _with_columns(_shapes(pred, golds), compared, variant),
    )


def _with_columns(
    detail: VerdictDetail, compared: Sequence[_Compared], variant: official.Variant
) -> VerdictDetail:
    """The gold alternative closest to the prediction, and which of its columns matched.

    Closest: the most compared columns matched, then the prediction's width, then the
    nearest row count (the first alternative on a tie). Read once the verdict is final: each
    comparison is finished from where the official loop stopped at its first miss; one that
    raises there is left out (as are compact tables, which keep no per-column answers), so
    the verdict never depends on it.
    """
    pred = detail.prediction_shape
    best: tuple[tuple[int, bool, int], int, tuple[int, ...], tuple[int, ...]] | None = None
    for one in compared:
        try:
            hits = one.hits + list(one.matches)
            positions = official.compared_positions(one.width, one.condition_cols, variant)
        except Exception as exc:  # past the official loop's first miss: no column detail
            _log.debug("no column detail for gold alternative %d: %r", one.index, exc)
            continue
        matched = tuple(p for p, hit in zip(positions, hits, strict=True) if hit)
        missing = tuple(p for p, hit in zip(positions, hits, strict=True) if not hit)
        shape = detail.gold_shapes[one.index]
        key = (
            len(matched),
            pred is not None and shape.columns == pred.columns,
            -abs(shape.rows - pred.rows) if pred is not None else 0,
        )
        if best is None or key > best[0]:
            best = key, one.index, matched, missing
    if best is None:
        return detail
    return replace(detail, closest_gold=best[1], matched_columns=best[2], missing_columns=best[3])


def strict_condition_cols(condition_cols: Any, n_golds: int) -> list[list[int] | None]:
    """Columns of each alternative under strict scoring (None: all columns).

    A nested list gives each alternative its own list; a flat list applies to every
    alternative (never only its first entry, never `0` meaning "all").
    """
    if condition_cols in (None, [], [[]], [None]):
        return [None] * n_golds
    if isinstance(condition_cols, list) and all(isinstance(c, list) for c in condition_cols):
        return [
            list(condition_cols[i]) if i < len(condition_cols) else None for i in range(n_golds)
        ]
    if isinstance(condition_cols, list):
        return [list(condition_cols)] * n_golds
    return [[condition_cols]] * n_golds


def _strict_verdict(
    pred: Table | CompactTable,
    arrays: PredArrays,
    golds: Sequence[Table | CompactTable],
    gold_arrays: GoldArrays,
    spec: EvalSpec,
) -> Verdict:
    pred_columns: list[strict.StrictColumn] = []
    converted: dict[int, strict.StrictColumn] = {}  # by array: a gold's that are the prediction's

    def strict_columns(arrays: Sequence[npt.NDArray[Any]]) -> list[strict.StrictColumn]:
        fresh = strict.strict_columns([a for a in arrays if id(a) not in converted])[::-1]
        return [converted[id(a)] if id(a) in converted else fresh.pop() for a in arrays]

    invalid: list[str] = []
    unreadable: list[str] = []
    for i, cols in enumerate(strict_condition_cols(spec.condition_cols, len(golds))):
        try:
            gold = golds[i]
        except DataError as exc:
            unreadable.append(str(exc))
            continue
        # a bool is an int to Python, but as a column index it is a config error
        if cols is not None and any(
            isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < gold.shape[1]
            for c in cols
        ):
            invalid.append(f"condition_cols {cols} out of range for {gold.shape[1]} columns")
            continue
        if not isinstance(pred, Table) or not isinstance(gold, Table):
            from querybench.evaluation.spider2 import large_scoring as large

            pair = _frame_or_compact(pred), _frame_or_compact(gold)
            if large.strict_match(*pair, cols, spec.ignore_order):
                return Verdict.ok()
            continue
        if not pred_columns:
            pred_columns.extend(strict.strict_columns(arrays()))
            converted.update((id(a), c) for a, c in zip(arrays(), pred_columns, strict=True))
        whole = gold_arrays(i)
        projected = whole if cols is None else [whole[c] for c in cols]  # checked in range
        if strict.strict_table_match(pred_columns, strict_columns(projected), spec.ignore_order):
            return Verdict.ok()
    if unreadable:  # it might have matched the alternative that could not be read
        return Verdict.fail(ErrorCode.GOLD_ERROR, "; ".join(unreadable))
    if len(invalid) == len(golds):
        return Verdict.fail(ErrorCode.GOLD_ERROR, "; ".join(invalid))
    return Verdict.fail(
        ErrorCode.WRONG_RESULT,
        f"prediction {_shape(pred)} matches no gold row for row "
        f"({', '.join(_shape(g) for g in golds)})",
        _shapes(pred, golds),
    )
