"""`querybench db …`: load tables into an engine, query it read-only, translate SQL dialects."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from querybench.errors import QuerybenchError

if TYPE_CHECKING:
    from querybench.engines import Engine

app = typer.Typer(
    help=(
        "Work with a database engine directly.\n\n"
        "Examples:\n\n"
        "    querybench db load postgresql://postgres@127.0.0.1/world --from world_1.sqlite\n\n"
        "    querybench db query chdb:///data/world 'SELECT count(*) FROM city'\n\n"
        "    querybench db query mysql://root@127.0.0.1/world --file q.sql --dialect sqlite\n\n"
        "    echo 'SELECT IFNULL(a, 0)' | querybench db transpile --from sqlite --to postgres\n\n"
        "    querybench db check snowflake://RSRSBDK-YDB67606"
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

EngineUrl = Annotated[
    str,
    typer.Argument(
        help="sqlite:///path, duckdb:///path, postgresql://…, mysql://…, clickhouse://… or "
        "chdb:///dir (passwords may come from PGPASSWORD, MYSQL_PWD, CLICKHOUSE_PASSWORD)."
    ),
]


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


@app.command("load")
def load_command(
    target: EngineUrl,
    source: Annotated[
        Path, typer.Option("--from", help="A SQLite file or a folder of .csv/.parquet files.")
    ],
    replace: Annotated[bool, typer.Option(help="Drop tables of the same names first.")] = False,
    lower_names: Annotated[
        bool, typer.Option(help="Lower-case table and column names (see `db query`).")
    ] = False,
    postgres_names: Annotated[
        bool,
        typer.Option(
            help="Lower-case only the names PostgreSQL folds when unquoted, keep names that "
            "need quotes (BIRD mini-dev's PostgreSQL questions expect this)."
        ),
    ] = False,
) -> None:
    """Create one table per source table (a separate, writable connection)."""
    from querybench.engines.load import load

    if lower_names and postgres_names:
        _fail("--lower-names and --postgres-names are two ways to rename: choose one")
    try:
        loaded = load(
            target, source, replace=replace, lower_names=lower_names, postgres_names=postgres_names
        )
    except QuerybenchError as exc:
        _fail(str(exc))
        return
    for table in loaded:
        typer.echo(f"{table.name}\t{table.rows} rows\t{len(table.columns)} columns")


@app.command("query")
def query_command(
    target: EngineUrl,
    sql: Annotated[str | None, typer.Argument(help="One statement.")] = None,
    file: Annotated[
        Path | None, typer.Option("--file", help="One statement per line; one JSON line each.")
    ] = None,
    dialect: Annotated[
        str | None, typer.Option(help="The SQL's dialect, translated when it is not the engine's.")
    ] = None,
    output_format: Annotated[str, typer.Option("--format", help="csv or jsonl.")] = "csv",
    timeout: Annotated[float | None, typer.Option(help="Seconds per statement.", min=0.001)] = 30.0,
    max_rows: Annotated[
        int | None, typer.Option(help="Refuse results longer than this.", min=0)
    ] = None,
    lower_names: Annotated[
        bool, typer.Option(help="Lower-case and quote identifiers (tables loaded so).")
    ] = False,
) -> None:
    """Run read-only queries; refused writes, timeouts and errors are reported, never retried."""
    from querybench.engines import connect
    from querybench.engines.transpile import engine_schema

    if (sql is None) == (file is None):
        _fail("give either SQL or --file, not both")
    if output_format not in ("csv", "jsonl"):
        _fail("--format is csv or jsonl")
    try:
        engine = connect(target)
    except QuerybenchError as exc:
        _fail(str(exc))
        return
    with engine:
        # Read the tables once per command, only when a translation will use them: the
        # translation resolves names against them and writes SQLite's conversions as casts.
        schema = None
        if dialect is not None or lower_names:
            try:
                schema = engine_schema(engine)
            except QuerybenchError as exc:
                _fail(f"cannot read the tables to translate against: {exc}")
        if file is not None:
            for index, line in enumerate(_statements(file)):
                outcome = _run(engine, line, dialect, timeout, max_rows, lower_names, schema)
                typer.echo(json.dumps(outcome | {"index": index}, default=str))
            return
        assert sql is not None
        outcome = _run(engine, sql, dialect, timeout, max_rows, lower_names, schema)
        if outcome["error"] is not None:
            _fail(outcome["error"])
        _print_rows(outcome["columns"], outcome["rows"], output_format)


@app.command("check")
def check_command(
    target: Annotated[
        str,
        typer.Argument(
            help="Any engine URL: snowflake://ACCOUNT (credentials from snowflake_credential.json "
            "or SNOWFLAKE_*), bigquery://PROJECT (GOOGLE_APPLICATION_CREDENTIALS or "
            "bigquery_credential.json), postgresql://…, a file, …"
        ),
    ],
    timeout: Annotated[
        float,
        typer.Option(help="Seconds to wait for the connection and the query in all.", min=0.1),
    ] = 30.0,
) -> None:
    """Connect, run `SELECT 1`, and say what failed in words (exit 1 on failure).

    Example: `querybench db check snowflake://RSRSBDK-YDB67606` says whether the account is
    suspended (000666), asks for MFA, rejects the token, or does not exist.
    """
    from querybench.engines.check import check_connection

    outcome = check_connection(target, timeout=timeout)
    if outcome.ok:
        typer.echo(f"ok: {target}: {outcome.message} ({outcome.seconds:.2f} s)")
        return
    typer.echo(f"failed: {target}: {outcome.message}", err=True)
    raise typer.Exit(1)


@app.command("transpile")
def transpile_command(
    sql: Annotated[str | None, typer.Argument(help="The SQL; read from stdin when absent.")] = None,
    source: Annotated[str, typer.Option("--from", help="Dialect of the input.")] = "sqlite",
    target: Annotated[str, typer.Option("--to", help="Dialect to write.")] = "duckdb",
    pretty: Annotated[bool, typer.Option(help="Indent the output.")] = False,
) -> None:
    """Translate SQL between dialects (sqlglot); one statement per line on stdin."""
    from querybench.engines.transpile import transpile

    lines = [sql] if sql is not None else [line for line in sys.stdin if line.strip()]
    failed = False
    for line in lines:
        try:
            typer.echo(transpile(line.strip(), source, target, pretty=pretty))
        except QuerybenchError as exc:
            typer.echo(f"error: {exc}", err=True)
            failed = True
    if failed:
        raise typer.Exit(1)


def _statements(file: Path) -> list[str]:
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        _fail(f"cannot read {file}: {exc}")
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]


def _run(
    engine: Engine,
    sql: str,
    dialect: str | None,
    timeout: float | None,
    max_rows: int | None,
    lower_names: bool,
    schema: dict[str, dict[str, str]] | None,
) -> dict[str, Any]:
    from querybench.engines.transpile import transpile

    try:
        if dialect is not None or lower_names:
            sql = transpile(
                sql,
                dialect or engine.dialect,
                engine.dialect,
                lower_names=lower_names,
                schema=schema,
            )
        result = engine.execute(sql, timeout=timeout, max_rows=max_rows)
    except QuerybenchError as exc:
        code = getattr(exc, "code", "error")
        return {"columns": None, "rows": None, "error": f"{code}: {exc}"}
    rows = [[_plain(v) for v in row] for row in result.rows]
    return {"columns": list(result.columns), "rows": rows, "error": None}


def _plain(value: Any) -> Any:
    """A value JSON and CSV can hold, numbers as numbers (`affinity.storage_value`)."""
    from querybench.engines.affinity import storage_value

    value = storage_value(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)


def _print_rows(columns: list[str], rows: list[list[Any]], output_format: str) -> None:
    if output_format == "jsonl":
        for row in rows:
            typer.echo(json.dumps(dict(zip(columns, row, strict=True)), default=str))
        return
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
