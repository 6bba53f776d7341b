"""DuckDB specifics: locked configuration, schemas, and the Arrow fast path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from querybench.engines.duckdb import DuckDBEngine
from querybench.errors import EngineError, QueryRefused, QueryTimeout, ResultTooLarge
from tests.test_engines_conformance import ENDLESS, build_database


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = build_database("duckdb", tmp_path / "db")
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE SCHEMA sales")
        conn.execute("CREATE TABLE sales.orders (id INTEGER, amount DECIMAL(10, 2))")
        conn.execute("INSERT INTO sales.orders VALUES (1, 9.99), (2, 0.01)")
    return path


@pytest.fixture
def engine(database: Path) -> Iterator[DuckDBEngine]:
    with DuckDBEngine(database, memory_limit="512MB") as eng:
        yield eng


def test_the_configuration_is_locked_down(engine: DuckDBEngine) -> None:
    settings = engine.execute(
        "SELECT current_setting('enable_external_access'), current_setting('temp_directory'),"
        " current_setting('lock_configuration'), current_setting('autoload_known_extensions')"
    )
    assert settings.rows == [(False, "", True, False)]


def test_python_variables_are_not_readable(engine: DuckDBEngine) -> None:
    secret = pa.table({"token": ["hunter2"]})  # DuckDB may scan a caller's Python objects
    assert secret.num_rows == 1
    with pytest.raises(EngineError, match="secret") as info:
        engine.execute("SELECT * FROM secret")
    assert type(info.value) is EngineError


def test_tables_in_other_schemas(engine: DuckDBEngine) -> None:
    orders = next(t for t in engine.tables() if t.name == "orders")
    assert orders.schema == "sales"
    assert [(c.name, c.type) for c in orders.columns] == [
        ("id", "INTEGER"),
        ("amount", "DECIMAL(10,2)"),
    ]
    assert len(engine.sample_rows("sales.orders").rows) == 2


def test_execute_arrow(engine: DuckDBEngine) -> None:
    table = engine.execute_arrow("SELECT id, name, score, photo FROM singer ORDER BY id")
    assert table.column_names == ["id", "name", "score", "photo"]
    # The database's own types, not ones inferred from Python values (id stays INTEGER).
    assert table.schema.field("id").type == pa.int32()
    assert table.schema.field("score").type == pa.float64()
    rows = engine.execute("SELECT id, name, score, photo FROM singer ORDER BY id").rows
    assert [tuple(r.values()) for r in table.to_pylist()] == rows


def test_execute_arrow_limits(engine: DuckDBEngine) -> None:
    assert engine.execute_arrow("SELECT * FROM range(1000000)", max_rows=1_000_000).num_rows == (
        1_000_000
    )
    with pytest.raises(ResultTooLarge):
        engine.execute_arrow("SELECT * FROM range(1000001)", max_rows=1_000_000)
    with pytest.raises(QueryTimeout):
        engine.execute_arrow(ENDLESS, timeout=0.5)
    with pytest.raises(QueryRefused):
        engine.execute_arrow("SELECT * FROM read_csv('/etc/passwd')")
    with pytest.raises(QueryRefused):
        engine.execute_arrow("DELETE FROM singer")
    assert engine.execute_arrow("SELECT 1 AS x").num_rows == 1


def test_a_timeout_also_stops_a_query_while_its_rows_stream(engine: DuckDBEngine) -> None:
    with pytest.raises(QueryTimeout):
        engine.execute("SELECT * FROM range(100000000000)", timeout=0.5)
    assert engine.execute("SELECT 1").rows == [(1,)]


def test_engines_on_one_file_share_its_instance(database: Path) -> None:
    with (
        DuckDBEngine(database, memory_limit="512MB") as first,
        DuckDBEngine(database, memory_limit="512MB") as second,
    ):
        assert first.execute("SELECT count(*) FROM singer").rows == [(3,)]
        assert second.execute("SELECT count(*) FROM singer").rows == [(3,)]
        with pytest.raises(EngineError, match="different configuration"):
            DuckDBEngine(database, memory_limit="1GB")


def test_frames_fetched_in_chunks_are_fetchdfs_frames(tmp_path: Path) -> None:
    # NULLs in one chunk only widen that column's dtype as a whole fetchdf widens it.
    query = (
        "SELECT i, CASE WHEN i = 5000 THEN NULL ELSE i END AS ni, i % 2 = 0 AS b,"
        " CASE WHEN i = 5000 THEN NULL ELSE i % 2 = 0 END AS nb, 'x' || i AS s,"
        " CASE WHEN i = 9000 THEN NULL ELSE 'y' END AS ns, i::DOUBLE AS d,"
        " (i / 3)::DECIMAL(10, 2) AS dec, DATE '2020-01-01' + i::INT AS dt,"
        " TIMESTAMP '2020-01-01' + INTERVAL (i) SECOND AS ts, [i, i + 1] AS l, {'a': i} AS st,"
        " CASE WHEN i = 300000 THEN NULL ELSE (i % 100)::TINYINT END AS nt"
        " FROM range(300001) t(i)"
    )
    path = tmp_path / "f.duckdb"
    duckdb.connect(str(path)).close()
    whole = duckdb.connect(str(path), read_only=True).execute(query).fetchdf()
    with DuckDBEngine(path) as engine:
        (frame,) = engine.execute_frames([query])
    assert not isinstance(frame, EngineError)
    assert list(frame.dtypes) == list(whole.dtypes)
    assert frame.equals(whole)
