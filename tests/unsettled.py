"""Databases whose state is not their file's bytes: rows committed to a SQLite `-wal` or a
DuckDB `.wal` the file does not hold yet, and a hot `-journal` left by a writer that died
mid-transaction. Each leaves the main file's size and times as they were."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb


def _stat(path: Path) -> tuple[int, int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def to_wal(database: Path) -> None:
    """Put a SQLite database in WAL mode, every row in the file (the `-wal` gone)."""
    with contextlib.closing(sqlite3.connect(database, isolation_level=None)) as conn:
        assert conn.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    assert not Path(f"{database}-wal").exists()


@contextlib.contextmanager
def held_in_wal(database: Path, *statements: str) -> Iterator[None]:
    """`statements` committed to the `-wal` of a WAL-mode SQLite database, kept there (no
    checkpoint) while the block runs; the writer's close then checkpoints them."""
    before = _stat(database)
    conn = sqlite3.connect(database, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_autocheckpoint=0")
        for statement in statements:
            conn.execute(statement)
        assert _stat(database) == before  # the file is as it was: only the -wal moved
        assert Path(f"{database}-wal").stat().st_size > 0
        yield
    finally:
        conn.close()


def hot_journal(database: Path, statement: str) -> None:
    """A writer killed mid-transaction after its cache spilled into the file: the `-journal`
    holds the pages a reader must roll back."""
    code = (
        "import os, sqlite3, sys\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "conn.execute('PRAGMA cache_size=1')\n"
        "conn.execute('BEGIN')\n"
        "for _ in range(200): conn.execute(sys.argv[2])\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(database), statement], check=True)
    assert Path(f"{database}-journal").stat().st_size > 0


def duckdb_rows_in_wal(database: Path, *statements: str) -> None:
    """`statements` committed to a DuckDB database's `.wal` and left there (no checkpoint on
    close): a read-only reader replays them, the file does not hold them."""
    conn = duckdb.connect(str(database))
    try:
        conn.execute("CHECKPOINT")
        before = _stat(database)
        conn.execute("PRAGMA disable_checkpoint_on_shutdown")
        conn.execute("SET wal_autocheckpoint = '1TB'")
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()
    assert _stat(database) == before
    assert os.path.getsize(f"{database}.wal") > 0
