"""Snowflake: the real service through `snowflake-connector-python`, or offline through fakesnow.

`SnowflakeLocalEngine` (`snowflake+local:///path.duckdb`) runs Snowflake SQL through fakesnow's
translation on a DuckDB file built by `build_emulation(..., "snowflake")`. fakesnow itself keeps
each Snowflake database as a read-write DuckDB file attached to an in-memory instance
(`fakesnow.patch(db_path=DIR)` opens `DIR/<DATABASE>.db`); here the file is attached
`READ_ONLY` instead (its information-schema views and macros were created when it was built),
external access is switched off and the configuration locked, and a watchdog interrupts the
DuckDB connection under fakesnow's cursor when the timeout passes.

`SnowflakeEngine` is the thin cloud path: key-pair or password auth from a credentials file or
the environment, `STATEMENT_TIMEOUT_IN_SECONDS` and a `QUERY_TAG` per session, and the bytes a
query scanned read back from the session's query history when `accounting=True`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import duckdb
import sqlglot
from sqlglot import exp

from querybench import json_input
from querybench.engines.base import (
    EngineBase,
    Result,
    Table,
    database_file,
    fetch_capped,
    group_columns,
    quote_identifier,
)
from querybench.engines.duckdb import _Watchdog, duckdb_error_class
from querybench.engines.memory import duckdb_memory_limit
from querybench.engines.registry import ENGINES
from querybench.engines.spider2_metadata_load import META_TABLE
from querybench.engines.timeouts import timed_out
from querybench.errors import (
    AMBIGUOUS_COLUMN,
    CONVERSION_ERROR,
    NO_SUCH_COLUMN,
    NO_SUCH_FUNCTION,
    NO_SUCH_TABLE,
    SEVERAL_STATEMENTS,
    EngineError,
    EngineErrorClass,
    EngineUnavailable,
    QueryRefused,
    QueryTimeout,
    ResultTooLarge,
)

log = logging.getLogger(__name__)

_WRITES = (exp.DML, exp.Create, exp.Drop, exp.Alter, exp.Command, exp.Merge, exp.Copy)


def check_single_query(sql: str, dialect: str) -> exp.Query:
    """The one read-only query in `sql`; refuses several statements or anything that writes."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        message = f"syntax error: {str(exc).splitlines()[0]}"
        raise EngineError(message, EngineErrorClass.unparsed()) from exc
    if not statements:
        raise EngineError("empty statement")
    if len(statements) > 1:
        raise QueryRefused("only one statement per query is allowed", SEVERAL_STATEMENTS)
    statement = statements[0]
    if not isinstance(statement, exp.Query) or statement.find(*_WRITES) is not None:
        kind = statement.key.upper()
        raise QueryRefused(f"{kind} statements are not allowed (read-only)", kind)
    return statement


class SnowflakeLocalEngine(EngineBase):
    """Snowflake SQL on a local emulation file, through fakesnow; read-only."""

    spec = ENGINES["snowflake+local"]
    dialect = spec.dialect

    def __init__(
        self,
        path: str | Path,
        *,
        database: str | None = None,
        schema: str | None = None,
        memory_limit: str | None = None,
        threads: int | None = None,
    ) -> None:
        try:
            from fakesnow.instance import FakeSnow
        except ImportError as exc:
            raise EngineUnavailable(
                "snowflake+local needs fakesnow: pip install 'querybench[snowflake]'"
            ) from exc
        self.path = Path(path)
        database_file(self.path, ENGINES["duckdb"].sidecars)
        self.database = (database or _recorded_database(self.path) or self.path.stem).upper()
        self._instance = FakeSnow(create_database_on_connect=False, create_schema_on_connect=False)
        duck = self._instance.duck_conn
        try:
            alias = quote_identifier(self.database)
            duck.execute(f"ATTACH '{_literal(str(self.path))}' AS {alias} (READ_ONLY)")
            for setting in (
                f"memory_limit = '{_literal(memory_limit or duckdb_memory_limit())}'",
                *([f"threads = {int(threads)}"] if threads is not None else []),
                "temp_directory = ''",  # nothing spills to disk
                "autoload_known_extensions = false",
                "autoinstall_known_extensions = false",
                "allow_community_extensions = false",
                "enable_external_access = false",
                "lock_configuration = true",  # last, after everything it locks
            ):
                duck.execute(f"SET {setting}")
            self._schema = (schema or self._default_schema(duck)).upper()
            self._conn = self._instance.connect(database=self.database, schema=self._schema)
        except duckdb.Error as exc:
            raise EngineError(f"cannot open {self.path}: {exc}") from exc
        self._lock = threading.Lock()

    def _default_schema(self, duck: duckdb.DuckDBPyConnection) -> str:
        rows = duck.execute(
            "SELECT schema_name FROM duckdb_tables() WHERE database_name = ? AND table_name <> ?"
            " GROUP BY schema_name ORDER BY count(*) DESC, schema_name",
            [self.database, META_TABLE],
        ).fetchall()
        return str(rows[0][0]) if rows else "PUBLIC"

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            self._instance.duck_conn.close()

    def tables(self) -> list[Table]:
        """Every table of the emulated database; `schema` is the Snowflake schema."""
        with self._lock:
            rows = self._instance.duck_conn.execute(
                "SELECT schema_name, table_name, column_name, data_type FROM duckdb_columns()"
                " WHERE database_name = ? AND table_name <> ? AND NOT internal"
                " AND schema_name NOT LIKE '\\_fs\\_%' ESCAPE '\\'"
                " ORDER BY schema_name, table_name, column_index",
                [self.database, META_TABLE],
            ).fetchall()
        return group_columns(rows)

    def sample_rows(self, table: str, n: int = 3, *, timeout: float | None = 10.0) -> Result:
        """`table` as `SCHEMA.NAME` or a name in the current schema."""
        parts = ".".join(quote_identifier(p) for p in table.split("."))
        return self.execute(f"SELECT * FROM {parts} LIMIT {int(n)}", timeout=timeout)

    def execute(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> Result:
        check_single_query(sql, "snowflake")
        with self._lock:
            start = time.monotonic()
            cursor = self._conn.cursor()
            with _Watchdog(self._conn._duck_conn, timeout) as watchdog:
                try:
                    cursor.execute(sql)
                    columns = tuple(d.name for d in cursor.description or ())
                    rows = fetch_capped(lambda n: list(map(tuple, cursor.fetchmany(n))), max_rows)
                except ResultTooLarge:
                    raise
                except Exception as exc:
                    raise _fakesnow_error(exc, watchdog) from exc
                finally:
                    cursor.close()
        return Result(columns, [tuple(r) for r in rows], elapsed_s=time.monotonic() - start)


def _fakesnow_error(exc: Exception, watchdog: _Watchdog) -> EngineError:
    message = str(exc)
    if watchdog.fired and ("INTERRUPT" in message or isinstance(exc, duckdb.InterruptException)):
        return timed_out(watchdog.timeout, watchdog.decided)
    if isinstance(exc, duckdb.PermissionException) or "read-only mode" in message:
        return QueryRefused(f"refused: {message}")
    # fakesnow raises Snowflake's error from DuckDB's, whose class says more than the errno
    # fakesnow picks for it (002043 for every binder error)
    duck = exc.__cause__ if isinstance(exc.__cause__, duckdb.Error) else exc
    given = duckdb_error_class(duck) or snowflake_error_class(exc)
    return EngineError(f"{type(exc).__name__}: {message}", given)


# Snowflake's error numbers for the mistakes every engine makes.
_ERRNOS = {
    1003: EngineErrorClass.unparsed(),  # SQL compilation error: syntax error
    904: EngineErrorClass.executed(NO_SUCH_COLUMN),  # invalid identifier
    2003: EngineErrorClass.executed(NO_SUCH_TABLE),  # object does not exist or not authorized
    2140: EngineErrorClass.executed(NO_SUCH_FUNCTION),  # unknown function
    2028: EngineErrorClass.executed(AMBIGUOUS_COLUMN),  # ambiguous column name
    100038: EngineErrorClass.executed(CONVERSION_ERROR),  # numeric value is not recognized
}


def snowflake_error_class(exc: Exception) -> EngineErrorClass | None:
    """The class of a Snowflake error by its `errno`; None for another number (its words then
    classify it) or an error without one."""
    errno = getattr(exc, "errno", None)
    return _ERRNOS.get(errno) if isinstance(errno, int) else None


def _recorded_database(path: Path) -> str | None:
    """The Snowflake database name `build_emulation` recorded in the file, if any."""
    try:
        with duckdb.connect(str(path), read_only=True) as conn:
            row = conn.execute(f"SELECT database FROM {META_TABLE} LIMIT 1").fetchone()
    except duckdb.Error:
        return None
    return None if row is None else str(row[0])


@dataclass(frozen=True)
class SnowflakeCredentials:
    """Never logged; `repr` hides the secrets."""

    account: str
    user: str
    password: str | None = None
    private_key_file: str | None = None
    private_key_passphrase: str | None = None
    role: str | None = None
    warehouse: str | None = None

    def __repr__(self) -> str:
        return f"SnowflakeCredentials(account={self.account!r}, user={self.user!r}, ...)"

    @classmethod
    def load(cls, credentials_file: str | Path | None = None) -> SnowflakeCredentials:
        """From a JSON file (Spider 2.0's `snowflake_credential.json`: `user` or `username`),
        `SNOWFLAKE_*`, or the first credential file `credentials.find_snowflake` finds."""
        from querybench.data.credentials import find_snowflake, snowflake_values

        values: dict[str, Any] = {}
        if credentials_file is None:
            found = find_snowflake()
            if found.ok and found.source and found.source.endswith(".json"):
                credentials_file = found.source
        if credentials_file is not None:
            try:
                values = json_input.loads(Path(credentials_file).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise EngineUnavailable(f"cannot read Snowflake credentials: {exc}") from exc
            if not isinstance(values, dict):
                raise EngineUnavailable(f"{credentials_file}: not a JSON object")
            values = snowflake_values(values)
        for key in (
            "account",
            "user",
            "password",
            "private_key_file",
            "private_key_passphrase",
            "role",
            "warehouse",
        ):
            values.setdefault(key, os.environ.get(f"SNOWFLAKE_{key.upper()}"))
        if not values.get("account") or not values.get("user"):
            raise EngineUnavailable("Snowflake needs an account and a user (file or SNOWFLAKE_*)")
        if not values.get("password") and not values.get("private_key_file"):
            raise EngineUnavailable("Snowflake needs a password or a private_key_file")
        fields = cls.__dataclass_fields__
        return cls(**{k: v for k, v in values.items() if k in fields and v is not None})


class SnowflakeEngine(EngineBase):
    """The Snowflake service. Not exercised by the test suite (no service reachable here)."""

    spec = ENGINES["snowflake"]
    dialect = spec.dialect

    def __init__(
        self,
        credentials: SnowflakeCredentials,
        *,
        database: str | None = None,
        schema: str | None = None,
        query_tag: str = "querybench",
        statement_timeout_s: int = 600,
        accounting: bool = False,
    ) -> None:
        try:
            import snowflake.connector
        except ImportError as exc:
            raise EngineUnavailable(
                "snowflake:// needs snowflake-connector-python: pip install 'querybench[snowflake]'"
            ) from exc
        auth: dict[str, Any] = (
            {"private_key_file": credentials.private_key_file}
            if credentials.private_key_file
            else {"password": credentials.password}
        )
        if credentials.private_key_passphrase:
            auth["private_key_file_pwd"] = credentials.private_key_passphrase
        optional = {
            "role": credentials.role,
            "warehouse": credentials.warehouse,
            "database": database,
            "schema": schema,
        }
        self.accounting = accounting
        try:
            self._conn = snowflake.connector.connect(
                account=credentials.account,
                user=credentials.user,
                session_parameters={
                    "QUERY_TAG": query_tag,
                    "STATEMENT_TIMEOUT_IN_SECONDS": int(statement_timeout_s),
                },
                **auth,
                **{k: v for k, v in optional.items() if v},
            )
        except snowflake.connector.Error as exc:
            raise EngineUnavailable(f"cannot connect to Snowflake: {exc.msg}") from exc
        self._lock = threading.Lock()

    def close(self) -> None:
        self._conn.close()

    def tables(self) -> list[Table]:
        rows = self.execute(
            "SELECT table_schema, table_name, column_name, data_type"
            " FROM information_schema.columns ORDER BY table_schema, table_name, ordinal_position"
        ).rows
        return group_columns(rows)

    def sample_rows(self, table: str, n: int = 3) -> Result:
        parts = ".".join(quote_identifier(p) for p in table.split("."))
        return self.execute(f"SELECT * FROM {parts} LIMIT {int(n)}", timeout=60)

    def execute(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> Result:
        import snowflake.connector

        check_single_query(sql, "snowflake")
        with self._lock:
            cursor = self._conn.cursor()
            start = time.monotonic()
            try:
                # `timeout` makes the connector cancel the query server-side when it passes.
                cursor.execute(sql, timeout=None if timeout is None else max(1, int(timeout)))
                columns = tuple(d.name for d in cursor.description or ())
                rows = fetch_capped(cursor.fetchmany, max_rows)
            except snowflake.connector.errors.ProgrammingError as exc:
                if exc.errno == 604:  # "SQL execution canceled": the timeout fired
                    raise QueryTimeout(f"the query ran past its {timeout}s timeout") from exc
                raise EngineError(str(exc.msg), snowflake_error_class(exc)) from exc
            except snowflake.connector.Error as exc:
                raise EngineError(str(exc.msg), snowflake_error_class(exc)) from exc
            query_id = cursor.sfqid
            cursor.close()
            extra: dict[str, Any] = {"query_id": query_id}
            if self.accounting and query_id:
                extra.update(self._accounting(query_id))
        return Result(columns, [tuple(r) for r in rows], time.monotonic() - start, extra)

    def _accounting(self, query_id: str) -> dict[str, Any]:
        """Bytes scanned and cloud-services credits, as the query history reports them."""
        cursor = self._conn.cursor()
        try:
            cursor.execute(
                "SELECT bytes_scanned, credits_used_cloud_services FROM TABLE("
                "information_schema.query_history_by_session()) WHERE query_id = %s",
                (query_id,),
            )
            row = cursor.fetchone()
        except Exception as exc:  # accounting is best effort; the result stands without it
            log.debug("no query accounting for %s: %s", query_id, exc)
            return {}
        finally:
            cursor.close()
        if not row:
            return {}
        return {"bytes_scanned": row[0], "credits_cloud_services": row[1]}


def _literal(text: str) -> str:
    return text.replace("'", "''")


def from_url(url: str, **kw: Any) -> SnowflakeLocalEngine | SnowflakeEngine:
    """`snowflake+local:///abs/path.duckdb[?database=DB&schema=S]`, or
    `snowflake://ACCOUNT[/DATABASE[/SCHEMA]][?credentials=FILE&warehouse=W&role=R]` with the
    user and secret from the credentials file or `SNOWFLAKE_*` (never from the URL)."""
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query))
    if parts.scheme.lower() == "snowflake+local":
        if not parts.path.startswith("/") or parts.netloc:
            raise EngineError(f"snowflake+local:// needs an absolute path (three slashes): {url!r}")
        for key in ("database", "schema"):
            if key in options:
                kw.setdefault(key, options[key])
        return SnowflakeLocalEngine(unquote(parts.path), **kw)
    if parts.username or parts.password:
        raise EngineError("put Snowflake secrets in a credentials file or SNOWFLAKE_*, not the URL")
    credentials = SnowflakeCredentials.load(options.get("credentials"))
    overrides: dict[str, str] = {k: options[k] for k in ("warehouse", "role") if k in options}
    if parts.netloc:
        overrides["account"] = parts.netloc
    credentials = replace(credentials, **overrides)
    path = [unquote(p) for p in parts.path.split("/") if p]
    return SnowflakeEngine(
        credentials,
        database=path[0] if path else None,
        schema=path[1] if len(path) > 1 else None,
        **kw,
    )
