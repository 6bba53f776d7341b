"""BIRD's paths come from one table (`layout.BIRD_PATHS`): every reader finds the same files, and
mini-dev's databases are its own, never BIRD dev's in silence."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

import querybench
from querybench.cli import app
from querybench.errors import DataError
from querybench.evaluation.bird.evaluate import BIRD_SEPARATOR
from querybench.tasks import load_tasks
from querybench.tasks.databases import task_database
from tests.conftest import as_new_user

QUESTION = {
    "question_id": 7,
    "db_id": "toy",
    "question": "How many?",
    "evidence": "",
    "SQL": "SELECT count(*) FROM t",
    "difficulty": "simple",
}


def _database(folder: Path, db: str = "toy") -> Path:
    path = folder / db / f"{db}.sqlite"
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
    conn.close()
    return path


def _questions(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mini_dev_sqlite.json"
    path.write_text(json.dumps([QUESTION]), encoding="utf-8")
    return path


def _gold_as_prediction(tmp_path: Path) -> Path:
    pred = tmp_path / "predict.json"
    pred.write_text(json.dumps({"0": QUESTION["SQL"] + BIRD_SEPARATOR + "toy"}), encoding="utf-8")
    return pred


def test_mini_dev_never_falls_back_to_dev_databases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # it used to score mini-dev on the flat BIRD folder's (dev's) databases without a word
    root = tmp_path / "data"
    _questions(root / "bird" / "mini_dev")
    _database(root / "bird")  # dev's, flat
    _database(root / "bird" / "dev_databases")  # dev's, where `data fetch bird` puts them
    as_new_user(monkeypatch, tmp_path, root)
    pred = _gold_as_prediction(tmp_path)
    with pytest.raises(DataError, match=r"no BIRD mini-dev databases.*data fetch bird-mini-dev"):
        querybench.evaluate("bird-mini-dev", pred)
    result = CliRunner().invoke(app, ["eval", "bird-mini-dev", "--predictions", str(pred)])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "bird/mini_dev/dev_databases nor bird/MINIDEV/dev_databases" in said
    assert "--db-dir" in said
    # naming dev's databases is a choice the mini-dev README allows for SQLite: it scores
    chosen = querybench.evaluate("bird-mini-dev", pred, db_dir=root / "bird" / "dev_databases")
    assert [r.score for r in chosen] == [1.0]


def test_the_official_minidev_folder_is_found_by_every_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the MINIDEV folder was known to `eval` alone: `load_tasks`, `data status` and `run`
    # (layout's task file and database places) did not look there
    root = tmp_path / "data"
    _questions(root / "bird" / "MINIDEV")
    database = _database(root / "bird" / "MINIDEV" / "dev_databases")
    as_new_user(monkeypatch, tmp_path, root)
    (task,) = load_tasks("bird-mini-dev")
    assert task_database(task) == database
    results = querybench.evaluate("bird-mini-dev", _gold_as_prediction(tmp_path))
    assert [(r.instance_id, r.score) for r in results] == [("7", 1.0)]
