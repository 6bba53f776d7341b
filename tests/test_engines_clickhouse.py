"""ClickHouse through chdb: the server conformance checks, plus what only ClickHouse has.

The clickhouse-connect path (a ClickHouse server) is not exercised: no server runs here.
"""

from __future__ import annotations

import pytest

from querybench.engines import connect
from querybench.errors import EngineError
from tests.server_conformance import *  # noqa: F403  (the shared tests run here)


@pytest.fixture
def kind() -> str:
    return "chdb"


@pytest.fixture
def endless() -> str:
    return "SELECT count() FROM numbers(1000000000000)"


@pytest.fixture
def hostile() -> list[str]:
    return [
        "SELECT * FROM file('/etc/hostname', 'LineAsString')",
        "SELECT * FROM url('http://127.0.0.1:1/x', 'CSV')",
        "INSERT INTO FUNCTION file('{elsewhere}/out.csv', 'CSV') SELECT 1",
        "SELECT 1 INTO OUTFILE '{elsewhere}/out.csv'",
        "SELECT 1 SETTINGS readonly = 0",
        "SELECT count() FROM numbers(10) SETTINGS max_execution_time = 0",
        "SET max_execution_time = 0",
        "SYSTEM DROP DNS CACHE",
        "OPTIMIZE TABLE singer FINAL",
        "TRUNCATE TABLE singer",
        "ALTER TABLE singer DELETE WHERE 1",
        "RENAME TABLE singer TO s2",
        "CREATE DATABASE other",
        "DETACH TABLE singer",
    ]


def test_types_are_clickhouse_types(engine) -> None:  # type: ignore[no-untyped-def]
    singer = next(t for t in engine.tables() if t.name == "singer")
    assert [c.type for c in singer.columns] == [
        "Nullable(Int64)", "Nullable(String)", "Nullable(Float64)", "Nullable(String)",
    ]  # fmt: skip


def test_arrow_result_without_python_values(engine) -> None:  # type: ignore[no-untyped-def]
    table = engine.execute_arrow("SELECT id FROM singer ORDER BY id")
    assert table.column("id").to_pylist() == [1, 2, 3]


def test_chdb_url_needs_an_absolute_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EngineError) as relative:
        connect("chdb://relative/dir")
    assert type(relative.value) is EngineError
    with pytest.raises(EngineError) as missing:
        connect(f"chdb://{tmp_path / 'missing'}")
    assert type(missing.value) is EngineError
