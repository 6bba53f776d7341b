"""The BIRD train skip list: the command that finds failing golds, and the loader using it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from querybench.envs import skiplist
from querybench.envs.tasks import load_sql_tasks


def bird_train(root: Path) -> Path:
    """A BIRD-layout train folder: three questions on one database, two golds broken."""
    db = root / "train_databases" / "shop" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE item (name TEXT, price REAL); INSERT INTO item VALUES ('a', 1);"
    )
    conn.commit()
    conn.close()
    golds = ["SELECT name FROM item", "SELECT name FROM missing_table", "SELEC name FROM item"]
    questions = [
        {"question_id": i, "db_id": "shop", "question": f"q{i}?", "evidence": "", "SQL": sql}
        for i, sql in enumerate(golds)
    ]
    questions.append({"question_id": 9, "db_id": "absent", "question": "?", "SQL": "SELECT 1"})
    (root / "train.json").write_text(json.dumps(questions))
    return root


def test_the_command_lists_failing_golds_and_the_loader_skips_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = bird_train(tmp_path / "train")
    out = tmp_path / "skip.txt"
    assert skiplist.main(["--data", str(data), "--output", str(out), "--workers", "2"]) == 0
    assert "2 of 3 gold queries failed" in capsys.readouterr().out
    text = out.read_text()
    assert text.startswith("# BIRD train") and "python -m querybench.envs.skiplist" in text
    assert skiplist.read_skip_list(out) == {"1", "2"} and "missing_table" in text
    assert len(load_sql_tasks("bird", split="train", data_dir=data, budget=500)) == 3
    monkeypatch.setattr(skiplist, "SKIP_FILE", out)
    [task] = load_sql_tasks("bird", split="train", data_dir=data, budget=500)
    assert task.task.instance_id == "0"


def test_the_shipped_list_is_empty_with_instructions() -> None:
    text = skiplist.SKIP_FILE.read_text()
    assert "python -m querybench.envs.skiplist --data" in text
    assert skiplist.read_skip_list() == frozenset()


def test_no_train_data_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "train.json").write_text("[]")
    with pytest.raises(SystemExit):
        skiplist.main(["--data", str(tmp_path), "--output", str(tmp_path / "s.txt")])
