"""A server's numbered errors as querybench's: which numbers are a timeout, a refusal, a result
too long or a syntax error, and which name a mistake every engine makes (in the one vocabulary
of `errors.py`). MySQL's errno and ClickHouse's code are each one `ErrorNumbers` table read
here the same way; an engine says only how it finds the number and names the others."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from querybench.errors import (
    EngineError,
    EngineErrorClass,
    QueryRefused,
    QueryTimeout,
    ResultTooLarge,
)


@dataclass(frozen=True)
class ErrorNumbers:
    """One engine's error numbers."""

    timeouts: frozenset[int]
    refused: frozenset[int]
    syntax: int
    mistakes: Mapping[int, str]  # number -> the vocabulary's word (`no such column`)
    too_many_rows: frozenset[int] = field(default_factory=frozenset)

    def known_class(self, code: int) -> EngineErrorClass | None:
        """The class of a number that names a mistake every engine makes, else None."""
        word = self.mistakes.get(code)
        return None if word is None else EngineErrorClass.executed(word)

    def error(
        self,
        code: int | None,
        message: str,
        timeout: float | None,
        error_class: Callable[[], EngineErrorClass | None],
        max_rows: int | None = None,
    ) -> EngineError:
        """The error a failed query raises; `error_class` classifies any other number."""
        if code in self.timeouts:
            return QueryTimeout(f"the query ran past its {timeout}s timeout and was stopped")
        if code in self.refused:
            return QueryRefused(f"refused: {message}")
        if code in self.too_many_rows:
            return ResultTooLarge(f"the result has more than {max_rows} rows")
        if code == self.syntax:
            return EngineError(f"syntax error: {message}", EngineErrorClass.unparsed())
        return EngineError(message, error_class())
