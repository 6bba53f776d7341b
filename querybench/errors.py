"""One error hierarchy for the whole package, so callers can catch `QuerybenchError`, and the
one vocabulary of error codes an instance's result can carry (`ErrorCode`)."""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """The `error` field of every result and run record. A `StrEnum`, so each member *is* its
    JSON string; it lives here, at the bottom of the package, because engines and models raise
    errors that carry a code. `querybench.evaluation.verdict` re-exports it."""

    # The prediction ran (or could not) on an engine.
    PARSE_ERROR = "parse_error"
    EXEC_ERROR = "exec_error"
    TIMEOUT = "timeout"
    REFUSED_WRITE = "refused_write"
    COST_GUARD = "cost_guard"  # BigQuery: the dry-run estimate is over maximum_bytes_billed
    TOO_MANY_ROWS = "too_many_rows"
    TOO_LARGE = "too_large"
    ENGINE_UNAVAILABLE = "engine_unavailable"
    # Scoring.
    WRONG_RESULT = "wrong_result"
    MISSING_PREDICTION = "missing_prediction"
    BAD_PREDICTION_FILE = "bad_prediction_file"
    GOLD_ERROR = "gold_error"
    SCORER_ERROR = "scorer_error"
    # A run: the model, the context builder or the method failed on the instance.
    MODEL_ERROR = "model_error"
    BUDGET_EXHAUSTED = "budget_exhausted"
    CONTEXT_ERROR = "context_error"
    METHOD_ERROR = "method_error"
    NOT_SCORED = "not_scored"  # an answer recorded by a run that stopped before scoring it


class QuerybenchError(Exception):
    """Base of every error querybench raises on purpose."""


class DataError(QuerybenchError):
    """An input file (tasks, gold, predictions, config) is missing or malformed."""


class EngineError(QuerybenchError):
    """A statement could not be run; `code` is the short error code reported per instance."""

    code: ErrorCode = ErrorCode.EXEC_ERROR


class QueryRefused(EngineError):
    """The statement would write, attach, load an extension or is more than one statement."""

    code = ErrorCode.REFUSED_WRITE


class QueryTimeout(EngineError):
    """The statement ran past its timeout and was interrupted."""

    code = ErrorCode.TIMEOUT


class ResultTooLarge(EngineError):
    """The statement returned more rows than the row cap allows."""

    code = ErrorCode.TOO_MANY_ROWS


class ResultTooManyBytes(ResultTooLarge):
    """The statement returned more bytes than the result byte cap allows."""

    code = ErrorCode.TOO_LARGE


class EngineUnavailable(EngineError):
    """No engine of this kind can be reached here (driver missing, no credentials)."""

    code = ErrorCode.ENGINE_UNAVAILABLE
