"""How one entry of the result cache is written and read back: no code runs on reading.

A result is a pickle of plain values behind a magic line, read back with an unpickler that can
only build the value types the drivers return; a failure is JSON (its class and exact words).
Anything else, a truncated or planted entry, reads as None: a miss.
"""

from __future__ import annotations

import functools
import io
import json
import pickle
import re
import sys
from typing import Any

from querybench.engines.base import Result
from querybench.errors import EngineError, EngineErrorClass, ErrorCode, QueryRefused

Outcome = Result | EngineError

MAGIC = b"querybench result cache v1\n"
# v2: a failure keeps the class its engine read from the driver (v1 kept its words only)
ERROR_MAGIC = b"querybench error cache v2\n"
# Failures that depend on nothing but the database and the SQL; their message, word for word.
_STORED_ERRORS: dict[str, type[EngineError]] = {
    "EngineError": EngineError,
    "QueryRefused": QueryRefused,
}
_ENVIRONMENTAL = (  # messages of failures that are the machine's, not the query's
    "unexpected ",
    "out of memory",
    "the query's process",
    "the query process",
    "the result cannot be handed over",
    "the database could not be opened",
    "database file not found",
    "cannot open",
    "cannot read the schema",
    "unable to open",
    "disk i/o",
    "is locked",  # the database, a table
    "interrupt",
    "disk is full",  # a sort or a join spilled to a full temporary folder
    "no space left",
    "io error",  # DuckDB's class for a failed read or write
    "too many open files",
    "is closed",
    "schema has changed",  # another process changed the file while it ran
)
# What makes a query's rows those of the moment or of the machine, not of the database's bytes:
# the clock (SQLite's 'now', CURRENT_TIMESTAMP, DuckDB's now() / today()), the local time zone
# ('localtime', 'utc'), a random draw (random(), randomblob(), uuid(), not a ::UUID cast), the
# file's own path or name (pragma_database_list, current_database(): a copy elsewhere has the
# same bytes) or the engine's settings (current_setting('threads'), duckdb_settings()).
# BIRD's gold computes ages from CURRENT_TIMESTAMP: a stored year would meet a later run's.
_VOLATILE = re.compile(
    r"random|\buuid\s*\(|current_(date|time|database|catalog|setting)|transaction_timestamp"
    r"|\bnow\b|\btoday\b|localtime|\butc\b|pragma|database_list|duckdb_",
    re.I,
)
# A literal every alternative of `_VOLATILE` holds: ASCII text holding none of them (lowercased)
# cannot match, found with `in` at C speed (the case-blind regex costs 25 us a query, 40 ms a
# BIRD run, and it is asked of every query a few times over).
_VOLATILE_WORDS = (
    "random",
    "uuid",
    "current_",
    "transaction_timestamp",
    "now",
    "today",
    "localtime",
    "utc",
    "pragma",
    "database_list",
    "duckdb_",
)
_SAFE_GLOBALS = frozenset(
    {
        ("decimal", "Decimal"),
        ("datetime", "date"),
        ("datetime", "datetime"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        ("uuid", "UUID"),
        ("uuid", "SafeUUID"),
        ("zoneinfo", "ZoneInfo"),
    }
)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        # ZoneInfo pickles through `getattr`, which the safe loader must not allow.
        # no zone exists before zoneinfo is imported: importing it here would cost every eval 3 ms
        zoneinfo = sys.modules.get("zoneinfo")
        if zoneinfo is not None and isinstance(obj, zoneinfo.ZoneInfo):
            return zoneinfo.ZoneInfo, (obj.key,)
        return NotImplemented


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _SAFE_GLOBALS:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in the result cache")
        return super().find_class(module, name)


def dump_result(result: Result) -> bytes:
    buffer = io.BytesIO()
    buffer.write(MAGIC)
    payload = (list(result.columns), result.rows, result.elapsed_s, result.extra)
    _Pickler(buffer, protocol=5).dump(payload)
    return buffer.getvalue()


@functools.lru_cache(maxsize=4096)  # asked of every query by each lookup and write of a run
def volatile(sql: str) -> bool:
    """Whether `sql` may read the clock, the time zone, a random draw, the file's path or the
    engine's settings (a word of those in a name or a string is taken for one too: it only
    costs running the query again)."""
    if sql.isascii():  # beyond ASCII, case-blind matching is more than `lower`: the regex alone
        lowered = sql.lower()
        if not any(word in lowered for word in _VOLATILE_WORDS):
            return False
    return _VOLATILE.search(sql) is not None


def storable_error(error: EngineError) -> bool:
    """Whether `error` is the query's own deterministic failure (bad SQL, a refusal), never a
    timeout, a cap, a crash or anything of the machine's."""
    if _STORED_ERRORS.get(type(error).__name__) is not type(error):
        return False
    kind = error.error_class
    if kind is None or kind.kind == ErrorCode.TIMEOUT:
        return False
    message = str(error).lower()
    return not any(marker in message for marker in _ENVIRONMENTAL)


def dump_error(error: EngineError) -> bytes:
    fields: dict[str, str | None] = {"class": type(error).__name__, "message": str(error)}
    if isinstance(error, QueryRefused):
        fields["statement"] = error.statement
    elif error.given_class is not None:  # what the driver's code said, so a warm run says it too
        fields["kind"], fields["name"] = error.given_class.kind.value, error.given_class.name
    return ERROR_MAGIC + json.dumps(fields).encode()


def load_outcome(data: bytes) -> Outcome | None:
    """A stored result or failure, or None for anything not well formed."""
    if not data.startswith(ERROR_MAGIC):
        return load_result(data)
    try:
        fields = json.loads(data[len(ERROR_MAGIC) :])
        make, message = _STORED_ERRORS[fields["class"]], fields["message"]
        if not isinstance(message, str):
            return None
        if make is QueryRefused:
            statement = fields.get("statement")
            return QueryRefused(message, statement if isinstance(statement, str) else None)
        kind, name = fields.get("kind"), fields.get("name")
        given = EngineErrorClass(ErrorCode(kind), name) if isinstance(name, str) and kind else None
        return make(message, given)
    except Exception:
        return None


def load_result(data: bytes) -> Result | None:
    """The stored result, or None for anything that is not a well-formed cache file."""
    if not data.startswith(MAGIC):
        return None
    try:
        columns, rows, elapsed_s, extra = _SafeUnpickler(io.BytesIO(data[len(MAGIC) :])).load()
        if not (isinstance(columns, list) and isinstance(rows, list) and isinstance(extra, dict)):
            return None
        if rows and {*map(type, rows)} != {tuple}:  # as the drivers give them: scorers hash them
            return None
        return Result(tuple(columns), rows, float(elapsed_s), {**extra, "cached": True})
    except Exception:
        return None
