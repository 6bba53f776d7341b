"""The BIRD train skip list as the `querybench-sql` taskset's train split uses it (bird-sql's
own use is in test_envs_bird_sql.py)."""

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
    (root / "train.json").write_text(json.dumps(questions))
    return root


def test_the_querybench_sql_train_split_builds_and_skips_the_failing_golds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("QUERYBENCH_SQL_WORKERS", "2")
    data = bird_train(tmp_path / "train")
    [task] = load_sql_tasks("bird", split="train", data_dir=data, budget=500)
    assert task.task.instance_id == "0"
    assert "2 of 3 BIRD train gold queries fail" in capsys.readouterr().err
    beside, _ = skiplist.skip_list_paths(data / "train.json")
    text = beside.read_text()
    assert skiplist.read_skip_list(beside) == {"1", "2"} and "missing_table" in text
    assert "python -m bird_sql.skiplist --data" in text


@pytest.mark.data
def test_the_querybench_sql_train_split_reads_bird_train_dir_and_the_nested_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests import bird_layout

    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("QUERYBENCH_SQL_WORKERS", "1")
    monkeypatch.delenv("BIRD_DIR", raising=False)
    monkeypatch.setenv("BIRD_TRAIN_DIR", str(bird_layout.bird_train(tmp_path) / "train"))
    tasks = load_sql_tasks("bird", split="train", budget=500)
    assert [t.task.instance_id for t in tasks] == ["0", "2"]  # positions; 1's gold fails
