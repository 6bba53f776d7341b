"""ClickHouse: embedded through chdb (`chdb:///dir`), or a server through clickhouse-connect.

Both run with `readonly=1`, under which ClickHouse refuses every write, DDL, table function that
touches files or the network, and any change of a setting (`SET`, `SETTINGS`), so a query cannot
lift its own `max_execution_time`. chdb fixes settings when a connection opens, so each query
with a timeout or row cap gets its own short-lived connection (opening one costs about a
millisecond). chdb runs one embedded server per process: engines on two different directories
cannot be open at the same time.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from querybench.engines.base import (
    EngineBase,
    Result,
    Table,
    group_columns,
    max_result_bytes,
    too_many_bytes,
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
    ResultTooLarge,
    in_words,
)

_REFUSED_WORDS = frozenset({"OUTFILE", "SETTINGS"})
_CODE = re.compile(r"Code: (\d+)\.")
_SCHEMA_SQL = (
    "SELECT database, table, name, type FROM system.columns"
    " WHERE database NOT IN ('system', 'INFORMATION_SCHEMA', 'information_schema')"
    " ORDER BY database, table, position"
)


class ChdbEngine(EngineBase):
    """A read-only embedded ClickHouse over one chdb data directory (tables in `default`)."""

    spec = ENGINES["chdb"]
    dialect = spec.dialect

    def __init__(self, path: str | Path) -> None:
        try:
            import chdb
        except ImportError as exc:
            raise EngineUnavailable(
                "chdb is not installed: pip install 'querybench[clickhouse]'"
            ) from exc
        self.path = Path(path)
        if not self.path.is_dir():
            raise EngineError(f"chdb data directory not found: {self.path}")
        self._chdb = chdb
        self._lock = threading.Lock()
        self._anchor = self._open({})  # keeps the embedded server up between queries

    def _open(self, settings: dict[str, Any]) -> Any:
        params = "&".join(f"{k}={v}" for k, v in {"readonly": 1, **settings}.items())
        try:
            return self._chdb.connect(f"file:{self.path}?{params}")  # type: ignore[no-untyped-call]
        except Exception as exc:
            raise EngineUnavailable(f"cannot open chdb at {self.path}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._anchor.close()

    def tables(self) -> list[Table]:
        return _tables(self._query_arrow(_SCHEMA_SQL, None, None))

    def sample_rows(self, table: str, n: int = 3, *, timeout: float | None = 10.0) -> Result:
        return self.execute(f"SELECT * FROM {quote(table)} LIMIT {int(n)}", timeout=timeout)

    def execute(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> Result:
        start = time.monotonic()
        table = self.execute_arrow(sql, timeout=timeout, max_rows=max_rows)
        return _result(table, time.monotonic() - start)

    def execute_arrow(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> pa.Table:
        statement = read_only_statement(sql, "clickhouse", refused_tokens=_REFUSED_WORDS)
        return self._query_arrow(statement, timeout, max_rows)

    def _query_arrow(self, sql: str, timeout: float | None, max_rows: int | None) -> pa.Table:
        settings: dict[str, Any] = {}
        if timeout is not None:
            settings["max_execution_time"] = f"{max(timeout, 0.001):.3f}"
            settings["timeout_overflow_mode"] = "throw"
        if max_rows is not None:
            settings["max_result_rows"] = max_rows
            settings["result_overflow_mode"] = "throw"
        with self._lock:
            conn = self._open(settings) if settings else self._anchor
            try:
                table = conn.query(sql, "ArrowTable")
            except Exception as exc:
                raise _engine_error(str(exc), timeout, max_rows) from exc
            finally:
                if conn is not self._anchor:
                    conn.close()
        if not isinstance(table, pa.Table):
            raise EngineError("chdb returned no table")
        if max_rows is not None and table.num_rows > max_rows:
            raise ResultTooLarge(f"the result has more than {max_rows} rows")
        if table.nbytes > max_result_bytes():
            raise too_many_bytes(max_result_bytes())
        return table


class ClickHouseServerEngine(EngineBase):
    """A read-only client of a ClickHouse server (`clickhouse://user:pw@host:8123/db`).

    Not exercised by the test suite here: no ClickHouse server runs on this machine.
    """

    spec = ENGINES["clickhouse"]
    dialect = spec.dialect

    def __init__(self, url: str | ServerUrl, *, connect_timeout: float = 10.0) -> None:
        try:
            import clickhouse_connect
        except ImportError as exc:
            raise EngineUnavailable(
                "clickhouse-connect is not installed: pip install 'querybench[clickhouse]'"
            ) from exc
        self.url = parse_server_url(url, "clickhouse") if isinstance(url, str) else url
        try:
            self._client = clickhouse_connect.get_client(
                host=self.url.host,
                port=self.url.port or 8123,
                username=self.url.user or "default",
                password=self.url.password or "",
                database=self.url.database or "default",
                secure=self.url.params.get("secure", "") in ("1", "true"),
                connect_timeout=connect_timeout,
                settings={"readonly": 1},
            )
        except Exception as exc:
            message = mask_secrets(str(exc), self.url.password)
            raise EngineUnavailable(f"cannot connect to {self.url.masked()}: {message}") from None
        self._lock = threading.Lock()

    def close(self) -> None:
        self._client.close()

    def tables(self) -> list[Table]:
        with self._lock:
            return _tables(self._client.query_arrow(_SCHEMA_SQL))

    def sample_rows(self, table: str, n: int = 3, *, timeout: float | None = 10.0) -> Result:
        return self.execute(f"SELECT * FROM {quote(table)} LIMIT {int(n)}", timeout=timeout)

    def execute(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> Result:
        statement = read_only_statement(sql, "clickhouse", refused_tokens=_REFUSED_WORDS)
        settings: dict[str, Any] = {}
        if timeout is not None:
            settings["max_execution_time"] = max(1, round(timeout))
        if max_rows is not None:
            settings.update(max_result_rows=max_rows, result_overflow_mode="throw")
        start = time.monotonic()
        with self._lock:
            try:
                table = self._client.query_arrow(statement, settings=settings)
            except Exception as exc:
                message = mask_secrets(str(exc), self.url.password)
                raise _engine_error(message, timeout, max_rows) from None
        return _result(table, time.monotonic() - start)


def _tables(table: pa.Table) -> list[Table]:
    rows = zip(*(c.to_pylist() for c in table.columns), strict=True)
    return group_columns(rows, default_schema="default")


def _result(table: pa.Table, elapsed: float) -> Result:
    columns = tuple(table.column_names)
    rows = list(zip(*(c.to_pylist() for c in table.columns), strict=True))
    if not columns:
        rows = []
    return Result(columns, rows, elapsed_s=elapsed)


def _engine_error(message: str, timeout: float | None, max_rows: int | None) -> EngineError:
    match = _CODE.search(message)
    code = int(match.group(1)) if match else None
    return _NUMBERS.error(
        code, message, timeout, lambda: clickhouse_error_class(code, message), max_rows
    )


# ClickHouse's error codes; a mistake not named here is the code's own name, which the server
# prints after the message (`... (UNKNOWN_IDENTIFIER)`).
_NUMBERS = ErrorNumbers(
    timeouts=frozenset({159, 394}),
    refused=frozenset({164, 497, 291, 430}),
    too_many_rows=frozenset({158, 396}),
    syntax=62,
    mistakes={
        47: NO_SUCH_COLUMN,  # UNKNOWN_IDENTIFIER
        16: NO_SUCH_COLUMN,  # NO_SUCH_COLUMN_IN_TABLE
        60: NO_SUCH_TABLE,  # UNKNOWN_TABLE
        46: NO_SUCH_FUNCTION,  # UNKNOWN_FUNCTION
        352: AMBIGUOUS_COLUMN,  # AMBIGUOUS_COLUMN_NAME
        184: MISUSE_OF_AGGREGATE,  # ILLEGAL_AGGREGATION
        6: CONVERSION_ERROR,  # CANNOT_PARSE_TEXT
        70: CONVERSION_ERROR,  # CANNOT_CONVERT_TYPE
        72: CONVERSION_ERROR,  # CANNOT_PARSE_NUMBER
    },
)
_CODE_NAME = re.compile(r"\(([A-Z][A-Z0-9_]+)\)\s*(?:\(version [^)]*\))?\s*$")


def clickhouse_error_class(code: int | None, message: str) -> EngineErrorClass | None:
    """The class of a ClickHouse error by its code. chdb and clickhouse-connect hand the code
    over only inside the message (`Code: 47. ... (UNKNOWN_IDENTIFIER)`), so it is read from
    there; None for a message without a code."""
    if code is None:
        return None
    known = _NUMBERS.known_class(code)
    if known is not None:
        return known
    named = _CODE_NAME.search(message.strip())
    return EngineErrorClass.executed(in_words(named.group(1)) if named else f"code {code}")


def quote(name: str) -> str:
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def from_url(url: str, **kw: Any) -> ChdbEngine | ClickHouseServerEngine:
    """`chdb:///abs/dir` opens the embedded engine; `clickhouse://…` a server."""
    scheme, _, rest = url.partition("://")
    if scheme.lower() == "chdb":
        if not rest.startswith("/"):
            raise EngineError(f"chdb:// needs an absolute path (three slashes): {url!r}")
        return ChdbEngine(rest, **kw)
    return ClickHouseServerEngine(url, **kw)
