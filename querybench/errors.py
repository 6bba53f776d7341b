"""One error hierarchy for the whole package, so callers can catch `QuerybenchError`."""

from __future__ import annotations


class QuerybenchError(Exception):
    """Base of every error querybench raises on purpose."""


class DataError(QuerybenchError):
    """An input file (tasks, gold, predictions, config) is missing or malformed."""


class EngineError(QuerybenchError):
    """A statement could not be run; `code` is the short error code reported per instance."""

    code = "exec_error"


class QueryRefused(EngineError):
    """The statement would write, attach, load an extension or is more than one statement."""

    code = "refused_write"


class QueryTimeout(EngineError):
    """The statement ran past its timeout and was interrupted."""

    code = "timeout"


class ResultTooLarge(EngineError):
    """The statement returned more rows than the row cap allows."""

    code = "too_many_rows"


class ResultTooManyBytes(ResultTooLarge):
    """The statement returned more bytes than the result byte cap allows."""

    code = "too_large"


class EngineUnavailable(EngineError):
    """No engine of this kind can be reached here (driver missing, no credentials)."""

    code = "engine_unavailable"
