"""Creating tables in an engine from a SQLite file or a folder of CSV/Parquet files.

Loading writes, so it never goes through the read-only engines: each target kind gets its own
writable connection here, opened only for the load. Tables travel as Arrow tables; a SQLite
column's type is the one its values actually have (SQLite lets a column declared INTEGER hold
text), falling back to the declared type's affinity when the column is empty, so every engine
returns the same Python values SQLite does.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from querybench.engines.load_targets import open_writer
from querybench.engines.registry import ENGINES
from querybench.engines.url import mask_secrets
from querybench.errors import DataError, EngineError
from querybench.file_digests import refusal, regular_database


@dataclass(frozen=True)
class LoadedTable:
    name: str
    rows: int
    columns: tuple[tuple[str, str], ...]  # (name, type in the target engine)


def load(
    target: str,
    source: str | Path,
    *,
    replace: bool = False,
    lower_names: bool = False,
    postgres_names: bool = False,
) -> list[LoadedTable]:
    """Create a table in `target` (an engine URL) for every table in `source`.

    `source` is a SQLite file or a folder of `.csv` / `.parquet` files (one table per file,
    named by its stem). With `replace`, existing tables of the same names are dropped first.
    `lower_names` lower-cases table and column names, so that SQL written for a
    case-insensitive engine (SQLite, MySQL) finds them once `transpile(lower_names=True)`
    quotes its identifiers. `postgres_names` lower-cases only the names PostgreSQL folds when
    unquoted (letters, digits, `_`) and keeps the rest as they are, the names BIRD mini-dev's
    PostgreSQL dump has and its PostgreSQL questions use (`T2."Examination Date"`, `T1.sex`).
    """
    tables = list(read_source(source))
    fold = str.lower if lower_names else _postgres_fold if postgres_names else None
    if fold is not None:
        tables = [(fold(n), t.rename_columns([fold(c) for c in t.column_names])) for n, t in tables]
    if not tables:
        raise DataError(f"no tables found in {source}")
    with open_writer(target) as writer:
        loaded = []
        for name, table in tables:
            try:
                types = writer.create(name, table, replace=replace)
                writer.insert(name, table)
            except EngineError:
                raise
            except Exception as exc:
                message = mask_secrets(str(exc))
                raise EngineError(f"cannot load table {name!r}: {message}") from None
            loaded.append(
                LoadedTable(
                    name, table.num_rows, tuple(zip(table.column_names, types, strict=True))
                )
            )
        return loaded


_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _postgres_fold(name: str) -> str:
    """What PostgreSQL makes of `name` written unquoted, for the names that can be."""
    return name.lower() if _PLAIN_IDENTIFIER.fullmatch(name) else name


def read_source(source: str | Path) -> Iterator[tuple[str, pa.Table]]:
    path = Path(source).expanduser()
    if path.is_dir():
        yield from read_folder(path)
    elif path.is_file():
        yield from read_sqlite(path)
    else:
        raise DataError(f"nothing to load at {path}")


def read_folder(folder: Path) -> Iterator[tuple[str, pa.Table]]:
    for path in sorted(folder.iterdir()):
        name = path.name.lower()
        if name.endswith(".parquet"):
            yield path.name[: -len(".parquet")], pq.read_table(_regular(path))
        elif name.endswith((".csv", ".csv.gz")):
            yield path.name.split(".")[0], pa_csv.read_csv(_regular(path))


def _regular(path: Path, sidecars: tuple[str, ...] = ()) -> Path:
    """`path` once it is a regular file (`regular_database`): read by name, a FIFO would hold
    the open for ever; else `DataError`."""
    try:
        return regular_database(path, sidecars)
    except OSError as exc:
        raise DataError(f"cannot open {path}: {refusal(exc, path)}") from exc


def read_sqlite(path: Path) -> Iterator[tuple[str, pa.Table]]:
    _regular(path, ENGINES["sqlite"].sidecars)
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise DataError(f"cannot open {path}: {exc}") from exc
    conn.text_factory = lambda b: b.decode("utf-8", "ignore")
    try:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
            )
        ]
        for name in names:
            quoted = '"' + name.replace('"', '""') + '"'
            info = conn.execute(f"PRAGMA table_info({quoted})").fetchall()
            rows = conn.execute(f"SELECT * FROM {quoted}").fetchall()
            columns = [c[1] for c in info]
            arrays = [
                _column([row[i] for row in rows], str(info[i][2])) for i in range(len(columns))
            ]
            yield name, pa.Table.from_arrays(arrays, names=columns)
    except sqlite3.Error as exc:
        raise DataError(f"cannot read {path}: {exc}") from exc
    finally:
        conn.close()


def _column(values: list[Any], declared: str) -> pa.Array[Any]:
    kinds = {type(v) for v in values if v is not None}
    if kinds == {int} and all(-(2**63) <= v < 2**63 for v in values if v is not None):
        return pa.array(values, pa.int64())
    if kinds and kinds <= {int, float}:
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    if kinds == {bytes}:
        return pa.array(values, pa.binary())
    if kinds:
        return pa.array([None if v is None else _text(v) for v in values], pa.string())
    return pa.array([None] * len(values), _affinity(declared))


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "ignore")
    return str(value)


def _affinity(declared: str) -> pa.DataType:
    """SQLite's type affinity rules, for a column without a single value to go by."""
    upper = declared.upper()
    if "INT" in upper:
        return pa.int64()
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return pa.string()
    if "BLOB" in upper or not upper:
        return pa.binary()
    if any(word in upper for word in ("REAL", "FLOA", "DOUB")):
        return pa.float64()
    return pa.float64()  # NUMERIC affinity
