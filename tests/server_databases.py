"""Throw-away databases on the local servers (and chdb directories) for the engine tests.

Each test database gets a unique name, is loaded from the conformance suite's SQLite file
through `engines.load`, and is dropped afterwards. Without a server the tests skip with the
reason, except under CI=true, where they fail.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from querybench.engines.load import load

URLS = {
    "postgres": "postgresql://postgres@127.0.0.1:5432/{name}",
    "mysql": "mysql://root@127.0.0.1:3306/{name}",
}


def skip_or_fail(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def require_server(kind: str) -> None:
    try:
        if kind == "postgres":
            import psycopg

            psycopg.connect(
                "host=127.0.0.1 port=5432 user=postgres dbname=postgres", connect_timeout=3
            ).close()
        elif kind == "mysql":
            import pymysql

            pymysql.connect(host="127.0.0.1", port=3306, user="root", connect_timeout=3).close()
        elif kind == "chdb":
            import chdb  # noqa: F401
    except Exception as exc:  # ImportError or a connection error: both mean "not here"
        skip_or_fail(f"{kind} is not available here: {exc} (run tests/services.sh)")


@contextmanager
def server_database(kind: str, source: Path, tmp: Path) -> Iterator[str]:
    """The URL of a fresh database holding `source`'s tables, dropped afterwards."""
    require_server(kind)
    name = f"qb_test_{uuid.uuid4().hex[:12]}"
    url = f"chdb://{tmp / name}" if kind == "chdb" else URLS[kind].format(name=name)
    load(url, source)
    try:
        yield url
    finally:
        drop(kind, name)


def drop(kind: str, name: str) -> None:
    if kind == "postgres":
        import psycopg

        with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())
    elif kind == "mysql":
        import pymysql

        with pymysql.connect(host="127.0.0.1", user="root") as c, c.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")


def checksum(kind: str, url: str) -> str:
    """A digest of every table's name, columns and rows, read over a separate connection."""
    digest = hashlib.sha256()
    if kind == "postgres":
        import psycopg

        from querybench.engines.postgres import conninfo
        from querybench.engines.url import parse_server_url

        with psycopg.connect(conninfo(parse_server_url(url, "postgres"))) as conn:
            tables = conn.execute(
                "SELECT table_schema, table_name FROM information_schema.tables"
                " WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
                " ORDER BY 1, 2"
            ).fetchall()
            for schema, table in tables:
                digest.update(f"{schema}.{table}".encode())
                rows = conn.execute(f'SELECT * FROM "{schema}"."{table}"'.encode()).fetchall()
                digest.update(repr(sorted(map(repr, rows))).encode())
            digest.update(
                repr(conn.execute("SHOW default_transaction_read_only").fetchall()).encode()
            )
    elif kind == "mysql":
        import pymysql

        from querybench.engines.mysql import connect_args
        from querybench.engines.url import parse_server_url

        with (
            pymysql.connect(**connect_args(parse_server_url(url, "mysql"))) as conn,
            conn.cursor() as cur,
        ):
            cur.execute("SHOW TABLES")
            for (table,) in sorted(cur.fetchall()):
                cur.execute(f"CHECKSUM TABLE `{table}` EXTENDED")
                digest.update(repr(cur.fetchall()).encode())
    else:
        path = Path(url.removeprefix("chdb://"))
        for file in sorted(p for p in path.rglob("*") if p.is_file() and "tmp" not in p.parts):
            digest.update(str(file.relative_to(path)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()
