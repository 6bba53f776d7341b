"""The outcome of scoring one prediction: a score and, unless it is 1, the reason."""

from __future__ import annotations

from dataclasses import dataclass

from querybench.errors import ErrorCode

__all__ = ["ErrorCode", "Verdict"]

# The codes' former names, kept so callers keep working: each is the ErrorCode member.
PARSE_ERROR = ErrorCode.PARSE_ERROR
EXEC_ERROR = ErrorCode.EXEC_ERROR
TIMEOUT = ErrorCode.TIMEOUT
REFUSED_WRITE = ErrorCode.REFUSED_WRITE
TOO_MANY_ROWS = ErrorCode.TOO_MANY_ROWS
TOO_LARGE = ErrorCode.TOO_LARGE
WRONG_RESULT = ErrorCode.WRONG_RESULT
MISSING_PREDICTION = ErrorCode.MISSING_PREDICTION
GOLD_ERROR = ErrorCode.GOLD_ERROR
ENGINE_UNAVAILABLE = ErrorCode.ENGINE_UNAVAILABLE
BAD_PREDICTION_FILE = ErrorCode.BAD_PREDICTION_FILE
SCORER_ERROR = ErrorCode.SCORER_ERROR


@dataclass(frozen=True)
class Verdict:
    score: float
    error: ErrorCode | None = None
    message: str | None = None

    @classmethod
    def ok(cls) -> Verdict:
        return cls(1.0)

    @classmethod
    def fail(cls, error: ErrorCode, message: str | None = None) -> Verdict:
        return cls(0.0, error, message)

    @property
    def passed(self) -> bool:
        return self.score == 1.0
