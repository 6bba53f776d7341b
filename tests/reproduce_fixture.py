"""Small scored fixtures the manifest and `verify` tests share: a Spider 1.0 database, gold and
predictions built in code, scored by `eval spider1 --output`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner, Result

from querybench.cli import app

runner = CliRunner()

GOLD = [
    ("SELECT count(*) FROM singer", "concert"),
    ("SELECT name FROM singer ORDER BY age", "concert"),
    ("SELECT max(age) FROM singer", "concert"),
]
PREDICTIONS = [
    "SELECT count(*) FROM singer",
    "SELECT name FROM singer ORDER BY age",
    "SELECT min(age) FROM singer",  # wrong
]


def spider1_fixture(root: Path) -> dict[str, Path]:
    """A database folder, gold.sql and pred.txt under `root`."""
    db = root / "database" / "concert" / "concert.sqlite"
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE singer (name TEXT, age INTEGER)")
        conn.executemany("INSERT INTO singer VALUES (?, ?)", [("a", 30), ("b", 40), ("c", 25)])
    conn.close()
    gold = root / "gold.sql"
    gold.write_text("".join(f"{sql}\t{db_id}\n" for sql, db_id in GOLD), encoding="utf-8")
    pred = root / "pred.txt"
    pred.write_text("".join(f"{sql}\n" for sql in PREDICTIONS), encoding="utf-8")
    return {"db": db, "db_dir": db.parent.parent, "gold": gold, "pred": pred}


def eval_spider1(files: dict[str, Path], output: Path, *, timeout: float = 30.0) -> Result:
    return runner.invoke(
        app,
        ["eval", "spider1", "--gold", str(files["gold"]), "--predictions", str(files["pred"]),
         "--db-dir", str(files["db_dir"]), "--output", str(output),
         "--timeout", str(timeout)],
    )  # fmt: skip


def read_json(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data
