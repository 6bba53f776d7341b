"""The custom loader: a user's YAML or JSONL of questions over a database URL or file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from querybench.engines import connect
from querybench.errors import DataError
from querybench.tasks import load_tasks


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER, total REAL)")
        conn.execute("INSERT INTO orders VALUES (1, 9.5), (2, 20.0)")
    conn.close()
    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / "q1.csv").write_text("n\n2\n", encoding="utf-8")
    return path


YAML = """\
database: shop.sqlite
tasks:
  - id: q1
    question: How many orders are there?
    gold_sql: SELECT count(*) AS n FROM orders
    gold_csv: gold/q1.csv
    difficulty: easy
  - id: q2
    question: Revenue by region?
    database: postgresql://localhost/sales
    external_knowledge: Revenue excludes refunds.
    features: [multi_schema]
    extra: {owner: finance}
"""


def test_yaml_with_defaults(tmp_path: Path, shop: Path) -> None:
    (tmp_path / "questions.yaml").write_text(YAML, encoding="utf-8")
    q1, q2 = load_tasks("custom", path=tmp_path / "questions.yaml")
    assert (q1.instance_id, q1.engine, q1.db) == ("q1", "sqlite", f"sqlite://{shop.resolve()}")
    assert q1.gold.sql == "SELECT count(*) AS n FROM orders" and q1.difficulty == "easy"
    assert q1.gold.result_files == (str((tmp_path / "gold" / "q1.csv").resolve()),)
    assert connect(q1.db).execute(q1.gold.sql).rows == [(2,)]
    assert (q2.engine, q2.db) == ("postgres", "postgresql://localhost/sales")
    assert q2.features == ("multi_schema", "documentation") and q2.extra == {"owner": "finance"}
    assert all(t.benchmark == "custom" for t in (q1, q2))


def test_jsonl(tmp_path: Path, shop: Path) -> None:
    lines = [
        {"instance_id": "a", "question": "Orders?", "database": str(shop), "gold_sql": "SELECT 1"},
        {"id": 7, "question": "Duck?", "database": "facts.duckdb"},
        {"id": "w", "question": "Warehouse?", "database": "snowflake://acct/db"},
    ]
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    a, b, c = load_tasks("custom", path=path)
    assert a.engine == "sqlite" and a.gold.sql == "SELECT 1"
    assert (b.instance_id, b.engine, b.db) == (
        "7",
        "duckdb",
        f"duckdb://{tmp_path.resolve()}/facts.duckdb",
    )
    assert c.engine == "snowflake"


@pytest.mark.parametrize(
    ("content", "suffix", "expected"),
    [
        ('{"id": "a", "question": "q"}\n', "jsonl", "q.jsonl:1: field 'database' is missing"),
        (
            '{"id": "a"}\n{"id": "b", "question": "q", "database": "x.db"}\n',
            "jsonl",
            "q.jsonl:1: field 'question' is missing",
        ),
        (
            '{"id": "a", "question": "q", "database": "x.db", "gold_sq": "S"}\n',
            "jsonl",
            "q.jsonl:1: unknown field 'gold_sq'",
        ),
        (
            '{"id": "a", "question": "q", "database": "x.db"}\n{oops\n',
            "jsonl",
            "q.jsonl:2: not valid JSON",
        ),
        (
            '{"id": "a", "question": "q", "database": "x.csv"}\n',
            "jsonl",
            "q.jsonl:1: field 'database' 'x.csv': cannot tell the engine",
        ),
        (
            '{"id": "a", "question": "q", "database": "ftp://h/x"}\n',
            "jsonl",
            "q.jsonl:1: field 'database' has an unknown scheme 'ftp'",
        ),
        (
            '{"id": "a", "question": "q", "database": "x.db", "engine": "oracle"}\n',
            "jsonl",
            "field 'engine' 'oracle' is not one of",
        ),
        (
            '{"id": "a", "question": "q", "database": "x.db", "features": ["fast"]}\n',
            "jsonl",
            "field 'features' must be a list of",
        ),
        (
            '{"id": "a", "question": "q", "database": "x.db", "gold_csv": "nope.csv"}\n',
            "jsonl",
            "field 'gold_csv': file",
        ),
        (
            "- id: a\n  question: q\n  database: x.db\n- id: a\n  question: r\n  database: x.db\n",
            "yaml",
            "q.yaml:4: field 'id' 'a' repeats the task at",
        ),
        (
            "database: x.db\ntasks:\n  - id: a\n    question: q\n\n  - id: b\n    engine: sqlite\n",
            "yaml",
            "q.yaml:6: field 'question' is missing",
        ),
        ("tasks:\n  - id: a\n    question: [unclosed\n", "yaml", "q.yaml:4: not valid YAML"),
        ("databse: x.db\ntasks: []\n", "yaml", "q.yaml:1: unknown top-level field 'databse'"),
    ],
)
def test_malformed_custom_files(tmp_path: Path, content: str, suffix: str, expected: str) -> None:
    path = tmp_path / f"q.{suffix}"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_tasks("custom", path=path)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_custom_needs_a_path() -> None:
    with pytest.raises(DataError, match="needs a task file"):
        load_tasks("custom")
