"""The one interface every engine implements, and the typed values it returns."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self

from querybench.engines.registry import EngineSpec
from querybench.errors import EngineError, ResultTooLarge, ResultTooManyBytes
from querybench.file_digests import refusal, regular_database

if TYPE_CHECKING:
    import pyarrow as pa


FETCH_CHUNK = 10_000


@dataclass(frozen=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    schema: str | None = None


@dataclass(frozen=True)
class Result:
    """Rows of one statement, as the database returned them.

    `rows` keeps the driver's own Python values: the official Spider 1.0, BIRD and Spider 2.0
    scorers compare exactly those (SQLite cells may mix types within a column), so no layer may
    coerce them. `to_arrow()` gives the columnar view for everything else.
    """

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    elapsed_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_arrow(self) -> pa.Table:
        import pyarrow as pa  # 0.2 s to import: only the columnar callers pay it

        arrays = []
        for i in range(len(self.columns)):
            values = [row[i] for row in self.rows]
            try:
                arrays.append(pa.array(values))
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                # A column mixing types (SQLite allows it) is shown as text.
                arrays.append(pa.array([None if v is None else str(v) for v in values]))
        names = _unique_names(self.columns)
        return pa.Table.from_arrays(arrays, names=names)


def _unique_names(names: tuple[str, ...]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        n = seen.get(name, 0)
        out.append(name if n == 0 else f"{name}_{n}")
        seen[name] = n + 1
    return out


# Rows handed out batch by batch; a generator, so a consumer that stops early closes it and
# the engine's cursor with it (`contextlib.closing`).
Batches = Generator[list[tuple[Any, ...]], None, None]
# Takes each batch of rows pushed to it (`feed_batches`) and says whether to read on.
Sink = Callable[[list[tuple[Any, ...]]], bool]


class Engine(Protocol):
    """A read-only connection to one database; `with engine:` closes it.

    `execute` runs exactly one statement; it raises `QueryRefused` for anything that would write,
    `QueryTimeout` when `timeout` seconds pass (the query is really stopped), `ResultTooLarge`
    past `max_rows`, and `EngineError` for any other failure. `execute_batches` gives the same
    rows under the same guarantees in lists of at most `batch`; only an engine whose
    `spec.capabilities.streams` is set reads them from the database as they are asked for.
    """

    dialect: str
    spec: EngineSpec

    def tables(self) -> list[Table]: ...

    def sample_rows(self, table: str, n: int = 3) -> Result: ...

    def execute(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> Result: ...

    def execute_batches(
        self,
        sql: str,
        *,
        timeout: float | None = None,
        max_rows: int | None = None,
        batch: int = FETCH_CHUNK,
    ) -> Batches: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


class Closing:
    """`with engine:` closes it: the context-manager half every engine shares."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EngineBase(Closing):
    """What every engine class inherits: `with`, and `execute_batches` for an engine that
    cannot stream (the whole result from `execute`, handed out in batches)."""

    def execute(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> Result:
        raise NotImplementedError

    def execute_batches(
        self,
        sql: str,
        *,
        timeout: float | None = None,
        max_rows: int | None = None,
        batch: int = FETCH_CHUNK,
    ) -> Batches:
        """The rows of `execute`, run now (so its errors raise here), in lists of `batch`."""
        return in_batches(self.execute(sql, timeout=timeout, max_rows=max_rows).rows, batch)

    def feed_batches(
        self,
        sql: str,
        sink: Sink,
        *,
        timeout: float | None = None,
        max_rows: int | None = None,
        batch: int = FETCH_CHUNK,
    ) -> None:
        """`execute_batches` pushed: each batch to `sink` until it returns False (an engine
        that streams overrides this with a loop of its own)."""
        batches = self.execute_batches(sql, timeout=timeout, max_rows=max_rows, batch=batch)
        feed_batches(batches, sink)


def feed_batches(batches: Batches, sink: Sink) -> None:
    """Each of `batches` to `sink` until it returns False, then `batches` closed."""
    with contextlib.closing(batches):
        for rows in batches:
            if not sink(rows):
                return


def in_batches(rows: list[tuple[Any, ...]], batch: int) -> Batches:
    """`rows` in lists of at most `batch` (at least one row each)."""
    size = max(1, batch)
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def group_columns(rows: Iterable[Sequence[Any]], default_schema: str | None = None) -> list[Table]:
    """Tables from `(schema, table, column, type)` rows in catalogue order; the engine's default
    schema is reported as None, so a bare table name addresses it."""
    columns: dict[tuple[str, str], list[Column]] = {}
    for schema, table, column, type_ in rows:
        columns.setdefault((schema, table), []).append(Column(column, type_))
    return [
        Table(table, tuple(cols), None if schema == default_schema else schema)
        for (schema, table), cols in columns.items()
    ]


def qualified_name(table: str, tables: Iterable[Table], quote: Callable[[str], str]) -> str:
    """SQL for `table`, given as a `Table.name` or as `schema.name`."""
    known = {(t.schema, t.name) for t in tables}
    schema, _, name = table.partition(".")
    if (None, table) not in known and (schema, name) in known:
        return f"{quote(schema)}.{quote(name)}"
    return quote(table)


@contextlib.contextmanager
def backstop(timeout: float | None, grace: float, stop: Callable[[], object]) -> Iterator[None]:
    """Calls `stop` from another thread if the block still runs `grace` seconds past
    `timeout`: the client's backup for a server-side statement timeout."""
    if timeout is None:
        yield
        return
    timer = threading.Timer(timeout + grace, stop)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def quote_identifier(name: str) -> str:
    """`name` as a double-quoted SQL identifier (SQLite, DuckDB, PostgreSQL, Snowflake)."""
    return '"' + name.replace('"', '""') + '"'


MAX_RESULT_BYTES_ENV = "QUERYBENCH_MAX_RESULT_BYTES"
DEFAULT_MAX_RESULT_BYTES = 256 * 1024**2
# What a cell other than text or bytes counts for (a number, a date, NULL).
_SCALAR_BYTES = 8
_SIZED = frozenset({str, bytes, bytearray, memoryview})


def database_file(path: Path, sidecars: Iterable[str] = ()) -> Path:
    """`path`, once it and its `sidecars` (the engine's `EngineSpec.sidecars`) that exist are
    regular files (`file_digests.regular_database`), as every engine opening a file by name asks
    before its driver opens it: a FIFO, as the database or its `-journal`, would hold the open
    or the first query for ever. Else `EngineError`: `database file not found` when there is
    none, else why it cannot be opened."""
    try:
        return regular_database(path, sidecars)
    except FileNotFoundError:
        raise EngineError(f"database file not found: {path}") from None
    except OSError as exc:
        raise EngineError(f"cannot open {path}: {refusal(exc, path)}") from None


def positive_int_env(name: str) -> int | None:
    """`$name` as a whole number of at least 1; None when unset or empty."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {value!r}") from None
    if number < 1:
        raise ValueError(f"{name} must be at least 1, got {number}")
    return number


def max_result_bytes() -> int:
    """The byte cap on one result: `$QUERYBENCH_MAX_RESULT_BYTES`, else 256 MiB (read for
    every result; parsed once per value it takes)."""
    raw = os.environ.get(MAX_RESULT_BYTES_ENV)
    cap = _CAPS.get(raw)
    if cap is None:
        given = positive_int_env(MAX_RESULT_BYTES_ENV)
        if len(_CAPS) > 16:
            _CAPS.clear()
        cap = _CAPS[raw] = DEFAULT_MAX_RESULT_BYTES if given is None else given
    return cap


_CAPS: dict[str | None, int] = {}


def row_bytes(row: Iterable[Any]) -> int:
    """What one row counts for against the byte cap: the length of every text and bytes
    cell, and 8 for any other cell."""
    size = 0
    for value in row:  # a plain loop: a row factory calls this for every row of a result
        size += len(value) if type(value) in _SIZED else _SCALAR_BYTES
    return size


def result_bytes(rows: Iterable[Sequence[Any]]) -> int:
    """`row_bytes` of all `rows`."""
    return row_bytes(itertools.chain.from_iterable(rows))


class ByteBudget:
    """The bytes of one result so far, against the cap (default `max_result_bytes()`);
    `add` raises `ResultTooManyBytes` once past it. As a `sqlite3` row factory it counts
    every row as it is made, so a result stops one row past the cap."""

    def __init__(self, cap: int | None = None) -> None:
        self.cap = max_result_bytes() if cap is None else cap
        self.used = 0

    def add(self, size: int) -> None:
        self.used += size
        if self.used > self.cap:
            raise too_many_bytes(self.cap)

    def row_factory(self, _cursor: object, row: tuple[Any, ...]) -> tuple[Any, ...]:
        # `add` and `row_bytes`, inlined: called for every row of every result.
        used = self.used
        for value in row:
            used += len(value) if type(value) in _SIZED else _SCALAR_BYTES
        self.used = used
        if used > self.cap:
            raise too_many_bytes(self.cap)
        return row


def fetch_capped(
    fetchmany: Callable[[int], Sequence[tuple[Any, ...]]],
    max_rows: int | None,
    *,
    count_bytes: bool = True,
) -> list[tuple[Any, ...]]:
    """All rows, fetched in chunks; past `max_rows` rows, or past the byte cap (a
    `ByteBudget`; `count_bytes=False` where the engine counts rows as they are made), it
    stops reading and raises `ResultTooLarge`, so an exploding result costs at most one chunk
    over the cap."""
    budget = ByteBudget() if count_bytes else None
    rows: list[tuple[Any, ...]] = []
    while True:
        want = FETCH_CHUNK if max_rows is None else min(FETCH_CHUNK, max_rows + 1 - len(rows))
        chunk = fetchmany(want)
        if not chunk:
            return rows
        rows.extend(chunk)
        if max_rows is not None and len(rows) > max_rows:
            raise ResultTooLarge(f"the result has more than {max_rows} rows")
        if budget is not None:
            budget.add(result_bytes(chunk))


def too_many_bytes(cap: int) -> ResultTooManyBytes:
    """The error of a result past the byte cap `cap`."""
    return ResultTooManyBytes(
        f"the result holds more than {cap} bytes (the cap; set {MAX_RESULT_BYTES_ENV} to change it)"
    )


# Comments of the SQL dialects (`#` is MySQL's); a nested one read shorter leaves more checked.
_SQL_COMMENT = re.compile(r"--[^\n]*|#[^\n]*|/\*.*?\*/", re.DOTALL)
# The delimiters alone: MySQL runs what `/*! ... */` holds.
_COMMENT_MARK = re.compile(r"/\*!?\d*|\*/")


def denied_call(statement: str, denied: re.Pattern[str], quotes: str) -> str | None:
    """The first call of `denied` (group 1 its name) in `statement` as the server reads
    names: a comment is no gap (`pg_read_file/**/(`, `load_file -- x<newline>(`), quotes
    (`quotes`: `"` or a backquote) no disguise, and an executable comment's content is read.
    The text is checked as written, without its comments and with only their delimiters
    gone; a false match (a name inside a string) only refuses the query."""
    strip = {ord(quote): None for quote in quotes}
    for text in (statement, _SQL_COMMENT.sub(" ", statement), _COMMENT_MARK.sub(" ", statement)):
        found = denied.search(text.translate(strip))
        if found:
            return found.group(1)
    return None
