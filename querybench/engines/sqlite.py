"""SQLite, opened read-only for real: `mode=ro`, an allowlisting authorizer, and hard limits.

Every layer assumes the others may fail: `mode=ro` stops writes to the database file, the
authorizer stops what `mode=ro` allows (temp objects, ATTACH, VACUUM INTO, pragmas with side
effects, `load_extension`), a keyword check refuses statements the authorizer never sees
(REINDEX), and `SQLITE_LIMIT_ATTACHED = 0` makes any attach fail even if all else let it through.
SQLite's heap in the process is capped (`$QUERYBENCH_SQLITE_HEAP_BYTES`, 4 GiB): a query that
sorts or builds past it fails as out of memory instead of taking the machine's memory (sorts and
temporary tables are kept in memory, as the read-only file allows no temporary file beside it).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

from querybench.engines.base import (
    FETCH_CHUNK,
    ByteBudget,
    Column,
    EngineBase,
    Result,
    Sink,
    Table,
    database_file,
    fetch_capped,
    positive_int_env,
    quote_identifier,
)
from querybench.engines.memory import below_cap, out_of_memory
from querybench.engines.registry import ENGINES
from querybench.engines.timeouts import CHECK_EVERY_S, Budget, timed_out
from querybench.errors import (
    SEVERAL_STATEMENTS,
    EngineError,
    EngineErrorClass,
    QueryRefused,
    QueryTimeout,
    ResultTooLarge,
)

# Pragmas that only ever read, whatever their argument.
_READ_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "collation_list",
        "database_list",
        "function_list",
        "module_list",
        "pragma_list",
    }
)
# Pragmas that read when queried bare and write when given a value.
_QUERY_PRAGMAS = frozenset(
    {"user_version", "application_id", "encoding", "page_size", "page_count", "journal_mode"}
)
_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})
_OK = sqlite3.SQLITE_OK
_DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer"})
# Statement kinds the authorizer never sees (REINDEX without a name) or that should be refused
# with a clear message before SQLite is asked at all.
_WRITE_KEYWORDS = frozenset(
    {
        "INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER", "ATTACH",
        "DETACH", "REINDEX", "ANALYZE", "VACUUM", "BEGIN", "COMMIT", "END", "ROLLBACK",
        "SAVEPOINT", "RELEASE",
    }
)  # fmt: skip
# Messages of refusals SQLite itself enforces (mode=ro, no attach slots, protected tables).
# A refusal is SQLITE_READONLY or SQLITE_AUTH (the authorizer's denial); these refusals come
# with SQLite's generic SQLITE_ERROR, or from the sqlite3 module with no code, so their words
# are all there is to know them by.
_REFUSED_CODES = frozenset({sqlite3.SQLITE_READONLY, sqlite3.SQLITE_AUTH})
_REFUSAL_MESSAGES = (
    "may not be modified",
    "too many attached databases",
    "authorization denied",
    "You can only execute one statement at a time",
)
_DECODE_ERROR = "Could not decode to UTF-8"
_WORD = re.compile(r"[A-Za-z_]+")
_SCAN_STOP = re.compile(r"[;'\"`\[]|--|/\*")


HEAP_BYTES_ENV = "QUERYBENCH_SQLITE_HEAP_BYTES"
DEFAULT_HEAP_BYTES = 4 * 1024**3


def _cap_heap(conn: sqlite3.Connection) -> None:
    """SQLite's process-wide hard heap limit: `$QUERYBENCH_SQLITE_HEAP_BYTES` (4 GiB; half the
    memory cap in a query child, `memory.below_cap`), unless a lower one is already set."""
    cap = below_cap(positive_int_env(HEAP_BYTES_ENV) or DEFAULT_HEAP_BYTES)
    (current,) = conn.execute("PRAGMA hard_heap_limit").fetchone()
    if current == 0 or current > cap:
        conn.execute(f"PRAGMA hard_heap_limit={int(cap)}")


class SQLiteEngine(EngineBase):
    """A read-only connection to one SQLite file.

    `text_errors` is how invalid UTF-8 in a TEXT cell is decoded. Valid UTF-8 always comes back
    exactly as plain `sqlite3` returns it; only when a result would otherwise fail with
    "Could not decode to UTF-8" is it re-run with `bytes.decode("utf-8", text_errors)`.
    "ignore" matches the Spider test-suite evaluator (`text_factory = lambda b: b.decode(
    errors="ignore")`).
    """

    spec = ENGINES["sqlite"]
    dialect = spec.dialect

    def __init__(
        self,
        path: str | Path,
        *,
        max_value_bytes: int = 100_000_000,
        text_errors: str = "ignore",
        progress_every: int = 1_000,
    ) -> None:
        self.path = Path(path)
        database_file(self.path, self.spec.sidecars)
        self._text_errors = text_errors
        self._lock = threading.Lock()
        self._budget: Budget | None = None
        self._spent: str | None = None  # which time stopped the running query
        self._next_check = 0.0  # when the progress handler next reads the clocks
        self._denied: str | None = None
        # The CPU clock a query's timeout counts: this thread's, SQLite running in the caller's
        # thread (`count_cpu_by`: a query child's own).
        self._cpu_clock: Callable[[], float] = time.thread_time
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise EngineError(f"cannot open {self.path}: {exc}") from exc
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        # Before the authorizer, which refuses every pragma that sets something.
        conn.execute("PRAGMA temp_store=MEMORY")
        _cap_heap(conn)
        conn.set_authorizer(self._authorize)
        conn.set_progress_handler(self._past_deadline, progress_every)
        self._conn = conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def count_cpu_by(self, clock: Callable[[], float]) -> None:
        """Count each query's CPU time on `clock` instead of this thread's: a query child's
        (`child.Progress.cpu_time`: its process's, which the parent holds the step to, the
        step's own reading first, so a query costs one CPU clock read fewer)."""
        with self._lock:
            self._cpu_clock = clock

    def hold_read_lock(self) -> bool:
        """Keep the file's shared lock from the next query until `close`, instead of taking and
        dropping it around every query; True when it is held so.

        Each query on its own otherwise costs about eight system calls on the file (the lock
        taken and dropped, the hot-journal check, the change counter read again), a tenth of a
        short query's time. Held, nothing can write the file while this engine is open (a
        writer waits, then fails as locked): for a reader that keeps what it read, such as the
        reward's child keeping its gold results, the file then cannot change under it. Only
        for a file in rollback-journal mode: a WAL file opened read-only cannot be read with
        the lock held (SQLite's exclusive locking mode), and keeps its locking as it is.
        """
        with self._lock:
            try:
                (mode,) = self._conn.execute("PRAGMA journal_mode").fetchone()
                if str(mode).lower() == "wal":
                    return False
                # A pragma that sets something: only here, with the authorizer lifted under
                # the engine's lock, never from a query (the authorizer refuses it there).
                # `executescript` prepares it outside the statement cache, so no query of the
                # same text ever reuses the statement prepared without the authorizer.
                self._conn.set_authorizer(None)
                try:
                    self._conn.executescript("PRAGMA locking_mode=EXCLUSIVE")
                finally:
                    self._conn.set_authorizer(self._authorize)
            except sqlite3.Error:
                return False  # a file that cannot be read now fails its first query instead
            return True

    def tables(self) -> list[Table]:
        with self._lock:
            try:
                names = self._conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                    " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
                ).fetchall()
                return [
                    Table(name, tuple(Column(c[1], c[2]) for c in self._table_info(name)))
                    for (name,) in names
                ]
            except sqlite3.Error as exc:
                raise EngineError(f"cannot read the schema of {self.path}: {exc}") from exc

    def _table_info(self, name: str) -> list[Any]:
        return self._conn.execute(f"PRAGMA table_info({quote_identifier(name)})").fetchall()

    def sample_rows(self, table: str, n: int = 3, *, timeout: float | None = 10.0) -> Result:
        sql = f"SELECT * FROM {quote_identifier(table)} LIMIT {int(n)}"
        return self.execute(sql, timeout=timeout)

    def execute(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> Result:
        statement = single_statement(sql)
        with _Running(self, timeout) as start:
            try:
                columns, rows = self._run(statement, max_rows)
                extra: dict[str, Any] = {}
            except sqlite3.OperationalError as exc:
                if not str(exc).startswith(_DECODE_ERROR):
                    raise
                with self._lenient_text():
                    columns, rows = self._run(statement, max_rows)
                extra = {"text_decode_errors": self._text_errors}
        return Result(columns, rows, elapsed_s=time.monotonic() - start, extra=extra)

    def execute_batches(
        self,
        sql: str,
        *,
        timeout: float | None = None,
        max_rows: int | None = None,
        batch: int = FETCH_CHUNK,
    ) -> Generator[list[tuple[Any, ...]], None, None]:
        """The rows of `sql` in lists of at most `batch`, read only as the consumer asks.

        The same guarantees as `execute` (read-only, one statement, `timeout` from the first
        batch asked for, `ResultTooLarge` past `max_rows`), but only one batch is ever held.
        The connection is busy until the iterator is exhausted or closed: stop early with
        `close()` (or `contextlib.closing`), which closes the cursor at once. Invalid UTF-8
        re-runs the query with `text_errors` decoding and skips the rows already handed out.
        """
        statement = single_statement(sql)  # refused before anything is read
        return self._batches(statement, timeout, max_rows, max(1, batch))

    def feed_batches(
        self,
        sql: str,
        sink: Sink,
        *,
        timeout: float | None = None,
        max_rows: int | None = None,
        batch: int = FETCH_CHUNK,
    ) -> None:
        """`execute_batches` pushed instead of pulled: each batch goes to `sink`, which says
        whether to read on (False closes the cursor at once). The same guarantees and the
        same batches, in one frame per query rather than a generator per layer: the reward
        runs this for every answer."""
        statement = single_statement(sql)
        size = max(1, batch)
        with _Running(self, timeout):
            handed = [0]
            try:
                self._feed(statement, sink, size, max_rows, 0, handed)
            except sqlite3.OperationalError as exc:
                if not str(exc).startswith(_DECODE_ERROR):
                    raise
                with self._lenient_text():
                    self._feed(statement, sink, size, max_rows, handed[0], handed)

    def _feed(
        self,
        statement: str,
        sink: Sink,
        batch: int,
        max_rows: int | None,
        skip: int,
        handed: list[int],
    ) -> None:
        """`_stream`'s batches handed to `sink` (`handed[0]` counts the rows it got), until it
        says stop."""
        cursor = self._conn.execute(statement)
        cursor.row_factory = ByteBudget().row_factory  # the byte cap, row by row
        try:
            read = 0
            while True:
                size = batch if max_rows is None else min(batch, max_rows + 1 - read)
                rows = cursor.fetchmany(size)
                if not rows:
                    return
                start, read = read, read + len(rows)
                if max_rows is not None and read > max_rows:
                    rows = rows[: max_rows - start]
                if start + len(rows) > skip:
                    given = rows[skip - start :] if skip > start else rows
                    handed[0] += len(given)
                    if not sink(given):
                        return
                if max_rows is not None and read > max_rows:
                    raise ResultTooLarge(f"the result has more than {max_rows} rows")
                if read - start < size:  # `fetchmany` stops short only at the last row
                    return
        finally:
            cursor.close()

    def _batches(
        self, statement: str, timeout: float | None, max_rows: int | None, batch: int
    ) -> Generator[list[tuple[Any, ...]], None, None]:
        with _Running(self, timeout):
            handed_out = 0
            rows = self._stream(statement, batch, max_rows, 0)
            try:
                for chunk in rows:
                    handed_out += len(chunk)
                    yield chunk
            except sqlite3.OperationalError as exc:
                if not str(exc).startswith(_DECODE_ERROR):
                    raise
                with self._lenient_text():
                    lenient = self._stream(statement, batch, max_rows, handed_out)
                    with contextlib.closing(lenient) as rest:
                        yield from rest
            finally:
                rows.close()  # the cursor closed at once, also when the consumer stops early

    def _stream(
        self, statement: str, batch: int, max_rows: int | None, skip: int
    ) -> Generator[list[tuple[Any, ...]], None, None]:
        """Batches of at most `batch` rows after the first `skip`; the rows up to `max_rows`
        are handed out before `ResultTooLarge`, and no more than one row past it is read."""
        cursor = self._conn.execute(statement)
        cursor.row_factory = ByteBudget().row_factory  # the byte cap, row by row
        try:
            read = 0
            while True:
                size = batch if max_rows is None else min(batch, max_rows + 1 - read)
                rows = cursor.fetchmany(size)
                if not rows:
                    return
                start, read = read, read + len(rows)
                if max_rows is not None and read > max_rows:
                    rows = rows[: max_rows - start]
                if start + len(rows) > skip:
                    yield rows[max(0, skip - start) :]
                if max_rows is not None and read > max_rows:
                    raise ResultTooLarge(f"the result has more than {max_rows} rows")
                if read - start < size:  # `fetchmany` stops short only at the last row
                    return
        finally:
            cursor.close()  # also when the consumer stops early

    @contextlib.contextmanager
    def _lenient_text(self) -> Iterator[None]:
        """TEXT decoded with `text_errors` instead of failing on invalid UTF-8."""
        self._conn.text_factory = self._lenient_decode
        try:
            yield
        finally:
            self._conn.text_factory = str

    def _lenient_decode(self, value: bytes) -> str:
        return value.decode("utf-8", self._text_errors)

    def _run(
        self, statement: str, max_rows: int | None
    ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        cursor = self._conn.execute(statement)
        cursor.row_factory = ByteBudget().row_factory  # the byte cap, row by row
        try:
            columns = tuple(d[0] for d in cursor.description or ())
            return columns, fetch_capped(cursor.fetchmany, max_rows, count_bytes=False)
        finally:
            cursor.close()

    def _engine_error(self, exc: sqlite3.Error, timeout: float | None) -> EngineError:
        """The failure by its extended result code (`sqlite_errorcode`): an interrupt past
        the deadline is the timeout, READONLY or AUTH a refusal. Every SQL mistake (syntax, no
        such column, ...) is SQLITE_ERROR, one code for all, so its class is read from its
        words (`errors.classify_engine_error`)."""
        message = str(exc)
        primary = getattr(exc, "sqlite_errorcode", -1) & 0xFF  # the extended code's low byte
        if self._denied is not None:
            return QueryRefused(f"refused: {self._denied} (the database is read-only)")
        if primary == sqlite3.SQLITE_INTERRUPT and self._spent is not None:
            return timed_out(timeout, self._spent)
        if primary in _REFUSED_CODES or any(m in message for m in _REFUSAL_MESSAGES):
            return QueryRefused(f"refused: {message}")
        if primary == sqlite3.SQLITE_INTERRUPT:  # interrupted from outside, as a timeout is
            return EngineError(message, EngineErrorClass(QueryTimeout.code))
        return EngineError(message)

    def _past_deadline(self) -> int:
        """SQLite's progress handler: whether the running query has spent its CPU time (this
        thread's: SQLite runs in the caller's thread) or reached its wall-clock cap."""
        budget = self._budget
        if budget is None or self._spent is not None:
            return int(self._spent is not None)
        # A CPU clock costs microseconds to read (a system call here), the wall clock tens of
        # nanoseconds: read it once per CHECK_EVERY_S, not on every call (30,000 a second).
        now = time.monotonic()
        if now < self._next_check:
            return 0
        self._next_check = now + CHECK_EVERY_S
        self._spent = budget.spent()
        return int(self._spent is not None)

    def _authorize(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, _src: str | None
    ) -> int:
        if action in _READ_ACTIONS:  # called for every column a statement reads
            return _OK
        if action == sqlite3.SQLITE_FUNCTION:
            if (arg2 or "").lower() not in _DENIED_FUNCTIONS:
                return sqlite3.SQLITE_OK
        elif action == sqlite3.SQLITE_PRAGMA:
            name = (arg1 or "").lower()
            if name in _READ_PRAGMAS or (name in _QUERY_PRAGMAS and arg2 is None):
                return sqlite3.SQLITE_OK
        elif action == sqlite3.SQLITE_UPDATE and arg1 == "sqlite_master" and db == "main":
            # SQLite reports this when it first sets up an eponymous virtual table
            # (json_each, pragma_table_info); the main file is opened mode=ro in any case.
            return sqlite3.SQLITE_OK
        self._denied = _describe(action, arg1, arg2)
        return sqlite3.SQLITE_DENY


class _Running:
    """One query's span: the engine's lock held, its deadline armed from the start time it
    gives, and SQLite's errors turned into querybench's (a class, not a generator: it wraps
    every query)."""

    __slots__ = ("engine", "timeout")

    def __init__(self, engine: SQLiteEngine, timeout: float | None) -> None:
        self.engine, self.timeout = engine, timeout

    def __enter__(self) -> float:
        engine, timeout = self.engine, self.timeout
        engine._lock.acquire()
        start = time.monotonic()
        engine._budget = None if timeout is None else Budget.start(timeout, engine._cpu_clock)
        engine._spent = engine._denied = None
        engine._next_check = 0.0
        return start

    def __exit__(self, _kind: object, exc: BaseException | None, _tb: object) -> None:
        engine = self.engine
        try:
            if isinstance(exc, sqlite3.Error):
                raise engine._engine_error(exc, self.timeout) from exc
            if isinstance(exc, MemoryError):
                raise out_of_memory() from exc
        finally:
            engine._budget = engine._spent = None
            engine._lock.release()


def single_statement(sql: str) -> str:
    """`sql` cut to its one statement; refuse a second statement or a write keyword up front.

    Trailing semicolons, whitespace and comments are dropped; quotes and comments are skipped
    the way SQLite's tokenizer does, so a `;` inside a string does not count.
    """
    end = _first_semicolon(sql) if ";" in sql else None  # the scan finds none where none is
    statement = sql if end is None else sql[:end]
    if end is not None and _strip_noise(sql[end:].replace(";", " ")):
        raise QueryRefused("only one statement per query is allowed", SEVERAL_STATEMENTS)
    body = _strip_noise(statement)
    if not body:
        raise EngineError("empty statement")
    first = _WORD.match(body)
    if first and first.group().upper() in _WRITE_KEYWORDS:
        kind = first.group().upper()
        raise QueryRefused(f"{kind} statements are not allowed (read-only)", kind)
    return statement


def _first_semicolon(sql: str) -> int | None:
    i, n = 0, len(sql)
    while i < n:
        found = _SCAN_STOP.search(sql, i)  # jump to the next character that matters
        if found is None:
            return None
        i = found.start()
        ch = found.group()
        if ch == ";":
            return i
        if ch == "--":
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
        elif ch == "/*":
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            close = "]" if ch == "[" else ch
            j = sql.find(close, i + 1)
            i = n if j < 0 else j + 1  # a doubled quote simply reopens the literal
    return None


def _strip_noise(text: str) -> str:
    """`text` without leading whitespace and comments."""
    while True:
        text = text.lstrip()
        if text.startswith("--"):
            _, newline, rest = text.partition("\n")
            text = rest if newline else ""
        elif text.startswith("/*"):
            _, close, rest = text[2:].partition("*/")
            text = rest if close else ""
        else:
            return text


_ACTION_NAMES = {
    getattr(sqlite3, f"SQLITE_{name}"): name
    for name in (
        "CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE",
        "CREATE_TEMP_TRIGGER", "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DELETE",
        "DROP_INDEX", "DROP_TABLE", "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER",
        "DROP_TEMP_VIEW", "DROP_TRIGGER", "DROP_VIEW", "INSERT", "PRAGMA", "READ", "SELECT",
        "TRANSACTION", "UPDATE", "ATTACH", "DETACH", "ALTER_TABLE", "REINDEX", "ANALYZE",
        "CREATE_VTABLE", "DROP_VTABLE", "FUNCTION", "SAVEPOINT", "RECURSIVE",
    )
}  # fmt: skip


def _describe(action: int, arg1: str | None, arg2: str | None) -> str:
    what = _ACTION_NAMES.get(action, f"action {action}")
    detail = " ".join(a for a in (arg1, arg2) if a)
    return f"{what} {detail}".strip()
