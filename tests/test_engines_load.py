"""`engines.load`: the column types a SQLite file's values get, and text compared as SQLite does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest

from querybench.engines import connect
from querybench.engines.load import read_sqlite
from tests.server_databases import server_database

COLUMNS = [
    # (declared type, stored values, Arrow type the column loads as) — one line per case.
    ("INTEGER", [1, 2, None], pa.int64()),
    ("INTEGER", [1, 2.5, None], pa.float64()),
    ("INTEGER", [1, "null", None], pa.string()),  # 'null' stayed text in SQLite: all text
    ("TEXT", ["1", "2", None], pa.string()),  # numbers stored as text stay text, as in SQLite
    ("REAL", [None, None], pa.float64()),  # empty: the declared type's affinity
    ("VARCHAR(20)", [None], pa.string()),
]  # fmt: skip


@pytest.mark.parametrize(("declared", "values", "arrow_type"), COLUMNS)
def test_column_type_follows_stored_values(
    tmp_path: Path, declared: str, values: list[object], arrow_type: pa.DataType
) -> None:
    path = tmp_path / "one.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE t (c {declared})")
        conn.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
    conn.close()
    [(_, table)] = list(read_sqlite(path))
    assert table.schema.field("c").type == arrow_type
    as_text = pa.types.is_string(arrow_type)
    assert table.column("c").to_pylist() == [
        str(v) if as_text and v is not None else v for v in values
    ]


@pytest.fixture(scope="module")
def padded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("padded") / "padded.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE airports (city TEXT)")
        conn.executemany("INSERT INTO airports VALUES (?)", [("Alton ",), ("Aberdeen",)])
    conn.close()
    return path


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_trailing_spaces_count_in_comparisons(kind: str, padded: Path, tmp_path: Path) -> None:
    # SQLite's BINARY collation has no PAD SPACE; MariaDB's utf8mb4_bin does.
    with server_database(kind, padded, tmp_path) as url:
        engine = connect(url)
        try:
            count = "SELECT count(*) FROM airports WHERE city = 'Alton'"
            assert engine.execute(count).rows[0][0] == 0
        finally:
            engine.close()
