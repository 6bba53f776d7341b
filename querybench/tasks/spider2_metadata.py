"""Task feature tags a Spider 2.0 database's metadata files support: nested, partitioned, schemas;
and its size (tables, columns, nested columns) for the dataset statistics.

The metadata layout is the official one: `resource/databases/<engine>/<db>/<schema>/DDL.csv`
(plus one JSON per table) for BigQuery and Snowflake, `.../sqlite/<db>/DDL.csv` for SQLite.
Only `DDL.csv` is read (the per-table JSONs only when it is missing), so tagging all 547 tasks
stays cheap.
"""

from __future__ import annotations

import csv
import io
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from querybench import json_input
from querybench.errors import DataError
from querybench.tasks.input_files import read_text

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # a DDL cell can be megabytes long

# Nested types: BigQuery STRUCT/ARRAY (RECORD in legacy SQL), Snowflake VARIANT/OBJECT/ARRAY.
_NESTED_TYPE = re.compile(r"\b(STRUCT|ARRAY|RECORD|VARIANT|OBJECT)\b")
# A date shard suffix: events_20201101, gsod1929, sales_202001 (year 1900-2099, valid month/day).
_SHARD = re.compile(
    r"^(?P<family>.*?\D)_?(?P<date>(19|20)\d\d((0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])?)?)$"
)


@dataclass(frozen=True)
class DatabaseTraits:
    """What the metadata shows; each flag is one feature tag of the tasks on this database."""

    nested: bool  # some column is STRUCT / ARRAY / VARIANT / OBJECT
    partitioned: bool  # some table family is sharded by date (events_20201101, events_20201102)
    multi_schema: bool  # more than one dataset / schema

    def tags(self) -> tuple[str, ...]:
        flags = (("nested", self.nested), ("partitioned", self.partitioned))
        return tuple(n for n, on in (*flags, ("multi_schema", self.multi_schema)) if on)


def find_database_dir(databases: Path, engine: str, db: str) -> Path | None:
    """`databases/<engine>/<db>`; names are matched case- and dash-insensitively as a fallback
    (`sqlite-sakila` is stored as `SQLITE_SAKILA`)."""
    folder = databases / engine
    exact = folder / db
    if exact.is_dir():
        return exact
    return _normalised_dirs(folder).get(_normalise(db))


@cache
def _normalised_dirs(folder: Path) -> dict[str, Path]:
    if not folder.is_dir():
        return {}
    return {_normalise(p.name): p for p in folder.iterdir() if p.is_dir()}


def _normalise(name: str) -> str:
    return name.lower().replace("-", "_")


@cache
def database_traits(db_dir: Path) -> DatabaseTraits:
    schemas = [p for p in sorted(db_dir.iterdir()) if p.is_dir()] or [db_dir]
    tables: list[tuple[str, str]] = []  # (schema, table)
    nested = False
    for schema in schemas:
        for table, types in _schema_tables(schema):
            tables.append((schema.name, table))
            nested = nested or bool(_NESTED_TYPE.search(types))
    families: dict[tuple[str, str], int] = {}
    for schema_name, table in tables:
        match = _SHARD.match(table)
        if match:
            key = (schema_name, match["family"].lower())
            families[key] = families.get(key, 0) + 1
    partitioned = any(count >= 2 for count in families.values())
    return DatabaseTraits(nested, partitioned, multi_schema=len(schemas) > 1)


@dataclass(frozen=True)
class DatabaseSize:
    """A database's size as its metadata gives it (the paper's tables and columns per
    database; nested columns are those of a STRUCT / ARRAY / VARIANT / OBJECT type)."""

    tables: int
    columns: int
    nested_columns: int


@cache
def database_size(db_dir: Path) -> DatabaseSize:
    schemas = [p for p in sorted(db_dir.iterdir()) if p.is_dir()] or [db_dir]
    tables = columns = nested = 0
    for schema in schemas:
        for _table, types in _schema_tables(schema):
            kinds = [line for line in types.splitlines() if line.strip()]
            tables += 1
            columns += len(kinds)
            nested += sum(bool(_NESTED_TYPE.search(kind)) for kind in kinds)
    return DatabaseSize(tables, columns, nested)


def _schema_tables(schema: Path) -> list[tuple[str, str]]:
    """(table name, the column-type text of its DDL) for one schema folder."""
    ddl = schema / "DDL.csv"
    if ddl.exists() and not ddl.is_file():
        raise DataError(f"{ddl}: not a file")
    tables = _ddl_tables(ddl) if ddl.is_file() else None
    if tables is not None:
        return tables
    files = sorted(schema.glob("*.json"))
    if not files and not ddl.exists():
        raise DataError(f"{schema}: no table metadata (neither a DDL.csv nor a table's JSON)")
    tables = []
    for path in files:
        try:
            info = json_input.loads(read_text(path, "table metadata"))
            types = "\n".join(str(t) for t in info.get("column_types", []))
            name = str(info.get("table_name") or path.stem)
        except (OSError, ValueError, AttributeError, TypeError) as exc:  # ValueError: JSON, UTF-8
            raise DataError(f"{path}: unreadable table metadata ({exc})") from exc
        tables.append((name, types))
    return tables


def _ddl_tables(path: Path) -> list[tuple[str, str]] | None:
    """None when the file has no DDL column (one upstream file lists only names)."""
    text = read_text(path, "DDL.csv", errors="replace")
    # strict: a file cut inside a quoted DDL is an error, not a last table of the lines it kept
    reader = csv.reader(io.StringIO(text), strict=True)
    number = 0  # the last row read
    try:
        header = [h.strip().lower() for h in next(reader, [])]
        number = 1
        if "table_name" not in header:
            raise DataError(f"{path}:1: field 'table_name' missing from the header")
        if "ddl" not in header:
            return None
        name_at, ddl_at = header.index("table_name"), header.index("ddl")
        tables = []
        for number, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) <= max(name_at, ddl_at):
                raise DataError(f"{path}: row {number}: field 'DDL' is missing")
            tables.append((row[name_at], _column_types(row[ddl_at])))
    except csv.Error as exc:
        raise DataError(f"{path}: row {number + 1}: {exc}") from exc
    return tables


def _column_types(ddl: str) -> str:
    """The type part of every column line (names, quoted or not, and OPTIONS(...) removed)."""
    body = ddl[ddl.find("(") + 1 :]
    types = []
    for line in body.splitlines():
        text = line.strip()
        if not text or text.startswith((")", "PARTITION", "CLUSTER", "OPTIONS")):
            continue
        if text[0] in '"`':
            end = text.find(text[0], 1)
            rest = text[end + 1 :] if end > 0 else ""
        else:
            rest = text.partition(" ")[2]
        types.append(rest.split(" OPTIONS(")[0])
    return "\n".join(types)
