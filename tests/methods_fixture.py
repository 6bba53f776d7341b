"""A tiny Spider 1.0-shaped data root and helpers shared by the method tests (tests/test_methods_*).

Every method is exercised through the real loopback server (`tests.openai_server`): requests
are kept by the server, so the prompts compared with the golden files are the ones sent.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from querybench.models import OpenAICompatibleModel, RetryPolicy
from querybench.tasks import load_tasks
from querybench.tasks.model import Task
from tests.openai_server import ScriptedServer

GOLDEN = Path(__file__).parent / "golden"
QUESTIONS = [
    ("How many items are there?", "SELECT count(*) FROM items"),
    ("List the names of items cheaper than 5.", "SELECT name FROM items WHERE price < 5"),
    (
        "Which city has the shop that sold the most expensive item?",
        "SELECT s.city FROM sales AS x JOIN shops AS s ON x.shop_id = s.id JOIN items AS i "
        "ON x.item_id = i.id ORDER BY i.price DESC LIMIT 1",
    ),
]
POOL = [
    {"question": "How many singers are there?", "sql": "SELECT count(*) FROM singer"},
    {
        "question": "List the names of singers older than 30.",
        "sql": "SELECT name FROM singer WHERE age > 30",
    },
    {"question": "List the names of songs.", "sql": "SELECT title FROM song"},
    {
        "question": "List the names of dogs whose owner lives in 'Paris'.",
        "sql": "SELECT d.name FROM dogs AS d JOIN owners AS o ON d.owner_id = o.id "
        "WHERE o.city = 'Paris'",
    },
]


def make_data(root: Path) -> Path:
    """spider1/dev.json and spider1/shop/shop.sqlite under `root`, plus pool.jsonl."""
    db = root / "spider1" / "shop" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL);"
        "INSERT INTO items VALUES (1, 'pen', 3), (2, 'book', 12.5), (3, 'cup', 4);"
        "CREATE TABLE shops (id INTEGER PRIMARY KEY, city TEXT);"
        "INSERT INTO shops VALUES (1, 'Lyon'), (2, 'Oslo');"
        "CREATE TABLE sales (shop_id INTEGER REFERENCES shops(id),"
        " item_id INTEGER REFERENCES items(id));"
        "INSERT INTO sales VALUES (1, 1), (2, 2), (1, 3);"
    )
    con.commit()
    con.close()
    entries = [{"db_id": "shop", "query": q, "question": text} for text, q in QUESTIONS]
    (root / "spider1" / "dev.json").write_text(json.dumps(entries), encoding="utf-8")
    lines = "\n".join(json.dumps(e) for e in POOL)
    (root / "pool.jsonl").write_text(lines + "\n", encoding="utf-8")
    return root


def task(root: Path, index: int) -> Task:
    return load_tasks("spider1", data_dir=root)[index]


def model(server: ScriptedServer) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(
        "scripted", base_url=server.url, timeout=5.0, retry=RetryPolicy(max_retries=1, base=0.01)
    )


def sent_prompts(server: ScriptedServer, stages: list[dict[str, Any]]) -> str:
    """The requests the server received, each headed by its stage name, as golden text."""
    parts = []
    for stage, body in zip(stages, server.requests, strict=True):
        parts.append(f"##### stage: {stage['stage']}")
        parts += [f"=== {m['role']}\n{m['content']}" for m in body["messages"]]
    return "\n".join(parts) + "\n"


def check_golden(name: str, text: str) -> None:
    """Compare with tests/golden/<name>; QUERYBENCH_UPDATE_GOLDEN=1 rewrites the file."""
    path = GOLDEN / name
    if os.environ.get("QUERYBENCH_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
