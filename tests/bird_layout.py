"""BIRD-layout folders built from the Spider 1.0 databases, as the official archives unpack.

Three dev questions on concert_singer, each with an answer the scripted model gives: the gold
in a ```sql block (reward 1), prose without a block (error 1), the gold in a bare ``` block
(error 1: not a ```sql block).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import require_data
from tests.openai_server import Reply

DB = "concert_singer"
QUESTIONS = [
    ("How many singers do we have?", "", "SELECT count(*) FROM singer"),
    (
        "What are the names of the singers older than 30?",
        "older than 30 refers to Age > 30",
        "SELECT Name FROM singer WHERE Age > 30",
    ),
    ("List the stadium names.", "", "SELECT Name FROM stadium"),
]
# question -> the scripted reply
ANSWERS = {
    QUESTIONS[0][0]: f"Here it is:\n```sql\n{QUESTIONS[0][2]}\n```",
    QUESTIONS[1][0]: "There are a few of them, I think.",
    QUESTIONS[2][0]: f"```\n{QUESTIONS[2][2]}\n```",
}
EXPECTED = {  # task name -> (execution_match, error)
    "0": (1.0, 0.0),
    "1": (0.0, 1.0),
    "2": (0.0, 1.0),
}


def spider_database() -> Path:
    return require_data("spider1", DB, f"{DB}.sqlite")


def bird_dev(root: Path, *, nested: bool = True) -> Path:
    """A dev folder: `dev_20240627/dev.json` with `dev_databases/dev_databases/<db>/` (nested,
    as dev.zip unpacks) or `dev.json` with `dev_databases/<db>/` (flat); the folder to pass."""
    folder = root / "dev_20240627" if nested else root
    entries = [
        {"question_id": i, "db_id": DB, "question": q, "evidence": e, "SQL": sql,
         "difficulty": "simple"}
        for i, (q, e, sql) in enumerate(QUESTIONS)
    ]  # fmt: skip
    _write(folder, "dev", entries, nested=nested)
    return folder if nested else root


def bird_train(root: Path) -> Path:
    """A train folder as train.zip unpacks: `train/train.json` (official four fields, no
    question_id) and `train/train_databases/train_databases/<db>/`; question 1's gold fails."""
    entries: list[dict[str, Any]] = [
        {"db_id": DB, "question": q, "evidence": e, "SQL": sql} for q, e, sql in QUESTIONS
    ]
    entries[1]["SQL"] = "SELECT no_such_column FROM singer"
    _write(root / "train", "train", entries, nested=True)
    return root


def _write(folder: Path, split: str, entries: list[dict[str, Any]], *, nested: bool) -> None:
    databases = folder / f"{split}_databases"
    if nested:
        databases = databases / f"{split}_databases"
    (databases / DB).mkdir(parents=True)
    shutil.copyfile(spider_database(), databases / DB / f"{DB}.sqlite")
    (folder / f"{split}.json").write_text(json.dumps(entries, indent=2))


def respond(body: dict[str, Any]) -> Reply:
    """The scripted model: the reply for the question in the prompt."""
    prompt = str(body["messages"][-1]["content"])
    for question, answer in ANSWERS.items():
        if question in prompt:
            return Reply(answer)
    return Reply("no idea")
