"""Why a verdict failed, as typed fields: the shapes compared, how the result differs, the
engine's error class, the refused statement. Scorers fill it where they know it; the report
reads these fields and never the message, which is free text for people."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from querybench.errors import DataError, EngineErrorClass, ErrorCode

__all__ = ["Difference", "Shape", "VerdictDetail", "shape_difference"]


class Difference(StrEnum):
    """How a wrong result differs from the gold: the categories a `wrong_result` splits into."""

    EMPTY_RESULT = "empty_result"
    WRONG_COLUMNS = "wrong_columns"
    WRONG_ROWS = "wrong_rows"
    WRONG_ORDER = "wrong_order"
    WRONG_VALUES = "wrong_values"


@dataclass(frozen=True)
class Shape:
    """A result's size as the scorer compared it."""

    rows: int
    columns: int


def shape_difference(prediction: Shape, golds: Sequence[Shape]) -> Difference:
    """The difference the shapes alone show (`wrong_values` when they agree).

    Spider 2.0's official match lets a prediction carry extra columns, so only fewer columns
    than every gold (or a count no gold has, when none has fewer) is a column mistake; the
    same rule reads a Spider 1.0 pair, which has one gold.
    """
    if prediction.rows == 0:
        return Difference.EMPTY_RESULT
    widths = {gold.columns for gold in golds}
    if prediction.columns not in widths and not any(prediction.columns > c for c in widths):
        return Difference.WRONG_COLUMNS
    if prediction.rows not in {gold.rows for gold in golds}:
        return Difference.WRONG_ROWS
    return Difference.WRONG_VALUES


@dataclass(frozen=True)
class VerdictDetail:
    """The typed reason of a failed verdict; every field is optional (unknown to its scorer).

    `difference` is set on a `wrong_result` whose scorer knows it (None reads as
    `wrong_values`); `gold_shapes` has one entry per gold alternative, in their order;
    `closest_gold` indexes them; `matched_columns` / `missing_columns` are the closest gold's
    column indices that some predicted column matches / that none does; `engine_error` is the
    class of a statement that failed on an engine (parse, exec, timeout, refusal);
    `refused_statement` the kind of a refused statement (`INSERT`, `ATTACH`, ...).
    """

    difference: Difference | None = None
    prediction_shape: Shape | None = None
    gold_shapes: tuple[Shape, ...] = ()
    closest_gold: int | None = None
    matched_columns: tuple[int, ...] = ()
    missing_columns: tuple[int, ...] = ()
    engine_error: EngineErrorClass | None = None
    refused_statement: str | None = None

    @classmethod
    def of_shapes(
        cls, prediction: Shape, golds: Sequence[Shape], difference: Difference | None = None
    ) -> VerdictDetail:
        """A wrong result's shapes, with the difference they show unless the scorer knows it."""
        found = shape_difference(prediction, golds) if difference is None else difference
        return cls(found, prediction, tuple(golds))

    def to_json(self) -> dict[str, object]:
        """The fields that are set, as plain JSON values."""
        out: dict[str, object] = {}
        if self.difference is not None:
            out["difference"] = self.difference.value
        if self.prediction_shape is not None:
            out["prediction_shape"] = [self.prediction_shape.rows, self.prediction_shape.columns]
        if self.gold_shapes:
            out["gold_shapes"] = [[s.rows, s.columns] for s in self.gold_shapes]
        if self.closest_gold is not None:
            out["closest_gold"] = self.closest_gold
        if self.matched_columns or self.missing_columns:
            out["matched_columns"] = list(self.matched_columns)
            out["missing_columns"] = list(self.missing_columns)
        if self.engine_error is not None:
            out["engine_error"] = {
                "kind": self.engine_error.kind.value,
                "name": self.engine_error.name,
            }
        if self.refused_statement is not None:
            out["refused_statement"] = self.refused_statement
        return out

    @classmethod
    def from_json(cls, data: object) -> VerdictDetail:
        """The inverse of `to_json`; `DataError` when `data` is not one."""
        if not isinstance(data, Mapping):
            raise DataError(f"a verdict detail is an object, not {data!r:.80}")
        try:
            engine = data.get("engine_error")
            pred = data.get("prediction_shape")
            closest = data.get("closest_gold")
            refused = data.get("refused_statement")
            difference = data.get("difference")
            return cls(
                difference=None if difference is None else Difference(difference),
                prediction_shape=None if pred is None else _shape(pred),
                gold_shapes=tuple(_shape(s) for s in data.get("gold_shapes", ())),
                closest_gold=None if closest is None else int(closest),
                matched_columns=tuple(int(i) for i in data.get("matched_columns", ())),
                missing_columns=tuple(int(i) for i in data.get("missing_columns", ())),
                engine_error=None
                if engine is None
                else EngineErrorClass(ErrorCode(engine["kind"]), str(engine.get("name", ""))),
                refused_statement=None if refused is None else str(refused),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(f"not a verdict detail ({exc}): {str(data)[:120]}") from exc


def _shape(value: object) -> Shape:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError(f"a shape is [rows, columns], not {value!r:.40}")
    return Shape(int(value[0]), int(value[1]))
