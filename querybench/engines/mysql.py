"""MySQL and MariaDB through PyMySQL, every query inside its own read-only transaction.

Layers: the up-front check (one statement, a query, no `INTO OUTFILE`/`DUMPFILE`, no
`LOAD_FILE()`), which matters most here because DDL would commit implicitly; `START TRANSACTION
READ ONLY`, always rolled back; the server's statement timeout (`max_statement_time` on MariaDB,
`max_execution_time` on MySQL) with `KILL QUERY` from a second connection as the backstop; and
PyMySQL never enabling multi-statements, so the server refuses a second statement itself.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from typing import Any

import pymysql
import pymysql.cursors

from querybench.engines.base import (
    Column,
    EngineBase,
    Result,
    Table,
    backstop,
    denied_call,
    fetch_capped,
)
from querybench.engines.error_numbers import ErrorNumbers
from querybench.engines.registry import ENGINES
from querybench.engines.transpile import read_only_statement
from querybench.engines.url import ServerUrl, mask_secrets, parse_server_url
from querybench.errors import (
    AMBIGUOUS_COLUMN,
    CONVERSION_ERROR,
    MISUSE_OF_AGGREGATE,
    NO_SUCH_COLUMN,
    NO_SUCH_FUNCTION,
    NO_SUCH_TABLE,
    EngineError,
    EngineErrorClass,
    EngineUnavailable,
    QueryRefused,
    ResultTooLarge,
    in_words,
)

log = logging.getLogger(__name__)

_KILL_GRACE_S = 1.0
_REFUSED_WORDS = frozenset({"OUTFILE", "DUMPFILE"})
_DENIED_FUNCTION = re.compile(r"\b(load_file|sys_exec|sys_eval)\s*\(", re.IGNORECASE)


def connect_args(url: ServerUrl, **extra: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "host": url.host,
        "port": url.port or 3306,
        "user": url.user or "root",
        "password": url.password or "",
        "database": url.database,
        "charset": "utf8mb4",
        "autocommit": True,
    }
    args.update(extra)
    return args


class MySQLEngine(EngineBase):
    """A read-only connection to one MySQL or MariaDB database (`mariadb` tells which)."""

    spec = ENGINES["mysql"]
    dialect = spec.dialect

    def __init__(self, url: str | ServerUrl, *, connect_timeout: float = 10.0) -> None:
        self.url = parse_server_url(url, "mysql") if isinstance(url, str) else url
        if not self.url.database:
            raise EngineError(f"the URL names no database: {self.url.masked()}")
        self._args = connect_args(self.url, connect_timeout=connect_timeout)
        self._conn = self._open()
        self.mariadb = "mariadb" in str(self._conn.get_server_info()).lower()
        self._lock = threading.Lock()
        self._closed = False  # a dropped connection is reopened, a closed engine is not

    def _open(self) -> pymysql.connections.Connection[Any]:
        try:
            return pymysql.connect(**self._args)
        except pymysql.Error as exc:
            message = mask_secrets(str(exc), self.url.password)
            raise EngineUnavailable(f"cannot connect to {self.url.masked()}: {message}") from None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn.open:
                self._conn.close()

    def tables(self) -> list[Table]:
        sql = (
            "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS"
            " WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION"
        )
        with self._lock:
            try:
                with self._conn.cursor() as cursor:
                    cursor.execute(sql)
                    rows = cursor.fetchall()
            except pymysql.Error as exc:
                raise EngineError(f"cannot read the schema: {exc}") from exc
        columns: dict[str, list[Column]] = {}
        for table, column, type_ in rows:
            columns.setdefault(table, []).append(Column(column, _text(type_)))
        return [Table(name, tuple(cols)) for name, cols in columns.items()]

    def sample_rows(self, table: str, n: int = 3, *, timeout: float | None = 10.0) -> Result:
        return self.execute(f"SELECT * FROM {quote(table)} LIMIT {int(n)}", timeout=timeout)

    def execute(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> Result:
        statement = read_only_statement(sql, "mysql", refused_tokens=_REFUSED_WORDS)
        denied = denied_call(statement, _DENIED_FUNCTION, "`")
        if denied:
            raise QueryRefused(f"refused: {denied}() reaches outside the database")
        with self._lock:
            if self._closed:
                raise EngineError(f"the engine for {self.url.masked()} is closed")
            if not self._conn.open:
                self._conn = self._open()
            start = time.monotonic()
            kill = functools.partial(self._kill, self._conn.thread_id())
            try:
                with backstop(timeout, _KILL_GRACE_S, kill):
                    self._begin(timeout)
                    columns, rows = self._fetch(statement, max_rows)
            except pymysql.Error as exc:
                raise _engine_error(exc, timeout) from exc
            finally:
                self._end()
        return Result(columns, rows, elapsed_s=time.monotonic() - start)

    def _begin(self, timeout: float | None) -> None:
        with self._conn.cursor() as cursor:
            if self.mariadb:
                cursor.execute(f"SET SESSION max_statement_time = {timeout or 0:.3f}")
            else:
                cursor.execute(f"SET SESSION max_execution_time = {int((timeout or 0) * 1000)}")
            cursor.execute("START TRANSACTION READ ONLY")

    def _end(self) -> None:
        try:
            if self._conn.open:
                self._conn.rollback()
        except pymysql.Error:
            self._conn.close()  # reopened by the next query

    def _fetch(
        self, statement: str, max_rows: int | None
    ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        cursor = pymysql.cursors.SSCursor(self._conn)
        cursor.execute(statement)
        columns = tuple(d[0] for d in cursor.description or ())
        try:
            rows = fetch_capped(cursor.fetchmany, max_rows)
        except ResultTooLarge:
            # Reading the rest of an unbuffered result could take as long as the query:
            # drop the connection instead (the server stops the query with it).
            self._conn.close()
            raise
        cursor.close()
        return columns, rows

    def _kill(self, thread_id: int) -> None:
        try:
            killer = pymysql.connect(**{**self._args, "connect_timeout": 5})
            with killer, killer.cursor() as cursor:
                cursor.execute(f"KILL QUERY {int(thread_id)}")
        except pymysql.Error as exc:  # the query then runs on until the server's own limit
            log.warning("could not kill MySQL query %s: %s", thread_id, exc)


def _engine_error(exc: pymysql.Error, timeout: float | None) -> EngineError:
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    return _NUMBERS.error(code, message, timeout, lambda: mysql_error_class(code))


# The server's error numbers; a mistake not named here is its ER_ name.
_NUMBERS = ErrorNumbers(
    timeouts=frozenset({1969, 3024, 1317, 1028}),
    refused=frozenset({1792, 1142, 1044, 1045, 1227, 1290, 1036}),  # read-only, privileges
    syntax=1064,
    mistakes={
        1054: NO_SUCH_COLUMN,  # ER_BAD_FIELD_ERROR
        1146: NO_SUCH_TABLE,  # ER_NO_SUCH_TABLE
        1305: NO_SUCH_FUNCTION,  # ER_SP_DOES_NOT_EXIST
        1052: AMBIGUOUS_COLUMN,  # ER_NON_UNIQ_ERROR
        1111: MISUSE_OF_AGGREGATE,  # ER_INVALID_GROUP_FUNC_USE
        1292: CONVERSION_ERROR,  # ER_TRUNCATED_WRONG_VALUE
        1366: CONVERSION_ERROR,  # ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
    },
)


def mysql_error_class(code: int | None) -> EngineErrorClass | None:
    """The class of a server error by its number (PyMySQL's `ER` name in words for one not
    above); None for an error with no number PyMySQL knows, whose words then classify it."""
    if code is None:
        return None
    from pymysql.constants import ER

    name = next((n for n, v in vars(ER).items() if v == code and n.isupper()), None)
    known = _NUMBERS.known_class(code)
    return known or (None if name is None else EngineErrorClass.executed(in_words(name)))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def from_url(url: str, **kw: Any) -> MySQLEngine:
    return MySQLEngine(url, **kw)
