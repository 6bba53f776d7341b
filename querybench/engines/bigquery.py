"""BigQuery: the real service through `google-cloud-bigquery`, or offline on a DuckDB file.

`BigQueryLocalEngine` (`bigquery+local:///path.duckdb`) runs BigQuery SQL on a file built by
`build_emulation(..., "bigquery")`: sqlglot transpiles it (read="bigquery", write="duckdb") after
`project.dataset.table` references are mapped to the file's `dataset.table` and wildcard tables
(`dataset.events_*`) are expanded into a `UNION ALL BY NAME` of the matching tables with a
`_TABLE_SUFFIX` column. The DuckDB engine underneath keeps every safety guarantee.

`BigQueryEngine` is the thin cloud path: a dry run before every query gives the byte estimate
and the statement type (anything but SELECT is refused); a query whose estimate exceeds
`maximum_bytes_billed` is refused with that estimate, and the job itself carries the same
`maximum_bytes_billed`; bytes processed and billed are recorded on every `Result`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import sqlglot
from sqlglot import exp

from querybench.engines.base import (
    Column,
    EngineBase,
    Result,
    Table,
    max_result_bytes,
    qualified_name,
    quote_identifier,
    result_bytes,
    too_many_bytes,
)
from querybench.engines.duckdb import DuckDBEngine
from querybench.engines.registry import ENGINES
from querybench.engines.spider2_metadata_load import META_TABLE
from querybench.errors import (
    CostGuardExceeded,
    EngineError,
    EngineUnavailable,
    QueryRefused,
    QueryTimeout,
    ResultTooLarge,
)

TABLE_SUFFIX = "_TABLE_SUFFIX"
DEFAULT_MAXIMUM_BYTES_BILLED = 10 * 1024**3


class BigQueryLocalEngine(EngineBase):
    """BigQuery SQL on a local DuckDB emulation file; read-only."""

    spec = ENGINES["bigquery+local"]
    dialect = spec.dialect

    def __init__(
        self, path: str | Path, *, memory_limit: str | None = None, threads: int | None = None
    ) -> None:
        self._duckdb = DuckDBEngine(path, memory_limit=memory_limit, threads=threads)
        self.path = self._duckdb.path
        self._tables = [t for t in self._duckdb.tables() if t.name != META_TABLE]
        self._catalog = str(self._duckdb.execute("SELECT current_database()").rows[0][0])
        self._by_schema: dict[str, list[str]] = {}
        for table in self._tables:
            self._by_schema.setdefault((table.schema or "main").lower(), []).append(table.name)

    def close(self) -> None:
        self._duckdb.close()

    def tables(self) -> list[Table]:
        """Every table; `schema` is the BigQuery dataset."""
        return list(self._tables)

    def sample_rows(self, table: str, n: int = 3, *, timeout: float | None = 10.0) -> Result:
        """`table` as `Table.name`, or `dataset.name`; resolved against the tables read at open,
        not a fresh catalogue query per call."""
        qualified = qualified_name(table, self._tables, quote_identifier)
        return self._duckdb.execute(f"SELECT * FROM {qualified} LIMIT {int(n)}", timeout=timeout)

    def transpile(self, sql: str) -> str:
        """`sql` in DuckDB's dialect, tables mapped to this file; anything but queries as is.

        Passing it on unchanged leaves the verdict (syntax error, or refusal of a statement
        sqlglot cannot read) to DuckDB's own parser and statement check.
        """
        try:
            statements = [s for s in sqlglot.parse(sql, read="bigquery") if s is not None]
        except sqlglot.errors.SqlglotError:
            return sql
        if not all(isinstance(s, exp.Query) for s in statements):
            return sql  # not a query: DuckDB's statement check refuses it as written
        return ";\n".join(self._rewrite(s).sql("duckdb") for s in statements)

    def execute(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> Result:
        """The translation counts against `timeout` too (a huge statement takes sqlglot a
        while); `engines.isolated` bounds a translation that would run on past it."""
        start = time.monotonic()
        transpiled = self.transpile(sql)
        remaining = None if timeout is None else timeout - (time.monotonic() - start)
        stopped = QueryTimeout(f"the query ran past its {timeout}s timeout and was stopped")
        if remaining is not None and remaining <= 0:
            raise stopped
        try:
            result = self._duckdb.execute(transpiled, timeout=remaining, max_rows=max_rows)
        except QueryTimeout as exc:
            raise stopped from exc
        elapsed = time.monotonic() - start
        return Result(result.columns, result.rows, elapsed, {"transpiled": transpiled})

    def _rewrite(self, statement: exp.Expr) -> exp.Expr:
        ctes = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
        for table in list(statement.find_all(exp.Table)):
            if not table.name or (not table.db and table.name.lower() in ctes):
                continue
            if table.db:
                # The project becomes this file's catalog (a dataset may share the file's name).
                table.set("catalog", exp.to_identifier(self._catalog, quoted=True))
            if "*" in table.name:
                expanded = self._wildcard(table)
                if expanded is not None:
                    table.replace(expanded)
        for unnest in list(statement.find_all(exp.Unnest)):
            if (
                isinstance(unnest.parent, exp.From | exp.Join)
                and unnest.args.get("alias") is None
                and len(unnest.expressions) == 1
            ):
                unnest.replace(self._unaliased_unnest(unnest))
        return statement

    @staticmethod
    def _unaliased_unnest(unnest: exp.Unnest) -> exp.Subquery:
        """BigQuery exposes the fields of an unaliased `UNNEST(array_of_structs)` as columns;
        DuckDB's `UNNEST(..., max_depth := 2)` does the same (BigQuery has no nested arrays)."""
        arrays = ", ".join(e.sql("duckdb") for e in unnest.expressions)
        select = sqlglot.parse_one(f"SELECT UNNEST({arrays}, max_depth := 2)", read="duckdb")
        return exp.Subquery(this=select)

    def _wildcard(self, table: exp.Table) -> exp.Subquery | None:
        """`dataset.prefix*` as a UNION ALL BY NAME of the matching tables, with their suffix."""
        prefix = table.name.split("*", 1)[0]
        dataset = (table.db or "main").lower()
        matches = sorted(
            name
            for name in self._by_schema.get(dataset, [])
            if name.lower().startswith(prefix.lower())
        )
        if not matches:
            return None
        schema = ".".join(
            exp.to_identifier(part, quoted=True).sql("duckdb")
            for part in (self._catalog, table.db or "main")
        )
        parts = [
            f"SELECT *, '{name[len(prefix) :]}' AS {TABLE_SUFFIX} FROM "
            f"{schema}.{exp.to_identifier(name, quoted=True).sql('duckdb')}"
            for name in matches
        ]
        union = sqlglot.parse_one(" UNION ALL BY NAME ".join(parts), read="duckdb")
        alias = table.alias or prefix.rstrip("_") or "wildcard"
        return exp.Subquery(this=union, alias=exp.TableAlias(this=exp.to_identifier(alias)))


class BigQueryEngine(EngineBase):
    """The BigQuery service, with a dry-run estimate and a cost guard before every query."""

    spec = ENGINES["bigquery"]
    dialect = spec.dialect

    def __init__(
        self,
        project: str,
        *,
        credentials_file: str | Path | None = None,
        location: str | None = None,
        maximum_bytes_billed: int = DEFAULT_MAXIMUM_BYTES_BILLED,
        labels: dict[str, str] | None = None,
        client: Any = None,
    ) -> None:
        """`client` is a ready `bigquery.Client` (tests pass one aimed at a local fake)."""
        try:
            from google.cloud import bigquery
        except ImportError as exc:
            raise EngineUnavailable(
                "bigquery:// needs google-cloud-bigquery: pip install 'querybench[bigquery]'"
            ) from exc
        self._bigquery = bigquery
        if client is None:
            try:
                client = (
                    bigquery.Client.from_service_account_json(  # type: ignore[no-untyped-call]
                        str(credentials_file), project=project, location=location
                    )
                    if credentials_file
                    else bigquery.Client(project=project, location=location)
                )
            except Exception as exc:  # google.auth raises several unrelated types here
                raise EngineUnavailable(f"cannot create a BigQuery client: {exc}") from exc
        self._client = client
        self.project = project
        self.maximum_bytes_billed = int(maximum_bytes_billed)
        self.labels = dict(labels or {"client": "querybench"})
        self._lock = threading.Lock()

    def close(self) -> None:
        self._client.close()

    def tables(self) -> list[Table]:
        out = []
        for dataset in self._client.list_datasets(self.project):
            for item in self._client.list_tables(dataset.reference):
                schema = self._client.get_table(item.reference).schema
                columns = tuple(Column(f.name, f.field_type) for f in schema)
                out.append(Table(item.table_id, columns, dataset.dataset_id))
        return out

    def sample_rows(self, table: str, n: int = 3) -> Result:
        return self.execute(f"SELECT * FROM `{table}` LIMIT {int(n)}", timeout=60)

    def estimate_bytes(self, sql: str) -> int:
        """The dry run's byte estimate; refuses anything the service does not call a SELECT."""
        config = self._bigquery.QueryJobConfig(dry_run=True, use_query_cache=False)
        try:
            job = self._client.query(sql, job_config=config)
        except Exception as exc:
            raise EngineError(f"dry run failed: {_message(exc)}") from exc
        if job.statement_type not in (None, "SELECT"):
            kind = str(job.statement_type)
            raise QueryRefused(f"{kind} statements are not allowed (read-only)", kind)
        return int(job.total_bytes_processed or 0)

    def execute(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> Result:
        # The dry run is the authority on what the statement is (a script is "SCRIPT").
        with self._lock:
            start = time.monotonic()
            estimate = self.estimate_bytes(sql)
            if estimate > self.maximum_bytes_billed:
                raise CostGuardExceeded(estimate, self.maximum_bytes_billed)
            config = self._bigquery.QueryJobConfig(
                maximum_bytes_billed=self.maximum_bytes_billed,
                labels=self.labels,
                job_timeout_ms=None if timeout is None else int(timeout * 1000),
            )
            try:
                job = self._client.query(sql, job_config=config)
                rows_iter = job.result(
                    timeout=timeout, max_results=None if max_rows is None else max_rows + 1
                )
                columns = tuple(f.name for f in rows_iter.schema)
                rows = [tuple(row.values()) for row in rows_iter]
            except Exception as exc:
                if _is_timeout(exc):
                    _cancel(job if "job" in locals() else None)
                    raise QueryTimeout(f"the query ran past its {timeout}s timeout") from exc
                raise EngineError(_message(exc)) from exc
        if max_rows is not None and len(rows) > max_rows:
            raise ResultTooLarge(f"the result has more than {max_rows} rows")
        if result_bytes(rows) > max_result_bytes():
            raise too_many_bytes(max_result_bytes())
        extra = {
            "estimated_bytes": estimate,
            "bytes_processed": job.total_bytes_processed,
            "bytes_billed": job.total_bytes_billed,
            "job_id": job.job_id,
        }
        return Result(columns, rows, time.monotonic() - start, extra)


def _is_timeout(exc: Exception) -> bool:
    import concurrent.futures

    return isinstance(exc, concurrent.futures.TimeoutError | TimeoutError) or (
        "timed out" in str(exc).lower() or "timeout" in type(exc).__name__.lower()
    )


def _cancel(job: Any) -> None:
    if job is None:
        return
    # The query may have stopped already, or the service be unreachable: nothing more to do.
    with contextlib.suppress(Exception):
        job.cancel()


def _message(exc: Exception) -> str:
    return str(getattr(exc, "message", None) or exc).splitlines()[0]


def from_url(url: str, **kw: Any) -> BigQueryLocalEngine | BigQueryEngine:
    """`bigquery+local:///abs/path.duckdb`, or `bigquery://PROJECT[?credentials=FILE&location=L
    &maximum_bytes_billed=N]` (credentials default to Application Default Credentials)."""
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query))
    if parts.scheme.lower() == "bigquery+local":
        if not parts.path.startswith("/") or parts.netloc:
            raise EngineError(f"bigquery+local:// needs an absolute path (three slashes): {url!r}")
        return BigQueryLocalEngine(unquote(parts.path), **kw)
    if not parts.netloc:
        raise EngineError(f"bigquery:// needs a project: bigquery://PROJECT, not {url!r}")
    if "maximum_bytes_billed" in options:
        kw.setdefault("maximum_bytes_billed", int(options["maximum_bytes_billed"]))
    credentials = options.get("credentials")
    if credentials is None and not os.environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
        from querybench.data.credentials import find_bigquery

        found = find_bigquery()  # a bigquery_credential.json, as the official guide has it
        credentials = found.source if found.ok else None
    return BigQueryEngine(
        parts.netloc,
        credentials_file=credentials,
        location=options.get("location"),
        **kw,
    )
