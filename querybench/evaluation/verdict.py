"""The outcome of scoring one prediction: a score and, unless it is 1, the reason."""

from __future__ import annotations

from dataclasses import dataclass

# Error codes reported per instance (the `error` field of every output line).
PARSE_ERROR = "parse_error"
EXEC_ERROR = "exec_error"
TIMEOUT = "timeout"
REFUSED_WRITE = "refused_write"
TOO_MANY_ROWS = "too_many_rows"
TOO_LARGE = "too_large"
WRONG_RESULT = "wrong_result"
MISSING_PREDICTION = "missing_prediction"
GOLD_ERROR = "gold_error"
ENGINE_UNAVAILABLE = "engine_unavailable"
BAD_PREDICTION_FILE = "bad_prediction_file"
SCORER_ERROR = "scorer_error"


@dataclass(frozen=True)
class Verdict:
    score: float
    error: str | None = None
    message: str | None = None

    @classmethod
    def ok(cls) -> Verdict:
        return cls(1.0)

    @classmethod
    def fail(cls, error: str, message: str | None = None) -> Verdict:
        return cls(0.0, error, message)

    @property
    def passed(self) -> bool:
        return self.score == 1.0
