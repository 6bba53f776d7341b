"""Context building on small schemas made in code: nesting, families, budgets, relevance."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from querybench.context import (
    ColumnInfo,
    DatabaseSchema,
    Document,
    LiveSchema,
    Spider2Metadata,
    TableInfo,
    assemble,
    count_tokens,
)
from querybench.context.documents import dialect_functions, select_document, select_functions
from querybench.context.families import group_families
from querybench.context.nested import flatten_type, variant_paths
from querybench.context.rank import query_weights
from querybench.context.render import FULL, KEY_COLUMNS, NO_DESCRIPTIONS, NO_SAMPLES
from querybench.engines import connect
from querybench.errors import DataError


def _table(name: str, columns: list[str], schema: str = "proj.ds", **kw: object) -> TableInfo:
    cols = tuple(ColumnInfo(c, "STRING", f"the {c.replace('_', ' ')} of the row") for c in columns)
    rows = tuple({c: f"{c}-value-{i}" for c in columns} for i in range(3))
    return TableInfo(f"{schema}.{name}", name, cols, schema, sample_rows=rows, **kw)  # type: ignore[arg-type]


def _warehouse(n: int = 40) -> DatabaseSchema:
    tables = [_table(f"events_2021{d:04d}", ["event_name", "user_id"]) for d in (101, 102, 103)]
    tables += [_table(f"topic{i}_table", [f"topic{i}_col{j}" for j in range(15)]) for i in range(n)]
    tables.append(_table("hurricanes", ["storm_name", "wind_speed", "season"]))
    return DatabaseSchema("wh", "bigquery", tuple(tables))


def test_struct_and_array_types_flatten_to_paths() -> None:
    t = "ARRAY<STRUCT<key STRING, value STRUCT<int_value INT64, string_value STRING>>>"
    assert [(c.name, c.type) for c in flatten_type("event_params", t)] == [
        ("event_params.key", "STRING"),
        ("event_params.value", "STRUCT<int_value INT64, string_value STRING>"),
        ("event_params.value.int_value", "INT64"),
        ("event_params.value.string_value", "STRING"),
    ]
    assert flatten_type("x", "INT64") == []


def test_variant_keys_come_from_sampled_json() -> None:
    paths = variant_paths("repo", ['{"id": 1, "owner": {"login": "a"}}', "not json", None])
    assert [(c.name, c.type) for c in paths] == [
        ("repo:id", "NUMBER"),
        ("repo:owner", "OBJECT"),
        ("repo:owner.login", "TEXT"),
    ]


def test_sharded_tables_collapse_into_one_family() -> None:
    units = group_families(_warehouse(2).tables)
    family = units[0].family
    assert family is not None
    assert family.pattern == "proj.ds.events_*"
    assert family.suffixes == ("20210101", "20210102", "20210103")
    assert units[0].covers == tuple(f"proj.ds.events_2021010{d}" for d in (1, 2, 3))
    assert len(units) == 1 + 2 + 1


def test_different_schemas_with_a_shared_prefix_stay_apart() -> None:
    a = _table("report_2019", ["a", "b", "c"])
    b = _table("report_2020", ["x", "y", "z"])
    assert all(u.family is None for u in group_families((a, b)))


def test_family_entry_explains_the_bigquery_wildcard() -> None:
    ctx = assemble(_warehouse(0), "events per user")
    assert "`proj.ds.events_*`" in ctx.prompt and "_TABLE_SUFFIX BETWEEN '20210101'" in ctx.prompt
    assert ctx.families[0].members == 3
    assert "proj.ds.events_20210102" in ctx.tables


@pytest.mark.parametrize("budget", [120, 300, 700, 1500, 4000, 20000])
def test_tokens_never_exceed_the_budget(budget: int) -> None:
    doc = Document(
        "notes.md", "\n\n".join(f"Paragraph {i} about hurricane seasons." for i in range(300))
    )
    ctx = assemble(_warehouse(), "strongest hurricane wind speed per season", budget, doc)
    assert ctx.tokens <= budget
    assert ctx.tokens == count_tokens(ctx.prompt)


def test_the_relevant_table_survives_a_tight_budget() -> None:
    ctx = assemble(_warehouse(), "Which storm had the highest wind speed each season?", 400)
    assert "proj.ds.hurricanes" in ctx.tables
    assert ctx.prompt.index("### proj.ds.hurricanes") < ctx.prompt.index("### proj.ds.topic")


def test_degrades_samples_then_descriptions_then_columns() -> None:
    schema = _warehouse(10)
    question = "hurricane wind speed"
    full = assemble(schema, question).tokens
    levels_seen = []
    for budget in (full + 50, int(full * 0.8), int(full * 0.45), int(full * 0.25)):
        ctx = assemble(schema, question, budget)
        levels_seen.append(sorted(set(ctx.levels.values())))
        assert ctx.tokens <= budget
    assert levels_seen[0] == [FULL]
    assert NO_SAMPLES in levels_seen[1] and NO_DESCRIPTIONS not in levels_seen[1]
    assert max(levels_seen[3]) >= NO_DESCRIPTIONS
    narrow = assemble(schema, question, int(full * 0.12))
    assert KEY_COLUMNS in narrow.levels.values()
    assert "more columns not shown" in narrow.prompt
    # The most relevant entry is the last to lose detail.
    assert narrow.levels["proj.ds.hurricanes"] == min(narrow.levels.values())


def test_document_in_full_or_its_relevant_chunks() -> None:
    text = "\n\n".join([f"# Part {i}\nGeneric words about tables number {i}." for i in range(60)])
    text += "\n\n# Revenue\nNet revenue is gross revenue minus refunds."
    weights = query_weights("net revenue after refunds")
    whole, complete = select_document(text, weights, 100_000)
    assert complete and whole == text
    part, complete = select_document(text, weights, 80)
    assert not complete and "Net revenue is gross revenue minus refunds." in part
    assert count_tokens(part) <= 80


def test_dialect_functions_are_ranked_by_the_question() -> None:
    docs = dialect_functions("sqlite", None)
    names = [f.name for f in select_functions(docs, query_weights("difference in days"), 3)]
    assert "JULIANDAY" in names
    snow = dialect_functions("snowflake", None)
    assert select_functions(snow, query_weights("flatten the array"), 1)[0].name == "FLATTEN"


def _write_db(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "DDL.csv").write_text(
        "table_name,description,DDL\n"
        'ORDERS,Orders placed,"create TABLE ORDERS (\n'
        '\t""ID"" NUMBER(38,0),\n\t""TOTAL"" FLOAT\n);"\n'
        'SHIPMENTS,,"create TABLE SHIPMENTS (ORDER_ID NUMBER, SHIPPED DATE, '
        'FOREIGN KEY (ORDER_ID) REFERENCES ORDERS(ID));"\n',
        encoding="utf-8",
    )
    (folder / "ORDERS.json").write_text(
        json.dumps(
            {
                "table_name": "ORDERS",
                "table_fullname": "SHOP.SALES.ORDERS",
                "column_names": "['ID', 'TOTAL', 'META']",  # Python-literal text, as released
                "column_types": ["NUMBER", "FLOAT", "VARIANT"],
                "description": [None, "order total", None],
                "sample_rows": [{"ID": 1, "TOTAL": 2.5, "META": '{"channel": "web"}'}],
            }
        ),
        encoding="utf-8",
    )


def test_metadata_files_with_ddl_only_tables(tmp_path: Path) -> None:
    _write_db(tmp_path / "SHOP" / "SALES")
    schema = Spider2Metadata(tmp_path / "SHOP", "snowflake").load()
    by_name = {t.name: t for t in schema.tables}
    assert set(by_name) == {"SHOP.SALES.ORDERS", "SHOP.SALES.SHIPMENTS"}
    orders = by_name["SHOP.SALES.ORDERS"]
    assert [c.name for c in orders.columns] == ["ID", "TOTAL", "META", "META:channel"]
    assert orders.description == "Orders placed"
    shipments = by_name["SHOP.SALES.SHIPMENTS"]
    assert [c.name for c in shipments.columns] == ["ORDER_ID", "SHIPPED"]
    assert shipments.foreign_keys[0].ref_table == "ORDERS"
    prompt = assemble(schema, "orders shipped").prompt
    assert "Foreign keys: ORDER_ID → ORDERS.ID" in prompt
    assert "| 1 | 2.5 |" in prompt


def test_malformed_metadata_is_one_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "BAD" / "S"
    _write_db(folder)
    (folder / "ORDERS.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match=r"ORDERS\.json: malformed table metadata JSON"):
        Spider2Metadata(tmp_path / "BAD", "snowflake").load()
    (folder / "ORDERS.json").write_text('{"column_names": 3}', encoding="utf-8")
    with pytest.raises(DataError, match="'column_names' should be a list"):
        Spider2Metadata(tmp_path / "BAD", "sqlite").load()
    with pytest.raises(DataError, match="database metadata folder not found"):
        Spider2Metadata(tmp_path / "MISSING", "sqlite").load()


def test_live_sqlite_schema_with_foreign_keys(tmp_path: Path) -> None:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as con:
        con.executescript(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
            "CREATE TABLE orders (id INTEGER, customer_id INTEGER REFERENCES customers(id));"
            "INSERT INTO customers VALUES (1, 'Ada');"
        )
    engine = connect(path)
    try:
        ctx = assemble(LiveSchema(engine, "shop").load(), "orders per customer")
    finally:
        engine.close()
    assert set(ctx.tables) == {"customers", "orders"}
    assert "Foreign keys: customer_id → customers.id" in ctx.prompt
    assert "| 1 | Ada |" in ctx.prompt
