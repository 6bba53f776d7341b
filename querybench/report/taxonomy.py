"""Why an instance failed, in the report's error taxonomy.

The categories are `parse_error`, `exec_error` (with the engine's error class), `timeout`,
`empty_result`, `wrong_columns`, `wrong_rows`, `wrong_order`, `wrong_values`, `refused_write`
and `model_error`; any other code (`missing_prediction`, `gold_error`, ...) is kept as it is.
They are read from the result's error code and its typed `VerdictDetail` and, for an instance
the model never answered, from its run record's code: the scorers already say what happened
(and engines classify their own errors, `errors.classify_engine_error`), this module only
names it. The message is never read. A results file written before details existed gets the
code-level category only (`wrong_result`, `exec_error` without a class): its messages are
free text, and re-scoring it with `querybench eval` writes the details.
"""

from __future__ import annotations

from dataclasses import dataclass

from querybench.errors import STATEMENT_FAILURES, ErrorCode
from querybench.evaluation.detail import Difference
from querybench.evaluation.record import InstanceResult
from querybench.runs.store import InstanceRecord

__all__ = ["Diagnosis", "Difference", "diagnose"]

MODEL_CODES = frozenset({ErrorCode.MODEL_ERROR, ErrorCode.BUDGET_EXHAUSTED})


@dataclass(frozen=True)
class Diagnosis:
    category: str
    detail: str = ""  # the engine's error class for exec_error / parse_error

    @property
    def label(self) -> str:
        return f"{self.category}: {self.detail}" if self.detail else self.category


def diagnose(result: InstanceResult, record: InstanceRecord | None = None) -> Diagnosis | None:
    """The failure category of one scored instance; None when it passed."""
    unanswered = record is not None and not record.ok
    if result.score == 1.0 and not unanswered:
        return None
    code, detail = result.error, result.detail
    if unanswered and record is not None and record.error:  # the model's own error wins
        code, detail = record.error, None  # a run record carries a code, no detail
    if code in MODEL_CODES:
        return Diagnosis(ErrorCode.MODEL_ERROR, "" if code == ErrorCode.MODEL_ERROR else code)
    if code in STATEMENT_FAILURES:
        found = detail.engine_error if detail is not None else None
        if found is None:  # a legacy result (or a scorer that could not tell): the code
            return Diagnosis(code)
        return Diagnosis(found.kind, found.name)
    if code == ErrorCode.WRONG_RESULT or (code is None and result.score < 1.0):
        if detail is None and code is not None:  # a legacy result: the code alone
            return Diagnosis(code)
        found_difference = detail.difference if detail is not None else None
        return Diagnosis(found_difference or Difference.WRONG_VALUES)
    return Diagnosis(code or "unknown")
