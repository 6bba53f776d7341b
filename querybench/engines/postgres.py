"""PostgreSQL through psycopg 3, every query inside its own read-only transaction.

Layers, each assuming the others may fail: the up-front check (one statement, a query); the
query runs as a server-side cursor (`DECLARE … CURSOR FOR`, which PostgreSQL accepts only for
SELECT/VALUES without data-modifying CTEs) inside `BEGIN READ ONLY` with `SET LOCAL
statement_timeout`, always rolled back, so even a `set_config()` leaves nothing behind; the
session itself defaults to `default_transaction_read_only`. A client-side cancel backs up the
server's timeout. Functions that reach outside the database (server files, other sessions) are
refused by name; connect as a role without superuser rights for the real guarantee.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from querybench.engines.base import (
    EngineBase,
    Result,
    Table,
    backstop,
    denied_call,
    fetch_capped,
    group_columns,
    qualified_name,
    quote_identifier,
)
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
    QueryTimeout,
    in_words,
)

_CANCEL_GRACE_S = 1.0
_DENIED_FUNCTION = re.compile(
    r"\b(pg_read_file|pg_read_binary_file|pg_ls_\w+|pg_stat_file|lo_import|lo_export|lo_\w*write"
    r"|dblink\w*|pg_terminate_backend|pg_cancel_backend|pg_reload_conf|pg_rotate_logfile"
    r"|pg_promote|pg_switch_wal|set_config|pg_advisory\w*|pg_notify|txid_current"
    r"|pg_create_\w+|pg_drop_replication_slot|pg_logical_emit_message"
    # functions that run a query given as text: any name above, built at run time
    r"|query_to_xml\w*|query_to_xmlschema|cursor_to_xml\w*)\s*\(",
    re.IGNORECASE,
)
# An identifier in Unicode escapes, `U&"\0070g_read_file"`: a name no check here can read.
_UNICODE_IDENTIFIER = re.compile(r'\bU&"', re.IGNORECASE)


def denied_function(statement: str) -> str | None:
    """The first function reaching outside the database that `statement` may call, read as
    the server reads names (`base.denied_call`); an identifier in Unicode escapes is refused
    whole."""
    if _UNICODE_IDENTIFIER.search(statement):
        return 'U&"..."'
    return denied_call(statement, _DENIED_FUNCTION, '"')


_SCHEMA_SQL = """
SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod)
FROM pg_attribute a
JOIN pg_class c ON a.attrelid = c.oid
JOIN pg_namespace n ON c.relnamespace = n.oid
WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND a.attnum > 0 AND NOT a.attisdropped
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
ORDER BY n.nspname, c.relname, a.attnum
"""


def conninfo(url: ServerUrl, **options: Any) -> str:
    """A libpq connection string for `url` (libpq's own PG* variables fill what it leaves out)."""
    params: dict[str, Any] = {"host": url.host, "port": url.port, "user": url.user}
    params["dbname"] = url.database
    params["password"] = url.password
    params.update(url.params)
    params.update(options)
    return psycopg.conninfo.make_conninfo(**{k: v for k, v in params.items() if v is not None})


class PostgresEngine(EngineBase):
    """A read-only connection to one PostgreSQL database; `Table.schema` is None for `public`."""

    spec = ENGINES["postgres"]
    dialect = spec.dialect

    def __init__(self, url: str | ServerUrl, *, connect_timeout: float = 10.0) -> None:
        self.url = parse_server_url(url, "postgres") if isinstance(url, str) else url
        info = conninfo(
            self.url,
            connect_timeout=max(1, round(connect_timeout)),
            application_name="querybench",
            options="-c default_transaction_read_only=on",
        )
        try:
            self._conn = psycopg.connect(info, autocommit=True)
            _drop_superuser(self._conn)
        except psycopg.Error as exc:
            message = mask_secrets(str(exc), self.url.password)
            raise EngineUnavailable(f"cannot connect to {self.url.masked()}: {message}") from None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def tables(self) -> list[Table]:
        with self._lock, self._transaction(None):
            try:
                rows = self._conn.execute(_SCHEMA_SQL).fetchall()
            except psycopg.Error as exc:
                raise EngineError(f"cannot read the schema: {exc}") from exc
        return group_columns(rows, default_schema="public")

    def sample_rows(self, table: str, n: int = 3, *, timeout: float | None = 10.0) -> Result:
        """`table` as `Table.name` (schema `public`), or `schema.name`."""
        qualified = qualified_name(table, self.tables(), quote_identifier)
        return self.execute(f"SELECT * FROM {qualified} LIMIT {int(n)}", timeout=timeout)

    def execute(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> Result:
        statement = read_only_statement(sql, "postgres")
        denied = denied_function(statement)
        if denied:
            raise QueryRefused(f"refused: {denied}() reaches outside the database")
        with self._lock:
            start = time.monotonic()
            try:
                with (
                    backstop(timeout, _CANCEL_GRACE_S, self._conn.cancel_safe),
                    self._transaction(timeout),
                ):
                    columns, rows = self._fetch(statement, max_rows)
            except psycopg.Error as exc:
                raise _engine_error(exc, timeout) from exc
        return Result(columns, rows, elapsed_s=time.monotonic() - start)

    def _fetch(
        self, statement: str, max_rows: int | None
    ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        with self._conn.cursor(name="querybench_query") as cursor:
            cursor.execute(statement.encode())  # bytes: psycopg never looks for placeholders
            columns = tuple(d.name for d in cursor.description or ())
            return columns, fetch_capped(cursor.fetchmany, max_rows)

    def _transaction(self, timeout: float | None) -> _ReadOnlyTransaction:
        return _ReadOnlyTransaction(self._conn, timeout)


class _ReadOnlyTransaction:
    """BEGIN READ ONLY with a local statement timeout; always rolled back."""

    def __init__(self, conn: psycopg.Connection[Any], timeout: float | None) -> None:
        self._conn = conn
        self._timeout_ms = 0 if timeout is None else max(1, int(timeout * 1000))

    def __enter__(self) -> None:
        if self._conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            self._conn.rollback()
        self._conn.execute(b"BEGIN TRANSACTION READ ONLY")
        self._conn.execute(f"SET LOCAL statement_timeout = {self._timeout_ms}".encode())

    def __exit__(self, *exc: object) -> None:
        if not self._conn.closed:
            self._conn.rollback()


def _engine_error(exc: psycopg.Error, timeout: float | None) -> EngineError:
    message = str(exc).strip()
    if isinstance(exc, pg_errors.QueryCanceled):
        return QueryTimeout(f"the query ran past its {timeout}s timeout and was stopped")
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction | pg_errors.InsufficientPrivilege):
        return QueryRefused(f"refused: {message}")
    if isinstance(exc, pg_errors.FeatureNotSupported) and "DECLARE CURSOR" in message:
        return QueryRefused(f"refused: {message}")
    return EngineError(message, postgres_error_class(exc))


# SQLSTATEs that name the mistakes every engine makes; any other is its condition's name.
_SQLSTATES = {
    "42601": EngineErrorClass.unparsed(),  # syntax_error
    "42703": EngineErrorClass.executed(NO_SUCH_COLUMN),
    "42P01": EngineErrorClass.executed(NO_SUCH_TABLE),
    "42883": EngineErrorClass.executed(NO_SUCH_FUNCTION),
    "42702": EngineErrorClass.executed(AMBIGUOUS_COLUMN),
    "42803": EngineErrorClass.executed(MISUSE_OF_AGGREGATE),  # grouping_error
    "22P02": EngineErrorClass.executed(CONVERSION_ERROR),  # invalid_text_representation
    "22018": EngineErrorClass.executed(CONVERSION_ERROR),  # invalid_character_value_for_cast
}


def _drop_superuser(conn: psycopg.Connection[Any]) -> None:
    """Connected as a superuser, become the predefined reader role `pg_read_all_data` for the
    session (PostgreSQL 14 and later): it reads every table, and the server itself refuses it
    what reaches outside the data, however a query names it (`pg_read_file` by any spelling,
    `pg_file_settings`, large objects). A query cannot take the rights back: only a `SELECT`
    runs (`read_only_statement`), and `set_config` is refused by name. Any other role is kept
    as the URL gives it; on an older server a superuser stays one, and the name check is all."""
    row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    if not (row and row[0]):
        return
    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'pg_read_all_data'").fetchone():
        conn.execute("SET ROLE pg_read_all_data")


def postgres_error_class(exc: psycopg.Error) -> EngineErrorClass | None:
    """The class of a server error by its SQLSTATE (psycopg's class for it named in words:
    `division by zero`); None for a client-side error, which has no SQLSTATE."""
    if not exc.sqlstate:
        return None
    known = _SQLSTATES.get(exc.sqlstate)
    return known or EngineErrorClass.executed(in_words(type(exc).__name__))


def from_url(url: str, **kw: Any) -> PostgresEngine:
    return PostgresEngine(url, **kw)
