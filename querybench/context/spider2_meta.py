"""Schema from Spider 2.0 metadata files: `<engine>/<db>/<schema dir>/{DDL.csv, <table>.json}`.

The released files vary: list fields sometimes hold Python-literal text, `DDL.csv` may name tables
qualified or with stray spaces, and some tables appear only in `DDL.csv` (their columns are read
from the CREATE statement). Only `resource/databases` is read here, never anything gold.
"""

from __future__ import annotations

import ast
import csv
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from querybench import json_input
from querybench.context.nested import flatten_type, split_top_level, variant_paths
from querybench.context.schema import ColumnInfo, DatabaseSchema, ForeignKey, TableInfo
from querybench.errors import DataError

ENGINES = ("bigquery", "snowflake", "sqlite")
_SAMPLE_ROWS = 3
_VARIANT_TYPES = ("VARIANT", "OBJECT", "ARRAY")
_REFERENCES = re.compile(
    r"FOREIGN\s+KEY\s*\(\s*[\"`\[]?(\w+)[\"`\]]?\s*\)\s*REFERENCES\s+[\"`\[]?([\w.]+)[\"`\]]?"
    r"\s*\(\s*[\"`\[]?(\w+)",
    re.IGNORECASE,
)
_INLINE_REF = re.compile(
    r"^[\"`\[]?(\w+)[\"`\]]?\s.*?REFERENCES\s+[\"`\[]?([\w.]+)[\"`\]]?\s*\(\s*[\"`\[]?(\w+)",
    re.IGNORECASE,
)


def find_database_dir(databases: Path, engine: str, db: str) -> Path:
    """`databases/<engine>/<db>`, matching case and `-`/`_` loosely; DataError when absent."""
    base = databases / engine
    exact = base / db
    if exact.is_dir():
        return exact
    wanted = _norm(db)
    if base.is_dir():
        for candidate in base.iterdir():
            if candidate.is_dir() and _norm(candidate.name) == wanted:
                return candidate
    raise DataError(f"no schema metadata for database {db!r} ({engine}) under {base}")


def _norm(name: str) -> str:
    return name.lower().replace("-", "_")


class Spider2Metadata:
    """A `SchemaSource` over one database folder of Spider 2.0 metadata."""

    def __init__(self, db_dir: Path, dialect: str) -> None:
        self.db_dir = Path(db_dir)
        self.dialect = dialect

    def load(self) -> DatabaseSchema:
        return load_metadata(self.db_dir.resolve(), self.dialect)


@lru_cache(maxsize=16)
def load_metadata(db_dir: Path, dialect: str) -> DatabaseSchema:
    """Read every table of a database folder once; later calls share the parsed schema."""
    if not db_dir.is_dir():
        raise DataError(f"database metadata folder not found: {db_dir}")
    schema_dirs = sorted(
        {p.parent for p in db_dir.rglob("*.json")} | {p.parent for p in db_dir.rglob("DDL.csv")}
    )
    if not schema_dirs:
        raise DataError(f"no table metadata (DDL.csv or *.json) in {db_dir}")
    tables: dict[str, TableInfo] = {}
    for folder in schema_dirs:
        for table in _read_schema_dir(db_dir, folder, dialect):
            tables.setdefault(table.name, table)
    return DatabaseSchema(db_dir.name, dialect, tuple(tables.values()))


def _read_schema_dir(db_dir: Path, folder: Path, dialect: str) -> list[TableInfo]:
    ddl_rows = _read_ddl(folder / "DDL.csv") if (folder / "DDL.csv").is_file() else {}
    tables: list[TableInfo] = []
    seen: set[str] = set()
    for path in sorted(folder.glob("*.json")):
        table = _read_table_json(path, db_dir, folder, dialect, ddl_rows)
        tables.append(table)
        seen.add(table.short_name.lower())
    for key, (raw_name, description, ddl) in ddl_rows.items():
        if key in seen:
            continue
        short = raw_name.split(".")[-1]
        full = raw_name if raw_name.count(".") >= 2 else _qualify(db_dir, folder, short, dialect)
        columns = _columns_from_ddl(ddl)
        tables.append(
            TableInfo(
                name=full,
                short_name=short,
                columns=columns,
                schema=_schema_of(full),
                description=description,
                foreign_keys=_foreign_keys(ddl),
            )
        )
    return tables


def _read_ddl(path: Path) -> dict[str, tuple[str, str, str]]:
    """DDL.csv rows keyed by lower-case short table name: (name as written, description, DDL)."""
    csv.field_size_limit(1 << 30)
    try:
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            fields = {(k or "").lower(): k for k in reader.fieldnames or ()}
            if "table_name" not in fields:
                raise DataError(f"{path}: no table_name column (found {reader.fieldnames})")
            rows = {}
            for row in reader:
                name = _clean_name(row.get(fields["table_name"]) or "")
                if not name:
                    continue
                description = (row.get(fields.get("description", ""), "") or "").strip()
                ddl = (row.get(fields.get("ddl", ""), "") or "").strip()
                rows[name.split(".")[-1].lower()] = (name, description, ddl)
            return rows
    except (csv.Error, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: malformed DDL.csv ({exc})") from exc


def _read_table_json(
    path: Path, db_dir: Path, folder: Path, dialect: str, ddl_rows: dict[str, tuple[str, str, str]]
) -> TableInfo:
    try:
        data = json_input.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: malformed table metadata JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise DataError(f"{path}: table metadata is not a JSON object")
    names = _as_list(data.get("column_names"), path, "column_names")
    types = _as_list(data.get("column_types"), path, "column_types", default=[""] * len(names))
    descs = _as_list(data.get("description"), path, "description", default=[])
    samples = [
        r for r in _as_list(data.get("sample_rows"), path, "sample_rows", []) if isinstance(r, dict)
    ]
    short = str(data.get("table_name") or path.stem).split(".")[-1].strip()
    full = _clean_name(str(data.get("table_fullname") or ""))
    full = full or _qualify(db_dir, folder, short, dialect)
    if dialect == "sqlite":
        full = short
    nested_names = data.get("nested_column_names")
    columns: list[ColumnInfo] = []
    if nested_names:
        nested = _as_list(nested_names, path, "nested_column_names")
        ntypes = _as_list(data.get("nested_column_types"), path, "nested_column_types", [])
        for i, name in enumerate(nested):
            columns.append(ColumnInfo(str(name), _at(ntypes, i), _at(descs, i)))
    else:
        for i, name in enumerate(names):
            ctype = _at(types, i)
            columns.append(ColumnInfo(str(name), ctype, _at(descs, i)))
            if ctype.upper().startswith(("STRUCT", "ARRAY")):
                columns.extend(flatten_type(str(name), ctype))
            elif ctype.upper() in _VARIANT_TYPES:
                columns.extend(variant_paths(str(name), (r.get(name) for r in samples)))
    ddl = ddl_rows.get(short.lower(), ("", "", ""))
    return TableInfo(
        name=full,
        short_name=short,
        columns=tuple(columns),
        schema=_schema_of(full),
        description=ddl[1],
        sample_rows=tuple(samples[:_SAMPLE_ROWS]),
        foreign_keys=_foreign_keys(ddl[2]),
    )


def _as_list(value: Any, path: Path, key: str, default: list[Any] | None = None) -> list[Any]:
    if value is None:
        if default is None:
            raise DataError(f"{path}: missing {key!r}")
        return default
    if isinstance(value, str):  # some releases store Python-literal text
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError) as exc:
            raise DataError(f"{path}: {key!r} is neither a list nor list text") from exc
    if not isinstance(value, list):
        raise DataError(f"{path}: {key!r} should be a list, not {type(value).__name__}")
    return value


def _at(values: list[Any], i: int) -> str:
    v = values[i] if i < len(values) else None
    return "" if v is None else str(v).strip()


def _qualify(db_dir: Path, folder: Path, short: str, dialect: str) -> str:
    if dialect == "sqlite":
        return short
    if dialect == "bigquery":  # folders are named `project.dataset`
        return f"{folder.name}.{short}"
    return f"{db_dir.name}.{folder.name}.{short}"


def _clean_name(name: str) -> str:
    """Some releases write `dataset. table`: drop the spaces around name parts."""
    return ".".join(part.strip() for part in name.strip().split("."))


def _schema_of(full: str) -> str | None:
    parts = full.rsplit(".", 1)
    return parts[0] if len(parts) == 2 else None


def _columns_from_ddl(ddl: str) -> tuple[ColumnInfo, ...]:
    start, end = ddl.find("("), ddl.rfind(")")
    if start < 0 or end <= start:
        return ()
    columns: list[ColumnInfo] = []
    for part in split_top_level(ddl[start + 1 : end]):
        words = part.split(None, 1)
        if not words or words[0].upper() in ("PRIMARY", "FOREIGN", "CONSTRAINT", "UNIQUE", "KEY"):
            continue
        name = words[0].strip('"`[]')
        ctype = _strip_options(words[1]) if len(words) > 1 else ""
        columns.append(ColumnInfo(name, ctype))
        if ctype.upper().startswith(("STRUCT", "ARRAY")):
            columns.extend(flatten_type(name, ctype))
    return tuple(columns)


def _strip_options(type_text: str) -> str:
    for marker in (
        " OPTIONS(",
        " OPTIONS (",
        " COMMENT ",
        " NOT NULL",
        " DEFAULT ",
        " PRIMARY KEY",
    ):
        i = type_text.upper().find(marker)
        if i >= 0:
            type_text = type_text[:i]
    return type_text.strip()


def _foreign_keys(ddl: str) -> tuple[ForeignKey, ...]:
    if "REFERENCES" not in ddl.upper():
        return ()
    keys = [ForeignKey(*m.groups()) for m in _REFERENCES.finditer(ddl)]
    start, end = ddl.find("("), ddl.rfind(")")
    if start >= 0 and end > start:
        for part in split_top_level(ddl[start + 1 : end]):
            m = _INLINE_REF.match(part)
            if m and not part.upper().startswith("FOREIGN"):
                keys.append(ForeignKey(*m.groups()))
    return tuple(keys)
