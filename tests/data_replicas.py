"""Small replicas of the official archives, laid out as the real ones are.

Each builder returns `{official file name: bytes}`: the nested `dev_databases.zip` inside
BIRD's `dev.zip`, `__MACOSX/` folders and `._*` AppleDouble stubs (macOS zips carry them), flat
`<db>.sqlite` files in `local_sqlite.zip`, DBT start and gold databases that share their names,
the GitHub archive's top folder `Spider2-<commit>/` and its zip comment (the commit). Every gold
query is a real query over the replica's databases, so oracle runs can score every task.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import duckdb

from querybench.data.releases import SPIDER2_AGENTIC_COMMIT, SPIDER2_COMMIT

APPLEDOUBLE = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        "  # what a ._ stub starts with

SHOP = (
    "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL);"
    "INSERT INTO items VALUES (1, 'pen', 1.5), (2, 'ink', 3.0), (3, 'pad', 2.0);"
)
TOYS = (
    "CREATE TABLE toys (id INTEGER PRIMARY KEY, name TEXT, kind TEXT);"
    "INSERT INTO toys VALUES (1, 'ball', 'outdoor'), (2, 'kite', 'outdoor'), (3, 'doll', 'home');"
)
# mini-dev's copy of `shop` differs from dev's (as five of the real eleven do)
MINI_SHOP = SHOP + "CREATE TABLE mini_only (x INTEGER); INSERT INTO mini_only VALUES (7), (8);"


def sqlite_file(script: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "db.sqlite"
        con = sqlite3.connect(path)
        con.executescript(script)
        con.commit()
        con.close()
        return path.read_bytes()


def duckdb_file(*statements: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "db.duckdb"
        with duckdb.connect(str(path)) as con:
            for statement in statements:
                con.execute(statement)
        return path.read_bytes()


def zip_bytes(members: dict[str, bytes | str], comment: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in members.items():
            zf.writestr(name, content)
        zf.comment = comment.encode()
    return buffer.getvalue()


def result_csv(script: str, sql: str) -> str:
    """The gold CSV of `sql` over a database built by `script` (header + rows, as pandas)."""
    con = sqlite3.connect(":memory:")
    con.executescript(script)
    cursor = con.execute(sql)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([d[0] for d in cursor.description])
    writer.writerows(cursor.fetchall())
    return out.getvalue()


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


# --- Spider 1.0 ------------------------------------------------------------------------------

SPIDER1_TASKS = [
    ("shop", "How many items are there?", "SELECT count(*) FROM items"),
    ("toys", "Name the outdoor toys.", "SELECT name FROM toys WHERE kind = 'outdoor'"),
    ("shop", "What is the dearest item?", "SELECT name FROM items ORDER BY price DESC LIMIT 1"),
]


def spider1() -> dict[str, bytes]:
    dev = [{"db_id": db, "question": q, "query": sql} for db, q, sql in SPIDER1_TASKS]
    gold = "".join(f"{sql}\t{db}\n" for db, _q, sql in SPIDER1_TASKS)
    members: dict[str, bytes | str] = {
        "spider_data/dev.json": json.dumps(dev, indent=2),
        "spider_data/tables.json": "[]",
        "spider_data/dev_gold.sql": gold,
        "spider_data/database/shop/shop.sqlite": sqlite_file(SHOP),
        "spider_data/database/shop/._shop.sqlite": APPLEDOUBLE,
        "spider_data/database/toys/toys.sqlite": sqlite_file(TOYS),
        "__MACOSX/spider_data/._dev.json": APPLEDOUBLE,
        "__MACOSX/spider_data/database/toys/._toys.sqlite": APPLEDOUBLE,
    }
    return {"spider_data.zip": zip_bytes(members)}


# --- BIRD ------------------------------------------------------------------------------------

BIRD_DEV = [
    (0, "shop", "Items dearer than 2?", "SELECT name FROM items WHERE price > 2"),
    (1, "toys", "How many home toys?", "SELECT count(*) FROM toys WHERE kind = 'home'"),
    (2, "shop", "Cheapest price?", "SELECT min(price) FROM items"),
]
BIRD_REVISED = [  # the 2025-11-06 revision: same ids and databases, revised gold
    (0, "shop", "List the items dearer than 2.", "SELECT name FROM items WHERE price > 2.0"),
    (1, "toys", "Count the toys of kind home.", "SELECT count(id) FROM toys WHERE kind = 'home'"),
]
BIRD_MINI = [(1471, "shop", "How many mini rows?", "SELECT count(*) FROM mini_only")]
BIRD_TRAIN = [
    ("toys", "Toys for outdoors?", "SELECT name FROM toys WHERE kind = 'outdoor'"),
    ("toys", "How many toys?", "SELECT count(*) FROM toys"),
]


def _bird_entries(rows: list[tuple[int, str, str, str]]) -> list[dict[str, Any]]:
    return [
        {
            "question_id": qid,
            "db_id": db,
            "question": q,
            "evidence": "",
            "SQL": sql,
            "difficulty": "simple",
        }
        for qid, db, q, sql in rows
    ]


def bird_dev() -> dict[str, bytes]:
    inner = zip_bytes(
        {
            "dev_databases/shop/shop.sqlite": sqlite_file(SHOP),
            "dev_databases/toys/toys.sqlite": sqlite_file(TOYS),
            "__MACOSX/dev_databases/shop/._shop.sqlite": APPLEDOUBLE,
            "dev_databases/toys/._toys.sqlite": APPLEDOUBLE,
        }
    )
    members: dict[str, bytes | str] = {
        "dev_20240627/dev.json": json.dumps(_bird_entries(BIRD_DEV), indent=2),
        "dev_20240627/dev_tables.json": '[{"db_id": "shop", "from": "dev"}]',
        "dev_20240627/dev_databases.zip": inner,
        "__MACOSX/dev_20240627/._dev_databases.zip": APPLEDOUBLE,
    }
    return {"dev.zip": zip_bytes(members)}


def bird_revised() -> dict[str, bytes]:
    """The dataset hub's export: JSON lines."""
    text = _jsonl(_bird_entries(BIRD_REVISED))
    return {"dev_20251106-00000-of-00001.json": text.encode()}


def bird_minidev() -> dict[str, bytes]:
    mini = _bird_entries(BIRD_MINI)
    members: dict[str, bytes | str] = {
        "minidev/MINIDEV/mini_dev_sqlite.json": json.dumps(mini),
        "minidev/MINIDEV/mini_dev_mysql.json": json.dumps(mini),
        "minidev/MINIDEV/mini_dev_postgresql.json": json.dumps(mini),
        "minidev/MINIDEV/dev_tables.json": '[{"db_id": "shop", "from": "mini-dev"}]',
        "minidev/MINIDEV/dev_databases/shop/shop.sqlite": sqlite_file(MINI_SHOP),
        "minidev/MINIDEV/dev_databases/shop/._shop.sqlite": APPLEDOUBLE,
        "minidev/MINIDEV_postgresql/BIRD_dev.sql": "-- dump\n",
        "minidev/MINIDEV_mysql/BIRD_dev.sql": "-- dump\n",
        "__MACOSX/minidev/MINIDEV/._mini_dev_sqlite.json": APPLEDOUBLE,
    }
    return {"minidev.zip": zip_bytes(members)}


def bird_train() -> dict[str, bytes]:
    entries = [{"db_id": db, "question": q, "evidence": "", "SQL": s} for db, q, s in BIRD_TRAIN]
    inner = zip_bytes({"train_databases/toys/toys.sqlite": sqlite_file(TOYS)})
    members: dict[str, bytes | str] = {
        "train/train.json": json.dumps(entries, indent=2),
        "train/train_tables.json": "[]",
        "train/train_databases.zip": inner,
        "__MACOSX/train/._train.json": APPLEDOUBLE,
    }
    return {"train.zip": zip_bytes(members)}


# --- Spider 2.0 ------------------------------------------------------------------------------

LITE_TASKS = [
    ("local001", "shop", "SELECT name, price FROM items ORDER BY id"),
    ("local002", "toys", "SELECT count(*) AS n FROM toys"),
    ("local003", "shop", "SELECT max(price) AS top FROM items"),
]
LITE_DATABASES = {"shop": SHOP, "toys": TOYS}
DBT_IDS = ("shop001", "shop002")


def spider2_repo() -> dict[str, bytes]:
    """Spider2-<commit>.zip: lite (local tasks), snow (one task), DBT (two projects)."""
    top = f"Spider2-{SPIDER2_COMMIT}"
    lite, snow, dbt = f"{top}/spider2-lite", f"{top}/spider2-snow", f"{top}/spider2-dbt"
    members: dict[str, bytes | str] = {
        f"{top}/README.md": "# Spider 2.0\n",
        f"{top}/methods/spider-agent-lite/run.py": "print('not data')\n",
    }
    tasks, specs = [], []
    for iid, db, sql in LITE_TASKS:
        tasks.append(
            {"instance_id": iid, "db": db, "question": f"q {iid}", "external_knowledge": None}
        )
        specs.append({"instance_id": iid, "condition_cols": [], "ignore_order": True, "toks": 12})
        members[f"{lite}/evaluation_suite/gold/sql/{iid}.sql"] = sql
        members[f"{lite}/evaluation_suite/gold/exec_result/{iid}.csv"] = result_csv(
            LITE_DATABASES[db], sql
        )
    for db, script in LITE_DATABASES.items():  # the schema metadata the repository ships
        members.update(_metadata(f"{lite}/resource/databases/sqlite/{db}", script))
    # one BigQuery task, runnable offline once `data emulate` built its database
    bq_sql = "SELECT count(*) AS n FROM `bigquery-public-data.shopcloud.items`"
    tasks.append(
        {"instance_id": "bq001", "db": "shopcloud", "question": "q", "external_knowledge": None}
    )
    specs.append({"instance_id": "bq001", "condition_cols": [], "ignore_order": True, "toks": 30})
    members[f"{lite}/evaluation_suite/gold/sql/bq001.sql"] = bq_sql
    members[f"{lite}/evaluation_suite/gold/exec_result/bq001.csv"] = "n\n2\n"
    dataset = f"{lite}/resource/databases/bigquery/shopcloud/bigquery-public-data.shopcloud"
    members[f"{dataset}/items.json"] = json.dumps(
        {
            "table_name": "items",
            "table_fullname": "bigquery-public-data.shopcloud.items",
            "column_names": ["name", "price"],
            "column_types": ["STRING", "FLOAT64"],
            "nested_column_names": ["name", "price"],
            "nested_column_types": ["STRING", "FLOAT64"],
            "description": ["", ""],
            "sample_rows": [{"name": "pen", "price": 1.5}, {"name": "ink", "price": 3.0}],
        }
    )
    members[f"{dataset}/DDL.csv"] = (
        'table_name,ddl\nitems,"CREATE TABLE `bigquery-public-data.shopcloud.items` '
        '(name STRING, price FLOAT64)"\n'
    )
    members[f"{lite}/spider2-lite.jsonl"] = _jsonl(tasks)
    members[f"{lite}/evaluation_suite/gold/spider2lite_eval.jsonl"] = _jsonl(specs)
    members[f"{snow}/spider2-snow.jsonl"] = _jsonl(
        [{"instance_id": "sf001", "instruction": "q", "db_id": "SHOP", "external_knowledge": None}]
    )
    members[f"{snow}/evaluation_suite/gold/spider2snow_eval.jsonl"] = _jsonl(
        [{"instance_id": "sf001", "condition_cols": [], "ignore_order": True}]
    )
    members[f"{snow}/evaluation_suite/gold/exec_result/sf001.csv"] = "n\n3\n"
    dbt_tasks, evals = [], []
    for iid in DBT_IDS:
        dbt_tasks.append({"instance_id": iid, "instruction": "Build totals.", "type": "DBT"})
        params = {"gold": "shop.duckdb", "condition_tabs": ["totals"], "condition_cols": [[0]]}
        evals.append(
            {"instance_id": iid, "evaluation": {"func": "duckdb_match", "parameters": params}}
        )
        members[f"{dbt}/examples/{iid}/dbt_project.yml"] = f"name: {iid}\nprofile: shop\n"
        members[f"{dbt}/examples/{iid}/profiles.yml"] = (
            "shop:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n"
            "      path: './shop.duckdb'\n"
        )
    members[f"{dbt}/examples/spider2-dbt.jsonl"] = _jsonl(dbt_tasks)
    members[f"{dbt}/evaluation_suite/gold/spider2_eval.jsonl"] = _jsonl(evals)
    members[f"{dbt}/setup.py"] = "# the official setup script\n"
    return {f"Spider2-{SPIDER2_COMMIT}.zip": zip_bytes(members, comment=SPIDER2_COMMIT)}


def _metadata(folder: str, script: str) -> dict[str, bytes | str]:
    """`DDL.csv` and one `<table>.json` per table, as spider2-lite/resource/databases has them."""
    con = sqlite3.connect(":memory:")
    con.executescript(script)
    out: dict[str, bytes | str] = {}
    ddl = io.StringIO()
    writer = csv.writer(ddl, lineterminator="\n")
    writer.writerow(["table_name", "DDL"])
    for name, sql in con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"):
        writer.writerow([name, sql])
        columns = [(r[1], r[2]) for r in con.execute(f"PRAGMA table_info({name})")]
        cursor = con.execute(f"SELECT * FROM {name} LIMIT 3")
        rows = [dict(zip([c for c, _ in columns], row, strict=True)) for row in cursor]
        out[f"{folder}/{name}.json"] = json.dumps(
            {
                "table_name": name,
                "table_fullname": name,
                "column_names": [c for c, _ in columns],
                "column_types": [t for _, t in columns],
                "description": [""] * len(columns),
                "sample_rows": rows,
            }
        )
    out[f"{folder}/DDL.csv"] = ddl.getvalue()
    return out


def spider2_agentic_repo() -> dict[str, bytes]:
    top = f"Spider2-{SPIDER2_AGENTIC_COMMIT}/spider2"
    members: dict[str, bytes | str] = {
        f"{top}/examples/spider2.jsonl": _jsonl(
            [{"instance_id": "local001", "instruction": "q", "type": "Local"}]
        ),
        f"{top}/examples/local001/README.md": "Answer in result.csv\n",
        f"{top}/evaluation_suite/gold/spider2_eval.jsonl": _jsonl(
            [{"instance_id": "local001", "evaluation": {"func": "table_match", "parameters": {}}}]
        ),
        f"{top}/resource/databases/local/local-map.jsonl": '{"local001": "shop"}\n',
        f"Spider2-{SPIDER2_AGENTIC_COMMIT}/spider2-lite/spider2-lite.jsonl": "not this one\n",
    }
    return {f"Spider2-{SPIDER2_AGENTIC_COMMIT}.zip": zip_bytes(members, SPIDER2_AGENTIC_COMMIT)}


def local_sqlite() -> dict[str, bytes]:
    members: dict[str, bytes | str] = {
        f"{db}.sqlite": sqlite_file(s) for db, s in LITE_DATABASES.items()
    }
    members["__MACOSX/._shop.sqlite"] = APPLEDOUBLE
    members["._chinook.sqlite"] = APPLEDOUBLE
    return {"local_sqlite.zip": zip_bytes(members)}


def dbt_start() -> dict[str, bytes]:
    start = duckdb_file("CREATE TABLE orders AS SELECT * FROM (VALUES (1, 10), (2, 5)) t(id, v)")
    members: dict[str, bytes | str] = {}
    for iid in DBT_IDS:  # every task's start database is called shop.duckdb, some deep down
        inner = "" if iid == "shop001" else "nested/deeper/"
        members[f"{iid}/{inner}shop.duckdb"] = start
        members[f"__MACOSX/{iid}/._shop.duckdb"] = APPLEDOUBLE
    return {"DBT_start_db.zip": zip_bytes(members)}


GOLD_TOTAL = 15


def dbt_gold() -> dict[str, bytes]:
    gold = duckdb_file(
        "CREATE TABLE orders AS SELECT * FROM (VALUES (1, 10), (2, 5)) t(id, v)",
        f"CREATE TABLE totals AS SELECT {GOLD_TOTAL} AS total",
    )
    members: dict[str, bytes | str] = {f"{iid}/shop.duckdb": gold for iid in DBT_IDS}
    members["__MACOSX/shop001/._shop.duckdb"] = APPLEDOUBLE
    return {"dbt_gold.zip": zip_bytes(members)}


def every_archive() -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for build in (
        spider1,
        bird_dev,
        bird_revised,
        bird_minidev,
        bird_train,
        spider2_repo,
        spider2_agentic_repo,
        local_sqlite,
        dbt_start,
        dbt_gold,
    ):
        out.update(build())
    return out
