"""The outcome of scoring one prediction: a score and, unless it is 1, the reason: a code, a
message for people and the typed `VerdictDetail` a report reads."""

from __future__ import annotations

from dataclasses import dataclass

from querybench.errors import EngineError, ErrorCode, QueryRefused, classify_engine_error
from querybench.evaluation.detail import VerdictDetail

__all__ = ["Verdict", "VerdictDetail"]


@dataclass(frozen=True)
class Verdict:
    score: float
    error: ErrorCode | None = None
    message: str | None = None
    detail: VerdictDetail | None = None  # None on a pass

    @classmethod
    def ok(cls) -> Verdict:
        # Frozen, so one instance serves every pass (and pickles once per batch of them).
        return _PASSED

    @classmethod
    def fail(
        cls, error: ErrorCode, message: str | None = None, detail: VerdictDetail | None = None
    ) -> Verdict:
        return cls(0.0, error, message, _NOTHING_KNOWN if detail is None else detail)

    @classmethod
    def engine_error(cls, exc: EngineError) -> Verdict:
        """A statement that failed on an engine: its code, its words and its error class."""
        refused = exc.statement if isinstance(exc, QueryRefused) else None
        detail = VerdictDetail(engine_error=exc.error_class, refused_statement=refused)
        return cls.fail(exc.code, str(exc), detail)

    @classmethod
    def statement_failed(cls, error: ErrorCode, message: str) -> Verdict:
        """A statement failure found outside an engine (no SQL in the answer, a worker that
        died): classified by the same rules as an engine's own error."""
        return cls.fail(
            error, message, VerdictDetail(engine_error=classify_engine_error(error, message))
        )

    @property
    def passed(self) -> bool:
        return self.score == 1.0


_NOTHING_KNOWN = VerdictDetail()
_PASSED = Verdict(1.0)
