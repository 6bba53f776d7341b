"""Snowflake offline (fakesnow on a read-only emulation file), and Spider 2.0 sql mode scoring a
BigQuery and a Snowflake task end to end on the offline engines."""

from __future__ import annotations

import datetime
import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fakesnow")

from querybench.engines import connect
from querybench.engines.snowflake import SnowflakeCredentials, SnowflakeLocalEngine
from querybench.engines.spider2_metadata_load import build_emulation
from querybench.errors import (
    EngineError,
    EngineUnavailable,
    QueryRefused,
    QueryTimeout,
)
from querybench.evaluation.spider2.evaluate import evaluate_spider2
from tests.test_engines_bigquery import write_metadata
from tests.test_engines_conformance import ENDLESS, HOSTILE


def write_snowflake_metadata(root: Path) -> Path:
    """A Snowflake database folder in Spider 2.0's layout (one schema, two tables)."""
    schema = root / "SHOP" / "SALES"
    schema.mkdir(parents=True)
    orders = {
        "table_name": "ORDERS",
        "column_names": ["ORDER_ID", "CUSTOMER", "AMOUNT", "PAID", "CREATED", "ATTRS"],
        "column_types": ["NUMBER", "TEXT", "FLOAT", "BOOLEAN", "TIMESTAMP_NTZ", "VARIANT"],
        "sample_rows": [
            {
                "ORDER_ID": 1,
                "CUSTOMER": "ann",
                "AMOUNT": 10.5,
                "PAID": True,
                "CREATED": 1609459200000000,
                "ATTRS": '{\n  "tags": ["a", "b"]\n}',
            },
            {
                "ORDER_ID": 2,
                "CUSTOMER": "bob",
                "AMOUNT": 4.0,
                "PAID": False,
                "CREATED": 1609545600000000,
                "ATTRS": '{"tags": []}',
            },
            {
                "ORDER_ID": 3,
                "CUSTOMER": "ann",
                "AMOUNT": None,
                "PAID": True,
                "CREATED": None,
                "ATTRS": None,
            },
        ],
    }
    (schema / "ORDERS.json").write_text(json.dumps(orders))
    ddl = (
        'table_name,ddl\nNOTES,"create or replace TABLE NOTES (\n'
        '\tID NUMBER(38,0),\n\tBODY VARCHAR\n);"\n'
    )
    (schema / "DDL.csv").write_text(ddl)
    return root / "SHOP"


@pytest.fixture(scope="module")
def emulation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sf")
    out = root / "db" / "SHOP.duckdb"
    out.parent.mkdir()
    report = build_emulation(write_snowflake_metadata(root / "meta"), out, "snowflake")
    assert (report.database, report.tables, report.rows, report.skipped) == ("SHOP", 2, 3, ())
    return out


@pytest.fixture
def engine(emulation: Path) -> Iterator[SnowflakeLocalEngine]:
    eng = connect(f"snowflake+local://{emulation}")
    assert isinstance(eng, SnowflakeLocalEngine)
    yield eng
    eng.close()


QUERIES = [
    (
        'SELECT "CUSTOMER", SUM("AMOUNT") FROM "SHOP"."SALES"."ORDERS" GROUP BY 1 ORDER BY 1',
        [("ann", 10.5), ("bob", 4.0)],
    ),
    ("SELECT IFF(paid, 'yes', 'no') FROM orders ORDER BY order_id", [("yes",), ("no",), ("yes",)]),
    (
        "SELECT created::DATE FROM SHOP.SALES.ORDERS WHERE order_id = 2",
        [(datetime.date(2021, 1, 2),)],
    ),
    ("SELECT COUNT(*) FROM SHOP.SALES.ORDERS o, LATERAL FLATTEN(input => o.attrs:tags) f", [(2,)]),
    ("SELECT attrs:tags[0]::string FROM SHOP.SALES.ORDERS WHERE order_id = 1", [("a",)]),
    ("SELECT COUNT(*) FROM SHOP.SALES.NOTES", [(0,)]),
    ("SELECT COUNT(*) FROM SHOP.INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'SALES'", [(2,)]),
]


@pytest.mark.parametrize(("sql", "expected"), QUERIES)
def test_snowflake_sql_runs_on_fakesnow(
    engine: SnowflakeLocalEngine, sql: str, expected: list[tuple[Any, ...]]
) -> None:
    assert [
        tuple(
            float(v) if hasattr(v, "as_integer_ratio") and not isinstance(v, int | bool) else v
            for v in row
        )
        for row in engine.execute(sql).rows
    ] == expected


def test_tables_lists_the_schema(engine: SnowflakeLocalEngine) -> None:
    tables = {(t.schema, t.name): t for t in engine.tables()}
    assert set(tables) == {("SALES", "ORDERS"), ("SALES", "NOTES")}
    assert len(engine.sample_rows("SALES.ORDERS", 2).rows) == 2


HOSTILE_SF = [
    *[s for s in HOSTILE["duckdb"] if "{elsewhere}" not in s],
    "CREATE OR REPLACE TABLE SHOP.SALES.ORDERS AS SELECT 1 AS x",
    "MERGE INTO orders USING orders s ON orders.order_id = s.order_id WHEN MATCHED THEN DELETE",
    "USE DATABASE other",
    "SELECT * FROM read_csv('/etc/passwd')",
]


@pytest.mark.parametrize("sql", HOSTILE_SF)
def test_hostile_statements_are_refused(
    engine: SnowflakeLocalEngine, emulation: Path, sql: str
) -> None:
    before = hashlib.sha256(emulation.read_bytes()).hexdigest()
    with pytest.raises(QueryRefused):
        engine.execute(sql.replace("singer", "orders"))
    assert engine.execute("SELECT COUNT(*) FROM orders").rows == [(3,)]
    assert hashlib.sha256(emulation.read_bytes()).hexdigest() == before


def test_timeout_stops_the_query(engine: SnowflakeLocalEngine) -> None:
    start = time.monotonic()
    with pytest.raises(QueryTimeout):
        engine.execute(ENDLESS, timeout=0.5)
    assert time.monotonic() - start < 3.0
    assert engine.execute("SELECT 1").rows == [(1,)]


def test_syntax_errors_are_exec_errors(engine: SnowflakeLocalEngine) -> None:
    with pytest.raises(EngineError) as info:
        engine.execute("SELECT FROM WHERE")
    assert type(info.value) is EngineError and info.value.code == "exec_error"


def test_credentials_come_from_env_and_hide_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("ACCOUNT", "USER", "PASSWORD", "PRIVATE_KEY_FILE"):
        monkeypatch.delenv(f"SNOWFLAKE_{key}", raising=False)
    with pytest.raises(EngineUnavailable):
        SnowflakeCredentials.load()
    monkeypatch.setenv("SNOWFLAKE_ACCOUNT", "acct")
    monkeypatch.setenv("SNOWFLAKE_USER", "me")
    monkeypatch.setenv("SNOWFLAKE_PASSWORD", "s3cret")
    credentials = SnowflakeCredentials.load()
    assert credentials.password == "s3cret"
    assert "s3cret" not in repr(credentials)


def test_sql_mode_scores_a_bigquery_and_a_snowflake_task_offline(tmp_path: Path) -> None:
    """Spider 2.0-lite sql mode: `--db-dir` holds `<db>.duckdb` emulations built from metadata."""
    db_dir = tmp_path / "dbs"
    db_dir.mkdir()
    build_emulation(write_metadata(tmp_path / "bq"), db_dir / "shop.duckdb", "bigquery")
    build_emulation(write_snowflake_metadata(tmp_path / "sf"), db_dir / "SHOP.duckdb", "snowflake")
    predictions = {
        "bq900": "SELECT _TABLE_SUFFIX AS day, COUNT(*) AS n "
        "FROM `my-project.analytics.events_*` GROUP BY day ORDER BY day",
        "ga900": "```sql\nSELECT geo.country AS country "
        "FROM `my-project.analytics.events_20210101` ORDER BY event_timestamp\n```",
        "sf900": 'SELECT "CUSTOMER" AS customer, COUNT(*) AS n FROM SHOP.SALES.ORDERS '
        "GROUP BY 1 ORDER BY 1",
        "sf901": "SELECT COUNT(*) AS n FROM SHOP.SALES.ORDERS",  # gold says 4: scores 0
    }
    gold_csv = {
        "bq900": "day,n\n20210101,2\n20210102,1\n",
        "ga900": "country\nUS\nFR\n",
        "sf900": "CUSTOMER,N\nann,2\nbob,1\n",
        "sf901": "N\n4\n",
    }
    databases = {"bq900": "shop", "ga900": "shop", "sf900": "SHOP", "sf901": "SHOP"}
    gold, pred = tmp_path / "gold", tmp_path / "pred"
    (gold / "exec_result").mkdir(parents=True)
    pred.mkdir()
    for iid, sql in predictions.items():
        (pred / f"{iid}.sql").write_text(sql)
        (gold / "exec_result" / f"{iid}.csv").write_text(gold_csv[iid])
    (gold / "spider2lite_eval.jsonl").write_text(
        "\n".join(
            json.dumps({"instance_id": i, "condition_cols": [], "ignore_order": False})
            for i in predictions
        )
    )
    tasks = tmp_path / "spider2-lite.jsonl"
    tasks.write_text(
        "\n".join(json.dumps({"instance_id": i, "db": d}) for i, d in databases.items())
    )
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in db_dir.iterdir()}

    results = {
        r.instance_id: r
        for r in evaluate_spider2(
            pred,
            benchmark="spider2-lite",
            gold_dir=gold,
            mode="sql",
            db_dir=db_dir,
            tasks_file=tasks,
            timeout=30,
        )
    }

    assert {i: (r.score, r.error) for i, r in results.items()} == {
        "bq900": (1.0, None),
        "ga900": (1.0, None),
        "sf900": (1.0, None),
        "sf901": (0.0, "wrong_result"),
    }
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in db_dir.iterdir()} == before
