"""One error hierarchy for the whole package, so callers can catch `QuerybenchError`, and the
one vocabulary of error codes an instance's result can carry (`ErrorCode`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """The `error` field of every result and run record. A `StrEnum`, so each member *is* its
    JSON string; it lives here, at the bottom of the package, because engines and models raise
    errors that carry a code. Everything else names its members, imported from here."""

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


# The names of the classes that mean the same mistake on every engine.
NO_SUCH_COLUMN = "no such column"
NO_SUCH_TABLE = "no such table"
NO_SUCH_FUNCTION = "no such function"
AMBIGUOUS_COLUMN = "ambiguous column"
MISUSE_OF_AGGREGATE = "misuse of aggregate"
CONVERSION_ERROR = "conversion error"
UNDEFINED_OBJECT = "undefined object"
SYNTAX_ERROR = "syntax error"


def in_words(name: str) -> str:
    """A driver's class or code name as a class name: `DivisionByZero`, `DIVISION_BY_ZERO` ->
    `division by zero`."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")
    return " ".join(spaced.lower().split())


@dataclass(frozen=True)
class EngineErrorClass:
    """What an engine's failure really was, decided once where the error is made: from the
    driver's typed error (SQLSTATE, errno, exception class, result code) where it has one,
    else from its words (`classify_engine_error`).

    `kind` is the failure as a report counts it: an `exec_error` that timed out is a `TIMEOUT`,
    one refused by a read-only database a `REFUSED_WRITE`, one that never parsed a
    `PARSE_ERROR`. `name` is the engine's error class in one vocabulary across engines (`no
    such column`, `syntax error`, `binder error`, ...), empty for a timeout or a refusal.
    """

    kind: ErrorCode
    name: str = ""

    @classmethod
    def executed(cls, name: str) -> EngineErrorClass:
        return cls(ErrorCode.EXEC_ERROR, name)

    @classmethod
    def unparsed(cls, name: str = SYNTAX_ERROR) -> EngineErrorClass:
        return cls(ErrorCode.PARSE_ERROR, name)


TIMED_OUT = EngineErrorClass(ErrorCode.TIMEOUT)
REFUSED = EngineErrorClass(ErrorCode.REFUSED_WRITE)


# Lower-cased message fragments, first match wins: what kind of failure an engine message is
# (the fallback for an error no driver code classified: SQLite's one SQLITE_ERROR, a failure
# made here, one read back from an older cache).
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
    ("no such column", NO_SUCH_COLUMN),
    ("no such table", NO_SUCH_TABLE),
    ("no such function", NO_SUCH_FUNCTION),
    ("ambiguous column", AMBIGUOUS_COLUMN),
    ("misuse of aggregate", MISUSE_OF_AGGREGATE),
    ("binder error", "binder error"),
    ("catalog error", "catalog error"),
    ("conversion error", CONVERSION_ERROR),
    ("does not exist", UNDEFINED_OBJECT),
    ("unknown column", NO_SUCH_COLUMN),
    ("unknown identifier", NO_SUCH_COLUMN),
    ("invalid identifier", NO_SUCH_COLUMN),
    ("unrecognized name", NO_SUCH_COLUMN),
    ("unknown table", NO_SUCH_TABLE),
)
# The codes of a statement that failed on an engine; any other code is its own class.
STATEMENT_FAILURES = frozenset(
    {ErrorCode.TIMEOUT, ErrorCode.REFUSED_WRITE, ErrorCode.PARSE_ERROR, ErrorCode.EXEC_ERROR}
)


def classify_engine_error(code: ErrorCode, message: str) -> EngineErrorClass | None:
    """The class of a failed statement with this code and message, read from its words: the
    fallback for an error whose driver gave no code (see `EngineError.error_class`); None for
    a code that is not a statement's failure (`too_many_rows`, `engine_unavailable`, ...)."""
    if code not in STATEMENT_FAILURES:
        return None
    lowered = message.lower()
    if code == ErrorCode.TIMEOUT or (
        code == ErrorCode.EXEC_ERROR and _has(lowered, _TIMEOUT_MARKERS)
    ):
        return EngineErrorClass(ErrorCode.TIMEOUT)
    if code == ErrorCode.REFUSED_WRITE or (
        code == ErrorCode.EXEC_ERROR and _has(lowered, _REFUSED_MARKERS)
    ):
        return EngineErrorClass(ErrorCode.REFUSED_WRITE)
    if code == ErrorCode.PARSE_ERROR:
        return EngineErrorClass(code, engine_error_class(lowered) if lowered else "")
    if _has(lowered, _PARSE_MARKERS):
        return EngineErrorClass(ErrorCode.PARSE_ERROR, engine_error_class(lowered))
    return EngineErrorClass(ErrorCode.EXEC_ERROR, engine_error_class(lowered))


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


class QuerybenchError(Exception):
    """Base of every error querybench raises on purpose."""


class DataError(QuerybenchError):
    """An input file (tasks, gold, predictions, config) is missing or malformed."""


class EngineError(QuerybenchError):
    """A statement could not be run; `code` is the short error code reported per instance.

    An engine gives the failure's class (`error_class=`) from its driver's typed error, at the
    boundary where it catches it; a failure made without one is classified by its words."""

    code: ErrorCode = ErrorCode.EXEC_ERROR

    def __init__(self, message: str, error_class: EngineErrorClass | None = None) -> None:
        super().__init__(message)
        self.given_class = error_class  # kept when pickled: BaseException keeps `__dict__`

    @property
    def error_class(self) -> EngineErrorClass | None:
        """This failure's class: the engine's, or `classify_engine_error` of its code and
        message when it gave none."""
        if self.given_class is not None and self.code in STATEMENT_FAILURES:
            return self.given_class
        return classify_engine_error(self.code, str(self))


SEVERAL_STATEMENTS = "several statements"  # a refusal's statement kind for `a; b`
# A refusal's kind for a statement (or a view, a macro it reads) that would reach outside its
# database: a file, a glob, another database file, a URL (`read_csv`, `read_duckdb`, `glob`).
EXTERNAL_ACCESS = "external access"


class QueryRefused(EngineError):
    """The statement would write, attach, load an extension or is more than one statement."""

    code = ErrorCode.REFUSED_WRITE

    def __init__(self, message: str, statement: str | None = None) -> None:
        super().__init__(message, REFUSED)
        self.statement = statement  # the refused statement's kind (INSERT, ATTACH, ...) if known

    def __reduce__(self) -> tuple[type[QueryRefused], tuple[str, str | None], dict[str, Any]]:
        return type(self), (str(self), self.statement), vars(self)  # it crosses pipes intact


class QueryTimeout(EngineError):
    """The statement ran past its timeout and was interrupted."""

    code = ErrorCode.TIMEOUT

    def __init__(self, message: str) -> None:
        super().__init__(message, TIMED_OUT)


class ResultTooLarge(EngineError):
    """The statement returned more rows than the row cap allows."""

    code = ErrorCode.TOO_MANY_ROWS


class ResultTooManyBytes(ResultTooLarge):
    """The statement returned more bytes than the result byte cap allows."""

    code = ErrorCode.TOO_LARGE


class UnsettledDatabase(EngineError):
    """A database file whose sidecar (`-wal`, `-journal`) holds changes a reader applies on
    top of the file: its state is not the file's bytes, so no result on it is cached."""


class EngineUnavailable(EngineError):
    """No engine of this kind can be reached here (driver missing, no credentials)."""

    code = ErrorCode.ENGINE_UNAVAILABLE
