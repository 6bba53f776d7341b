"""BIRD as the `bird-sql` environment reads it: the official folder layouts and the prompt.

A split's folder holds its question file and databases as the official archives unpack:

    dev_20240627/dev.json + dev_databases/dev_databases/<db_id>/<db_id>.sqlite   (dev.zip)
    dev.json + dev_databases/<db_id>/<db_id>.sqlite                              (flat)
    train/train.json + train_databases/[train_databases/]<db_id>/<db_id>.sqlite  (train.zip)

The folder is `data_dir`, else `$BIRD_DIR` (dev) / `$BIRD_TRAIN_DIR` (train), else querybench's
data folder `bird/`. No verifiers import: any trainer can read the same questions and prompts.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
from pathlib import Path
from typing import Literal

from querybench.data.roots import find_root
from querybench.engines.registry import ENGINES
from querybench.errors import DataError
from querybench.file_digests import refusal, regular_database
from querybench.tasks.bird import load_bird
from querybench.tasks.model import Task

Split = Literal["dev", "train"]
SPLITS: tuple[Split, ...] = ("dev", "train")
FOLDER_ENV: dict[Split, str] = {"dev": "BIRD_DIR", "train": "BIRD_TRAIN_DIR"}
# Where a split's question file may sit under its folder, the official unpacking first.
# Not `layout.BIRD_PATHS`, on purpose: that table is relative to a data root (`bird/...`, each
# root searched in turn), this one to the one split folder a trainer names (`data_dir`,
# `$BIRD_DIR`), with the databases looked for beside the question file (`database_candidates`),
# so that an archive unpacked anywhere reads as it is, dev.zip's `dev_20240627/` included,
# which the data root's table does not list; the databases' nested folder first, as the
# archives unpack it.
# Deriving one from the other would change what either finds (tests/test_envs_bird_sql.py
# holds these layouts).
_QUESTION_FILES: dict[Split, tuple[str, ...]] = {
    "dev": ("dev.json", "dev_20240627/dev.json", "dev/dev.json"),
    "train": ("train.json", "train/train.json"),
}

# The whole prompt: the user message, nothing else (no system prompt, no sampled rows).
PROMPT = """\
Database schema:

{schema}

{evidence}Question: {question}

Answer with one SQLite query in a ```sql block."""
EVIDENCE = "Evidence: {evidence}\n\n"


def split_folder(split: Split, data_dir: str | Path | None = None) -> Path:
    """The folder `split` is read from: `data_dir`, its environment variable, or the data root."""
    if split not in SPLITS:
        raise DataError(f"unknown BIRD split {split!r}; choose one of {', '.join(SPLITS)}")
    if data_dir is not None:
        return Path(data_dir).expanduser()
    variable = os.environ.get(FOLDER_ENV[split], "").strip()
    if variable:
        return Path(variable).expanduser()
    return find_root("bird") / "bird"


def question_file(split: Split, folder: Path) -> Path:
    """The split's question file under `folder`; a `DataError` lists where it looked."""
    candidates = [folder / name for name in _QUESTION_FILES[split]]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise DataError(
        f"no BIRD {split} question file: looked for {looked}; pass "
        f"--env.taskset.data-dir <folder> or set ${FOLDER_ENV[split]}"
    )


def load_questions(split: Split, questions: Path) -> list[Task]:
    """The questions of `questions` in file order (ids: `question_id`, else the position);
    a file with none is a `DataError`."""
    tasks = load_bird("bird" if split == "dev" else "bird-train", questions.parent, path=questions)
    if not tasks:
        raise DataError(f"{questions}: no BIRD {split} questions in this file")
    return tasks


def database_path(split: Split, questions: Path, db_id: str) -> Path:
    """`<db_id>.sqlite` beside `questions` (`database_candidates`); a `DataError` names every
    path when it is in none."""
    candidates = database_candidates(split, questions.parent, db_id)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise DataError(f"BIRD {split} database {db_id!r} not found: looked for {looked}")


def database_candidates(split: str, folder: Path, db_id: str) -> list[Path]:
    """Where a split's database may be under `folder`: either official layout, or `<db_id>/`
    as querybench's data folder keeps BIRD."""
    databases = folder / f"{split}_databases"
    return [
        databases / f"{split}_databases" / db_id / f"{db_id}.sqlite",
        databases / db_id / f"{db_id}.sqlite",
        folder / db_id / f"{db_id}.sqlite",
    ]


def prompt(database: Path, question: str, evidence: str | None) -> str:
    """The model's prompt: the database's CREATE TABLE statements, the evidence, the question."""
    hint = (evidence or "").strip()
    return PROMPT.format(
        schema="\n\n".join(create_statements(database)),
        evidence=EVIDENCE.format(evidence=hint) if hint else "",
        question=question.strip(),
    )


@functools.lru_cache(maxsize=256)
def create_statements(database: Path) -> tuple[str, ...]:
    """The database's own CREATE TABLE statements, in creation order (as BIRD's baselines
    show the schema); SQLite's internal tables left out. Opened read-only, once it is a
    regular file (`regular_database`: a FIFO would hold the open for ever)."""
    try:
        regular_database(database, ENGINES["sqlite"].sidecars)
    except OSError as exc:
        raise DataError(f"{database}: cannot read the schema: {refusal(exc, database)}") from exc
    try:
        uri = f"{database.resolve().as_uri()}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            rows = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL"
                " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"
            ).fetchall()
    except sqlite3.Error as exc:
        raise DataError(f"{database}: cannot read the schema: {exc}") from exc
    return tuple(str(sql).strip() for (sql,) in rows)
