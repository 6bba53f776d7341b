"""Writable connections for `engines.load`, one small class per target kind.

Each maps Arrow types to its engine's column types and inserts rows in batches. Text columns
compare byte-wise everywhere (PostgreSQL `COLLATE "C"`, MariaDB `utf8mb4_nopad_bin`, MySQL
`utf8mb4_0900_bin`), as SQLite's BINARY collation does, so `=` and `ORDER BY` on text agree
across engines, trailing spaces included.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from querybench.engines.base import database_file, quote_identifier
from querybench.engines.registry import ENGINES, spec_for_scheme
from querybench.engines.url import mask_secrets, parse_server_url
from querybench.errors import EngineError, EngineUnavailable

_BATCH = 1_000


def temporary_parquet(table: pa.Table) -> Path:
    """`table` written to a fresh Parquet file (the caller removes it)."""
    with tempfile.NamedTemporaryFile(suffix=".parquet", delete=False) as handle:
        path = Path(handle.name)
    pq.write_table(table, path)
    return path


def server_database(target: str, engine: str) -> str:
    """The database a server URL names; loading needs one."""
    url = parse_server_url(target, engine)
    if not url.database:
        raise EngineUnavailable(f"the URL names no database to load into: {url.masked()}")
    return url.database


class Writer(Protocol):
    def create(self, name: str, table: pa.Table, *, replace: bool) -> list[str]: ...

    def insert(self, name: str, table: pa.Table) -> None: ...


def column_type(kind: str, dtype: pa.DataType) -> str:
    """The column type `kind` gets for an Arrow type (text for anything without a mapping)."""
    if pa.types.is_boolean(dtype):
        return {"clickhouse": "Bool", "sqlite": "INTEGER"}.get(kind, "BOOLEAN")
    if pa.types.is_integer(dtype):
        return {"clickhouse": "Int64", "sqlite": "INTEGER"}.get(kind, "BIGINT")
    if pa.types.is_floating(dtype):
        return {"clickhouse": "Float64", "sqlite": "REAL", "postgres": "DOUBLE PRECISION"}.get(
            kind, "DOUBLE"
        )
    if pa.types.is_decimal(dtype):
        p, s = dtype.precision, dtype.scale
        return f"Decimal({p}, {s})" if kind == "clickhouse" else f"DECIMAL({p}, {s})"
    if pa.types.is_date(dtype):
        return {"clickhouse": "Date32", "sqlite": "TEXT"}.get(kind, "DATE")
    if pa.types.is_timestamp(dtype):
        return {
            "clickhouse": "DateTime64(6)",
            "mysql": "DATETIME(6)",
            "sqlite": "TEXT",
        }.get(kind, "TIMESTAMP")
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return {"clickhouse": "String", "postgres": "BYTEA", "mysql": "LONGBLOB"}.get(kind, "BLOB")
    return {
        "clickhouse": "String",
        "postgres": 'TEXT COLLATE "C"',
        "mysql": "LONGTEXT",
        "duckdb": "VARCHAR",
    }.get(kind, "TEXT")


def _plain(table: pa.Table) -> pa.Table:
    """`table` with every column of a type the writers do not map cast to text."""
    for i, f in enumerate(table.schema):
        if column_type("duckdb", f.type) in ("VARCHAR",) and not pa.types.is_string(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(pa.string()))
    return table


def _rows(table: pa.Table) -> Iterator[list[tuple[Any, ...]]]:
    for batch in table.to_batches(_BATCH):
        columns = [c.to_pylist() for c in batch.columns]
        yield list(zip(*columns, strict=True))


class _SqlWriter:
    """CREATE TABLE with mapped types, then batched parameterised INSERTs."""

    kind = "sqlite"
    placeholder = "?"

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def quote(self, name: str) -> str:
        return quote_identifier(name)

    def table_options(self) -> str:
        return ""

    def create(self, name: str, table: pa.Table, *, replace: bool) -> list[str]:
        types = [column_type(self.kind, f.type) for f in table.schema]
        cursor = self.conn.cursor()
        if replace:
            cursor.execute(f"DROP TABLE IF EXISTS {self.quote(name)}")
        columns = ", ".join(
            f"{self.quote(f.name)} {t}" for f, t in zip(table.schema, types, strict=True)
        )
        cursor.execute(f"CREATE TABLE {self.quote(name)} ({columns}){self.table_options()}")
        return types

    def insert(self, name: str, table: pa.Table) -> None:
        table = _plain(table)
        marks = ", ".join([self.placeholder] * table.num_columns)
        sql = f"INSERT INTO {self.quote(name)} VALUES ({marks})"
        cursor = self.conn.cursor()
        for rows in _rows(table):
            cursor.executemany(sql, rows)


class _MySQLWriter(_SqlWriter):
    kind = "mysql"
    placeholder = "%s"

    def quote(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def table_options(self) -> str:
        return f" DEFAULT CHARSET=utf8mb4 COLLATE={self.collation()}"

    def collation(self) -> str:
        """A binary collation without PAD SPACE, so `'Alton ' = 'Alton'` is false as in SQLite."""
        if not hasattr(self, "_collation"):
            cursor = self.conn.cursor()
            cursor.execute(
                "SELECT COLLATION_NAME FROM information_schema.COLLATIONS WHERE COLLATION_NAME"
                " IN ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin') ORDER BY COLLATION_NAME DESC"
            )
            row = cursor.fetchone()
            self._collation = str(row[0]) if row else "utf8mb4_bin"
        return self._collation


class _PostgresWriter(_SqlWriter):
    kind = "postgres"

    def insert(self, name: str, table: pa.Table) -> None:
        table = _plain(table)
        with (
            self.conn.cursor() as cursor,
            cursor.copy(f"COPY {self.quote(name)} FROM STDIN") as copy,
        ):
            for rows in _rows(table):
                for row in rows:
                    copy.write_row(row)


class _DuckDBWriter(_SqlWriter):
    kind = "duckdb"

    def insert(self, name: str, table: pa.Table) -> None:
        self.conn.register("querybench_load", _plain(table))
        try:
            self.conn.execute(f"INSERT INTO {self.quote(name)} SELECT * FROM querybench_load")
        finally:
            self.conn.unregister("querybench_load")


class _ChdbWriter(_SqlWriter):
    kind = "clickhouse"

    def quote(self, name: str) -> str:
        return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"

    def create(self, name: str, table: pa.Table, *, replace: bool) -> list[str]:
        types = [column_type(self.kind, f.type) for f in table.schema]
        if replace:
            self.conn.query(f"DROP TABLE IF EXISTS {self.quote(name)}")
        columns = ", ".join(
            f"{self.quote(f.name)} Nullable({t})" for f, t in zip(table.schema, types, strict=True)
        )
        self.conn.query(
            f"CREATE TABLE {self.quote(name)} ({columns}) ENGINE = MergeTree ORDER BY tuple()"
        )
        return types

    def insert(self, name: str, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        path = temporary_parquet(_plain(table))
        try:
            self.conn.query(f"INSERT INTO {self.quote(name)} SELECT * FROM file('{path}', Parquet)")
        finally:
            path.unlink(missing_ok=True)


@contextlib.contextmanager
def open_writer(target: str) -> Iterator[Writer]:
    """A writable connection to `target`, committed when the block ends without an error."""
    scheme, _, rest = target.partition("://")
    scheme = scheme.lower()
    spec = spec_for_scheme(scheme)
    name = None if spec is None else spec.name
    try:
        if name in ("sqlite", "duckdb", "chdb"):
            if not rest.startswith("/"):
                raise EngineError(f"{scheme}:// needs an absolute path (three slashes)")
            with _local_writer(str(name), Path(rest)) as writer:
                yield writer
        elif name == "postgres":
            with _postgres_writer(target) as writer:
                yield writer
        elif name == "mysql":
            with _mysql_writer(target) as writer:
                yield writer
        else:
            raise EngineUnavailable(f"cannot load into {scheme}:// targets")
    except EngineError:
        raise
    except Exception as exc:
        message = mask_secrets(str(exc), parse_server_url(target, scheme).password)
        raise EngineError(f"loading into {mask_secrets(target)} failed: {message}") from None


@contextlib.contextmanager
def _local_writer(scheme: str, path: Path) -> Iterator[Writer]:
    if scheme in ("sqlite", "duckdb") and (path.exists() or path.is_symlink()):
        # An existing target is written through by name: a FIFO there would hold the open.
        database_file(path, ENGINES[scheme].sidecars)
    if scheme == "sqlite":
        import sqlite3

        path.parent.mkdir(parents=True, exist_ok=True)
        sconn = sqlite3.connect(path)
        with sconn:
            yield _SqlWriter(sconn)
        sconn.close()
    elif scheme == "duckdb":
        import duckdb

        path.parent.mkdir(parents=True, exist_ok=True)
        with duckdb.connect(str(path)) as dconn:
            yield _DuckDBWriter(dconn)
    else:
        import chdb

        path.mkdir(parents=True, exist_ok=True)
        cconn = chdb.connect(f"file:{path}")  # type: ignore[no-untyped-call]
        try:
            yield _ChdbWriter(cconn)
        finally:
            cconn.close()


@contextlib.contextmanager
def _postgres_writer(target: str) -> Iterator[Writer]:
    import psycopg

    from querybench.engines.postgres import conninfo

    url = parse_server_url(target, "postgres")
    database = server_database(target, "postgres")
    admin_url = parse_server_url(target.replace(f"/{database}", "/postgres", 1), "postgres")
    with psycopg.connect(conninfo(admin_url), autocommit=True) as admin:
        exists = admin.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
        ).fetchone()
        if not exists:
            admin.execute(f"CREATE DATABASE {quote_identifier(database)}".encode())
    with psycopg.connect(conninfo(url)) as conn:  # commits when the block ends cleanly
        yield _PostgresWriter(conn)


@contextlib.contextmanager
def _mysql_writer(target: str) -> Iterator[Writer]:
    import pymysql

    from querybench.engines.mysql import connect_args, quote

    url = parse_server_url(target, "mysql")
    database = server_database(target, "mysql")
    conn = pymysql.connect(**connect_args(url, database=None, autocommit=False))
    try:
        with conn.cursor() as cursor:
            cursor.execute(
                f"CREATE DATABASE IF NOT EXISTS {quote(database)}"
                " DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
            )
        conn.select_db(database)
        yield _MySQLWriter(conn)
        conn.commit()
    finally:
        conn.close()
