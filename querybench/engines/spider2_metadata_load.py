"""Local emulation databases built from a Spider 2.0 metadata folder.

A Spider 2.0 database folder (`resource/databases/{bigquery,snowflake}/<db>/`) holds one
subfolder per dataset (`<project>.<dataset>`, BigQuery) or schema (Snowflake), each with a
`DDL.csv` and one JSON file per table: column names, column types (nested STRUCT/ARRAY types
included) and a few sample rows. `build_emulation` turns such a folder into one DuckDB file: a
schema per dataset or Snowflake schema, every table with its types mapped, the sample rows
inserted. `bigquery+local://` and `snowflake+local://` engines open that file read-only.

The sample rows were written by pandas, so nested arrays often arrive as numpy's repr (`[{...}\\n
{...}]`, `['a' 'b']`) and Snowflake timestamps as epoch microseconds; cells that cannot be read
become NULL rather than failing the table.
"""

from __future__ import annotations

import ast
import csv
import functools
import io
import json
import logging
import math
import os
import tokenize
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp

from querybench import json_input
from querybench.engines.base import quote_identifier
from querybench.errors import DataError
from querybench.file_digests import open_regular, read_regular

log = logging.getLogger(__name__)

Dialect = Literal["bigquery", "snowflake"]

#: The table that records which dialect (and Snowflake database name) an emulation file is for.
META_TABLE = "_querybench_emulation"

_FALLBACK_TYPE = "VARCHAR"
# Types sqlglot would map to something DuckDB cannot hold without an extension.
_AS_TEXT = {"GEOGRAPHY", "GEOMETRY"}
_SNOWFLAKE_JSON = {"VARIANT", "OBJECT", "ARRAY"}
_T = exp.DataType.Type
_NESTED = exp.DataType.NESTED_TYPES
_JSON = exp.DataType.Type.JSON
_TEMPORAL = {"DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIME"}


@dataclass(frozen=True)
class EmulationReport:
    """What `build_emulation` created, and what it had to leave out (with the reason)."""

    path: Path
    database: str
    tables: int
    rows: int
    skipped: tuple[str, ...]


@dataclass(frozen=True)
class _TableSpec:
    schema: str
    name: str
    columns: tuple[tuple[str, str], ...]  # (name, source-dialect type)
    rows: tuple[dict[str, Any], ...]


def build_emulation(
    metadata_dir: str | Path,
    out_path: str | Path,
    dialect: Dialect,
    *,
    database: str | None = None,
) -> EmulationReport:
    """Create `out_path` (a new DuckDB file) from the Spider 2.0 metadata in `metadata_dir`.

    `database` is the Snowflake database name the file stands for (default: the folder name);
    fakesnow's information-schema views and macros are created under that name. The file is
    built as `<out>.part` and renamed when complete, so an interrupted build never leaves a
    half file where a finished one is looked for.
    """
    source = Path(metadata_dir)
    out = Path(out_path)
    if not source.is_dir():
        raise DataError(f"metadata folder not found: {source}")
    if out.exists():
        raise DataError(f"{out} exists already; build_emulation creates a new file")
    db_name = (database or source.name).upper() if dialect == "snowflake" else source.name
    specs = list(_read_specs(source, dialect))
    if not specs:
        raise DataError(f"no table metadata (DDL.csv or table JSON) under {source}")
    part = out.with_name(out.name + ".part")
    _remove_partial(part)  # left by a build that was interrupted
    conn = duckdb.connect(":memory:")
    try:
        alias = quote_identifier(db_name)
        conn.execute(f"ATTACH '{_literal(str(part))}' AS {alias}")
        conn.execute(f"USE {alias}")
        conn.execute("SET TimeZone = 'UTC'")
        conn.execute(f"CREATE TABLE main.{META_TABLE} (dialect VARCHAR, database VARCHAR)")
        conn.execute(f"INSERT INTO main.{META_TABLE} VALUES (?, ?)", [dialect, db_name])
        tables, rows, skipped = 0, 0, []
        for spec in specs:
            try:
                rows += _create_table(conn, alias, spec, dialect)
                tables += 1
            except (duckdb.Error, ValueError) as exc:
                skipped.append(f"{spec.schema}.{spec.name}: {str(exc).splitlines()[0]}")
        if dialect == "snowflake":
            _add_fakesnow_objects(conn, db_name)
        conn.execute("USE memory")
        conn.execute(f"DETACH {alias}")
    except BaseException:
        conn.close()
        _remove_partial(part)
        raise
    conn.close()
    part.replace(out)
    return EmulationReport(out, db_name, tables, rows, tuple(skipped))


def _remove_partial(part: Path) -> None:
    part.unlink(missing_ok=True)
    part.with_name(part.name + ".wal").unlink(missing_ok=True)


def _read_specs(source: Path, dialect: Dialect) -> list[_TableSpec]:
    folders = (
        [source]
        if _is_schema_folder(source)
        else sorted(p for p in source.iterdir() if p.is_dir() and _is_schema_folder(p))
    )
    specs: list[_TableSpec] = []
    for folder in folders:
        schema = folder.name.rpartition(".")[2] if dialect == "bigquery" else folder.name
        seen: set[str] = set()
        for path in sorted(folder.glob("*.json")):
            try:
                meta = json_input.loads(read_regular(path).decode("utf-8"))
                columns = tuple(zip(meta["column_names"], meta["column_types"], strict=True))
                name = str(meta.get("table_name") or path.stem).strip()
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise DataError(f"bad table metadata {path}: {exc}") from exc
            seen.add(name.lower())
            specs.append(_TableSpec(schema, name, columns, tuple(meta.get("sample_rows") or ())))
        # Tables listed in DDL.csv without a JSON file (some sharded tables): columns from the DDL.
        for name, columns in _ddl_tables(folder / "DDL.csv", dialect):
            if name.lower() not in seen:
                seen.add(name.lower())
                specs.append(_TableSpec(schema, name, columns, ()))
    return specs


def _is_schema_folder(path: Path) -> bool:
    return (path / "DDL.csv").is_file() or any(path.glob("*.json"))


def _ddl_tables(path: Path, dialect: Dialect) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    if not path.is_file():
        return []
    csv.field_size_limit(1 << 30)
    out = []
    fd, _ = open_regular(path)  # a FIFO in the data folder never holds the load
    with os.fdopen(fd, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            name, ddl = (row.get("table_name") or "").strip(), row.get("ddl") or ""
            try:
                create = sqlglot.parse_one(ddl, read=dialect)
            except sqlglot.errors.SqlglotError as exc:
                log.debug("%s: table %s skipped, its DDL does not parse: %s", path, name, exc)
                continue
            schema = create.this if isinstance(create, exp.Create) else None
            if not name or not isinstance(schema, exp.Schema):
                continue
            columns = tuple(
                (col.name, col.args["kind"].sql(dialect))
                for col in schema.expressions
                if isinstance(col, exp.ColumnDef) and col.args.get("kind") is not None
            )
            out.append((name, columns))
    return out


def _create_table(
    conn: duckdb.DuckDBPyConnection, catalog: str, spec: _TableSpec, dialect: Dialect
) -> int:
    types = [_duckdb_type(t, dialect, spec.rows, name) for name, t in spec.columns]
    type_sql = [dt.sql("duckdb") for dt in types]
    # Fully qualified: a schema may share the database's name (stackoverflow.stackoverflow).
    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {catalog}.{quote_identifier(spec.schema)}")
    qualified = f"{catalog}.{quote_identifier(spec.schema)}.{quote_identifier(spec.name)}"
    names = [name for name, _ in spec.columns]
    column_defs = ", ".join(
        f"{quote_identifier(n)} {t}" for n, t in zip(names, type_sql, strict=True)
    )
    conn.execute(f"CREATE TABLE {qualified} ({column_defs})")
    rows = [row for row in spec.rows if isinstance(row, dict)]
    if not rows:
        return 0
    # Every cell travels as text and is cast by DuckDB; a cell that does not cast becomes NULL.
    texts = {
        f"c{i}": pa.array([_cell(row.get(name), dt, t) for row in rows], pa.string())
        for i, (name, dt, t) in enumerate(zip(names, types, type_sql, strict=True))
    }
    casts = ", ".join(
        f"TRY_CAST(c{i}::JSON AS {t})" if _is_json_or_nested(dt) else f"TRY_CAST(c{i} AS {t})"
        for i, (dt, t) in enumerate(zip(types, type_sql, strict=True))
    )
    conn.register("_querybench_rows", pa.table(texts))
    try:
        conn.execute(f"INSERT INTO {qualified} SELECT {casts} FROM _querybench_rows")
    finally:
        conn.unregister("_querybench_rows")
    return len(rows)


def _is_json_or_nested(dt: exp.DataType) -> bool:
    return dt.this in _NESTED or dt.this == _JSON


def _duckdb_type(
    source_type: str, dialect: Dialect, rows: tuple[dict[str, Any], ...], column: str
) -> exp.DataType:
    if (
        dialect == "snowflake"
        and source_type.strip().upper() == "NUMBER"
        and any(
            isinstance(r.get(column), float) and not float(r[column]).is_integer()
            for r in rows
            if isinstance(r, dict)
        )
    ):
        return _mapped_type("FLOAT", dialect)
    return _mapped_type(source_type, dialect)


@functools.lru_cache(maxsize=4096)
def _mapped_type(source_type: str, dialect: Dialect) -> exp.DataType:
    upper = source_type.strip().upper()
    if upper in _AS_TEXT:
        return exp.DataType.build(_FALLBACK_TYPE)
    if dialect == "snowflake" and upper in _SNOWFLAKE_JSON:
        return exp.DataType.build("JSON")
    try:
        dt = exp.DataType.build(source_type, dialect=dialect)
        # Round trip through DuckDB's spelling, so every type is one DuckDB can parse back.
        return exp.DataType.build(dt.sql("duckdb"), dialect="duckdb")
    except (sqlglot.errors.SqlglotError, ValueError):
        return exp.DataType.build(_FALLBACK_TYPE)


def _cell(value: Any, dt: exp.DataType, type_sql: str) -> str | None:
    """The value as text for `TRY_CAST(? AS type)` (JSON text for nested and JSON types)."""
    if value is None or (isinstance(value, float) and math.isnan(value) and not _is_float(dt)):
        return None
    if dt.this == _JSON:
        if isinstance(value, str):
            try:
                json_input.loads(value)
                return value
            except ValueError:
                pass
        return json.dumps(_plain(value), default=str)
    if dt.this in _NESTED:
        return json.dumps(_normalize(value, dt), default=str)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and type_sql in _TEMPORAL:
        return _from_epoch(float(value))
    return str(value)


def _normalize(value: Any, dt: exp.DataType) -> Any:
    """A JSON-ready value of the nested type `dt` (NaN and unreadable parts become None)."""
    if value is None:
        return None
    if isinstance(value, str) and dt.this in _NESTED:
        value = parse_python_repr(value)
    if dt.this in (_T.ARRAY, _T.LIST):
        inner = dt.expressions[0] if dt.expressions else exp.DataType.build(_FALLBACK_TYPE)
        if not isinstance(value, list | tuple):
            return None
        return [_normalize(v, inner) for v in value]
    if dt.this == _T.STRUCT:
        if not isinstance(value, dict):
            return None
        fields: dict[str, exp.DataType] = {
            f.name: f.args["kind"]
            for f in dt.expressions
            if isinstance(f, exp.ColumnDef) and isinstance(f.args.get("kind"), exp.DataType)
        }
        return {k: _normalize(v, fields[k]) if k in fields else _plain(v) for k, v in value.items()}
    return _plain(value)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, bytes | bytearray):
        return value.decode("latin-1")
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def parse_python_repr(text: str) -> Any:
    """A Python literal as pandas/numpy printed it; None when it cannot be read.

    numpy prints arrays without commas (`['a' 'b']`, `[{...}\\n {...}]`) and NaN as `nan`;
    commas are put back between adjacent values before `ast.literal_eval`.
    """
    # Not ast.literal_eval first: it would join numpy's `['a' 'b']` into `['ab']`.
    try:
        tokens = [
            t
            for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type not in _IGNORED_TOKENS
        ]
        parts: list[str] = []
        previous: tokenize.TokenInfo | None = None
        for token in tokens:
            if previous is not None and _ends_value(previous) and _starts_value(token):
                parts.append(",")
            parts.append(
                "None" if token.type == tokenize.NAME and token.string == "nan" else token.string
            )
            previous = token
        return ast.literal_eval(" ".join(parts))
    except (ValueError, SyntaxError, tokenize.TokenError, MemoryError, RecursionError):
        return None


_IGNORED_TOKENS = {
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.COMMENT,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
}


def _ends_value(token: tokenize.TokenInfo) -> bool:
    return token.type in (tokenize.STRING, tokenize.NUMBER, tokenize.NAME) or token.string in (
        ")",
        "]",
        "}",
    )


def _starts_value(token: tokenize.TokenInfo) -> bool:
    return token.type in (tokenize.STRING, tokenize.NUMBER, tokenize.NAME) or token.string in (
        "(",
        "[",
        "{",
    )


def _from_epoch(value: float) -> str | None:
    """Epoch seconds, milliseconds or microseconds (told apart by size) as ISO text."""
    if math.isnan(value) or math.isinf(value):
        return None
    seconds = value / 1e6 if abs(value) >= 1e14 else value / 1e3 if abs(value) >= 1e11 else value
    try:
        return datetime.fromtimestamp(seconds, tz=UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def _is_float(dt: exp.DataType) -> bool:
    return dt.this in (_T.DOUBLE, _T.FLOAT)


def _add_fakesnow_objects(conn: duckdb.DuckDBPyConnection, database: str) -> None:
    """fakesnow's per-database information schema and macros, so a read-only attach needs none."""
    try:
        from fakesnow import info_schema, macros
    except ImportError:  # the snowflake extra is not installed: the tables still work
        return
    # The views refer to fakesnow's global catalog, which every fakesnow instance attaches.
    conn.execute("ATTACH IF NOT EXISTS ':memory:' AS _fs_global")
    conn.execute(info_schema.fs_global_creation_sql())
    conn.execute(info_schema.per_db_creation_sql(database))
    # Qualified down to `main`: a schema may share the database's name (ETHEREUM_BLOCKCHAIN).
    conn.execute(macros.creation_sql(f"{quote_identifier(database)}.main"))


def _literal(text: str) -> str:
    return text.replace("'", "''")
