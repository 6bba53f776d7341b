"""Every exception class of the package, in one hierarchy so callers can catch
`QuerybenchError`, and the one vocabulary of error codes an instance's result can carry
(`ErrorCode`). No other module defines an exception (`tests/test_errors.py` holds it so)::

    QuerybenchError
    ├── DataError                   an input file (tasks, gold, predictions, config) is wrong
    │   ├── OptionError (TypeError) an option holds a value of the wrong type
    │   └── PredictionRefused       a prediction file not read, with its error code
    ├── EngineError                 a statement could not be run (`code`, `error_class`)
    │   ├── QueryRefused            a write, attach, extension or several statements
    │   │   └── CostGuardExceeded   BigQuery's dry run is over `maximum_bytes_billed`
    │   ├── QueryTimeout
    │   ├── ResultTooLarge          too many rows
    │   │   └── ResultTooManyBytes
    │   │       └── QueryOutOfMemory  past the query child's memory cap
    │   ├── AnswerTooLarge          an answer past its bound, never run
    │   ├── UnsettledDatabase       a sidecar (-wal, -journal) holds changes
    │   └── EngineUnavailable       no driver or no credentials here
    ├── FetchError                  a download not completed or verified
    │   ├── HtmlPageError
    │   └── UnsafeArchive           a tar's headers or a member's place refused
    ├── DatabaseProblem             a database or table that cannot be scored
    ├── ScoringStopped              an agentic answer's tables stop with a verdict
    ├── AnswerRefused               an agentic answer's path leaves its folder
    │   └── UnresolvablePath
    ├── GoldParametersError (ValueError)  unusable agentic gold parameters
    ├── SqlTokenError, SqlParseError      Spider 1.0 exact match's reading of SQL
    ├── BudgetTooSmall              the schema context cannot fit its token budget
    ├── ModelError                  the model could not answer (`code`, `transient`)
    │   ├── EndpointUnavailable
    │   └── BudgetExhausted
    ├── RetryableReply              a model reply worth asking again
    ├── MalformedToolCall, ProtocolError  an agent's reply that cannot be read
    ├── UnsafePath, WorkspaceFull   an agent's workspace refuses a file
    ├── RayUnavailable              `executor="ray"` without Ray
    ├── RunFolderBusy               another process writes the run folder
    └── NotRegularFile (OSError)    a FIFO, device or folder where a file is read
    SubmissionWarning (UserWarning) a submission line read differently from what it says
"""

from __future__ import annotations

import errno
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


class QueryOutOfMemory(ResultTooManyBytes):
    """The statement needed more memory than the query child may take (its OS memory cap, or
    DuckDB's `memory_limit` below it): a result or an intermediate too large, as a byte cap."""


class AnswerTooLarge(EngineError):
    """An answer (the RL reward's completion, or its SQL) past the bound of one answer
    (`prediction_file.MAX_ANSWER_BYTES`): that answer's `too_large`, never sent or run."""

    code = ErrorCode.TOO_LARGE


class UnsettledDatabase(EngineError):
    """A database file whose sidecar (`-wal`, `-journal`) holds changes a reader applies on
    top of the file: its state is not the file's bytes, so no result on it is cached."""


class EngineUnavailable(EngineError):
    """No engine of this kind can be reached here (driver missing, no credentials)."""

    code = ErrorCode.ENGINE_UNAVAILABLE


class OptionError(DataError, TypeError):
    """An option holds a value of the wrong type (or is not an option at all)."""


class FetchError(QuerybenchError):
    """A download could not be completed or verified, or an archive not unpacked."""


class HtmlPageError(FetchError):
    """An HTML page arrived (or sits) where an archive was expected."""

    def __init__(self, source: str, title: str) -> None:
        self.source, self.title = source, title
        super().__init__(f"{source} is an HTML page ({title!r}), not the archive")


class CostGuardExceeded(QueryRefused):
    """The dry-run estimate is above the `maximum_bytes_billed` guard; nothing was run."""

    code = ErrorCode.COST_GUARD

    def __init__(self, estimated_bytes: int, maximum_bytes_billed: int) -> None:
        super().__init__(
            f"refused: the query would process {estimated_bytes} bytes, over the "
            f"maximum_bytes_billed guard of {maximum_bytes_billed} bytes"
        )
        self.estimated_bytes = estimated_bytes
        self.maximum_bytes_billed = maximum_bytes_billed


class PredictionRefused(DataError):
    """A prediction file that is not read, with the instance's error code."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class DatabaseProblem(QuerybenchError):
    """A database or one of its tables that cannot be scored, with the instance's code."""

    def __init__(self, code: ErrorCode, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.timed_out = timed_out


class ScoringStopped(QuerybenchError):
    """Stops scoring an agentic answer's tables with a verdict of its `code`."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class AnswerRefused(QuerybenchError):
    """An agentic answer's file name that leaves its submission folder: never opened."""


class UnresolvablePath(AnswerRefused):
    """The official code opens the joined path as written, so the system resolves each `..`
    after the folder before it: `<id>/../shared_files/x.csv` from a task folder `<id>/` that
    does not exist cannot be opened (officially that answer scores 0, or a `.sql` answer
    crashes the run), though the lexical path names a file that is there."""


class GoldParametersError(QuerybenchError, ValueError):
    """The gold parameters are unusable; reported as `gold_error`."""


class SqlTokenError(QuerybenchError):
    """The text cannot be tokenized the official way (an odd number of quotes)."""


class SqlParseError(QuerybenchError):
    """The official parser cannot read the query; the message says where it stopped."""


class BudgetTooSmall(QuerybenchError):
    """Not even the database header fits in the budget."""


class ModelError(QuerybenchError):
    """The model could not answer (endpoint down, retries spent, bad reply); the instance is
    recorded with `code`, the run goes on. `transient` marks a transport-level failure
    (connection, timeout, 5xx, 429): no answer came back, so a re-run asks again; a reply that
    came back unusable (a refusal, malformed JSON) is not transient. `status` is the last HTTP
    status, when there was one."""

    code: ErrorCode = ErrorCode.MODEL_ERROR

    def __init__(self, message: str, *, transient: bool = False, status: int | None = None):
        super().__init__(message)
        self.transient = transient
        self.status = status


class EndpointUnavailable(ModelError):
    """The endpoint cannot serve this run (unreachable, key refused, unknown model, or down
    for several tasks in a row): the run stops at once, finished instances kept."""


class BudgetExhausted(ModelError):
    """The run's request budget is spent; unfinished instances stay unfinished (resumable)."""

    code = ErrorCode.BUDGET_EXHAUSTED


class RetryableReply(QuerybenchError):
    """A model reply worth asking again (`reason`: timeout, connection, an HTTP status or
    malformed), turned into a `ModelError` when the retries are spent."""

    def __init__(
        self,
        reason: str,
        message: str,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.retry_after = retry_after
        self.status = status

    @property
    def transient(self) -> bool:
        """No answer came back (connection, timeout, 5xx, 429), as opposed to a malformed one."""
        return self.reason != "malformed"


class UnsafeArchive(FetchError):
    """An archive not unpacked: a tar header past what the reader takes, or a member landing
    outside its folder or on another's (`tar_checks.py`: downloaded archives, a workspace
    packed out of the agent's sandbox)."""


class MalformedToolCall(QuerybenchError):
    """A `tool_calls` entry without a function name: the reply itself is unusable."""


class ProtocolError(QuerybenchError):
    """The reply holds no action we can read; the message is shown to the model."""


class UnsafePath(QuerybenchError):
    """A name the host will not open on the agent's behalf; the message says why."""


class WorkspaceFull(QuerybenchError):
    """The workspace (or the sandbox's /tmp) passed its size bound: the task ends here."""


class RayUnavailable(QuerybenchError):
    """`--executor ray` without Ray installed."""


class RunFolderBusy(QuerybenchError):
    """Another process is writing this run folder."""


class NotRegularFile(QuerybenchError, OSError):
    """A path that is no regular file (a FIFO, a device, a folder), refused before any read
    (`file_digests.open_regular`); an `OSError`, as the failed open it stands for."""

    def __init__(self, path: object) -> None:
        super().__init__(errno.EINVAL, "not a regular file", str(path))


class SubmissionWarning(UserWarning):
    """A submission line `eval spider2` ignores or reads differently from what it says."""
