"""Why an instance failed, in the report's error taxonomy.

The categories are `parse_error`, `exec_error` (with the engine's error class), `timeout`,
`empty_result`, `wrong_columns`, `wrong_rows`, `wrong_order`, `wrong_values`, `refused_write`
and `model_error`; any other code (`missing_prediction`, `gold_error`, ...) is kept as it is.
They are read from the result's error code and message and, for an instance the model never
answered, from its run record: the scorers already say what happened, this module only names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from querybench.errors import ErrorCode
from querybench.evaluation.record import InstanceResult
from querybench.runs.store import InstanceRecord


class Difference(StrEnum):
    """How a wrong result differs from the gold: the categories a `wrong_result` splits into."""

    EMPTY_RESULT = "empty_result"
    WRONG_COLUMNS = "wrong_columns"
    WRONG_ROWS = "wrong_rows"
    WRONG_ORDER = "wrong_order"
    WRONG_VALUES = "wrong_values"


MODEL_CODES = frozenset({ErrorCode.MODEL_ERROR, ErrorCode.BUDGET_EXHAUSTED})

# Lower-cased message fragments, first match wins: what kind of failure an engine message is.
_TIMEOUT_MARKERS = ("timeout", "timed out", "ran past its", "interrupted", "query was cancelled")
_REFUSED_MARKERS = ("refused:", "not allowed (read-only)", "readonly database", "read-only")
_PARSE_MARKERS = (
    "syntax error",
    "parser error",
    "parse error",
    "incomplete input",
    "unrecognized token",
    "empty sql",
    "empty statement",
    "no sql found",
)
# The engine's error class for the rest: SQLite's wording, then DuckDB's, PostgreSQL's,
# MySQL's, ClickHouse's, Snowflake's and BigQuery's names for the same mistakes.
_EXEC_CLASSES = (
    ("no such column", "no such column"),
    ("no such table", "no such table"),
    ("no such function", "no such function"),
    ("ambiguous column", "ambiguous column"),
    ("misuse of aggregate", "misuse of aggregate"),
    ("binder error", "binder error"),
    ("catalog error", "catalog error"),
    ("conversion error", "conversion error"),
    ("does not exist", "undefined object"),
    ("unknown column", "no such column"),
    ("unknown identifier", "no such column"),
    ("invalid identifier", "no such column"),
    ("unrecognized name", "no such column"),
    ("unknown table", "no such table"),
)

_ROWS_BY_COLUMNS = re.compile(r"(\d+) rows x (\d+) columns|\b(\d+)x(\d+)\b")
_BIRD_ROWS = re.compile(r"gold (\d+) distinct rows, prediction (\d+)$")


@dataclass(frozen=True)
class Diagnosis:
    category: str
    detail: str = ""  # the engine's error class for exec_error / parse_error

    @property
    def label(self) -> str:
        return f"{self.category}: {self.detail}" if self.detail else self.category


def diagnose(result: InstanceResult, record: InstanceRecord | None = None) -> Diagnosis | None:
    """The failure category of one scored instance; None when it passed."""
    code, message = result.error, result.message or ""
    if record is not None and not record.ok:  # the model never answered: its own error wins
        code, message = record.error or code, record.message or message
    if result.score == 1.0 and not (record is not None and not record.ok):
        return None
    lowered = message.lower()
    if code in MODEL_CODES:
        return Diagnosis(ErrorCode.MODEL_ERROR, "" if code == ErrorCode.MODEL_ERROR else code)
    if code == ErrorCode.TIMEOUT or (
        code == ErrorCode.EXEC_ERROR and _has(lowered, _TIMEOUT_MARKERS)
    ):
        return Diagnosis(ErrorCode.TIMEOUT)
    if code == ErrorCode.REFUSED_WRITE or (
        code == ErrorCode.EXEC_ERROR and _has(lowered, _REFUSED_MARKERS)
    ):
        return Diagnosis(ErrorCode.REFUSED_WRITE)
    if code == ErrorCode.PARSE_ERROR:
        return Diagnosis(ErrorCode.PARSE_ERROR, engine_error_class(lowered) if lowered else "")
    if code == ErrorCode.EXEC_ERROR:
        if _has(lowered, _PARSE_MARKERS):
            return Diagnosis(ErrorCode.PARSE_ERROR, engine_error_class(lowered))
        return Diagnosis(ErrorCode.EXEC_ERROR, engine_error_class(lowered))
    if code == ErrorCode.WRONG_RESULT or (code is None and result.score < 1.0):
        return Diagnosis(difference_kind(lowered))
    return Diagnosis(code or "unknown")


def _has(text: str, markers: tuple[str, ...]) -> bool:
    return any(m in text for m in markers)


def engine_error_class(message: str) -> str:
    """A short class for an engine's error message: `no such column`, `binder error`, ..."""
    message = message.lower().strip()
    for marker in _PARSE_MARKERS:
        if marker in message:
            return marker
    for marker, name in _EXEC_CLASSES:
        if marker in message:
            return name
    if message.startswith("unexpected "):  # the pool's wrapper: `unexpected ValueError: ...`
        return message.split(":", 1)[0]
    head = message.split(":", 1)[0].strip() if ":" in message else message
    return head if head and len(head) <= 40 else "other"


def difference_kind(message: str) -> str:
    """empty_result, wrong_columns, wrong_rows, wrong_order or wrong_values, read from the shapes
    the scorers put in their messages: Spider 1.0 `gold A rows x B columns, prediction ...`,
    Spider 2.0 `prediction RxC matches no gold (R1xC1, ...)`, BIRD `gold N distinct rows,
    prediction M`."""
    message = message.lower()
    if "different order" in message:
        return Difference.WRONG_ORDER
    bird = _BIRD_ROWS.search(message)
    if bird:
        gold_rows, pred_rows = int(bird.group(1)), int(bird.group(2))
        return (
            Difference.EMPTY_RESULT
            if pred_rows == 0
            else Difference.WRONG_ROWS
            if pred_rows != gold_rows
            else Difference.WRONG_VALUES
        )
    shapes = [
        (int(m.group(1) or m.group(3)), int(m.group(2) or m.group(4)))
        for m in _ROWS_BY_COLUMNS.finditer(message)
    ]
    if len(shapes) < 2:
        return Difference.WRONG_VALUES
    if message.startswith("prediction"):
        pred, golds = shapes[0], shapes[1:]
    else:
        pred, golds = shapes[1], [shapes[0]]
    if pred[0] == 0:
        return Difference.EMPTY_RESULT
    # Spider 2.0's official match lets a prediction carry extra columns: only fewer columns
    # than every gold (or a count no gold has, when none has fewer) is a column mistake.
    if pred[1] not in {c for _, c in golds} and not any(pred[1] > c for _, c in golds):
        return Difference.WRONG_COLUMNS
    if pred[0] not in {r for r, _ in golds}:
        return Difference.WRONG_ROWS
    return Difference.WRONG_VALUES
