"""BIRD: dev (1,534 questions), its 2025-11-06 revision, mini-dev (500) and train; SQLite.

Entries are `{question_id, db_id, question, evidence, SQL, difficulty}`; the instance id is the
`question_id` (as the official prediction JSON keys it), or the entry's position in the file
when it has none (the official train.json has only db_id, question, evidence and SQL), the
difficulty BIRD's own label (simple / moderate / challenging) and the evidence the task's
external knowledge.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from querybench.benchmarks import BenchmarkSpec
from querybench.data.layout import BIRD_DIFFICULTIES, BIRD_PATHS, task_file_candidates
from querybench.data.roots import data_root, data_roots, find_data
from querybench.engines.registry import EngineKind
from querybench.errors import DataError
from querybench.file_digests import open_regular
from querybench.tasks.input_files import (
    optional_str,
    read_json_array,
    read_jsonl,
    required_name,
    required_str,
    unique_ids,
)
from querybench.tasks.model import GoldRef, Task
from querybench.tasks.sql_functions import uses_dialect_functions

DIFFICULTIES = BIRD_DIFFICULTIES


def bird_file(benchmark: str, bird_dir: Path) -> Path:
    """The split's question file under `bird_dir` (candidates from `layout.TASK_FILES`)."""
    names = [c.removeprefix("bird/") for c in task_file_candidates(benchmark)]
    candidates = [bird_dir / name for name in names]
    return next((p for p in candidates if p.is_file()), candidates[0])


def mini_dev_file(dialect: str) -> Path:
    """The mini-dev questions for `dialect` (sqlite, mysql, postgresql) in the data roots, at
    the first of `layout.BIRD_PATHS`'s places that holds them (else the first place)."""
    names = BIRD_PATHS["bird-mini-dev"].question_files(dialect)
    return find_data(*names) or data_root() / names[0]


def mini_dev_dir() -> Path:
    """The folder of mini-dev's own `<db_id>/<db_id>.sqlite` in the data roots. None there is a
    `DataError` naming where it looked: it never falls back to BIRD dev's databases."""
    folders = BIRD_PATHS["bird-mini-dev"].databases
    found = find_data(*folders)
    if found is None:
        roots = ", ".join(str(root) for root in data_roots())
        raise DataError(
            f"no BIRD mini-dev databases: neither {' nor '.join(folders)} is in {roots}; "
            "fetch them with `querybench data fetch bird-mini-dev`, or name a folder of "
            "<db_id>/<db_id>.sqlite with --db-dir (db_dir=)"
        )
    return found


def load(spec: BenchmarkSpec, root: Path, file: Path | None, with_gold: bool) -> list[Task]:
    """`load_tasks`' entry (`BenchmarkSpec.loader`); BIRD's gold is in the question file."""
    return load_bird(spec.name, root / spec.folder, path=file)


def load_bird(benchmark: str, bird_dir: Path, *, path: Path | None = None) -> list[Task]:
    questions = path or bird_file(benchmark, bird_dir)
    tasks = []
    for index, (where, item) in enumerate(_entries(questions)):
        # train.json has no question_id: its ids are positions in the file
        instance_id = (
            required_name(item, "question_id", where, int_ok=True)
            if "question_id" in item
            else str(index)
        )
        difficulty = optional_str(item, "difficulty", where)
        if difficulty is not None and difficulty not in DIFFICULTIES:
            allowed = ", ".join(DIFFICULTIES)
            raise DataError(f"{where}: field 'difficulty' is {difficulty!r}, not one of {allowed}")
        evidence = optional_str(item, "evidence", where)
        sql = required_str(item, "SQL", where)
        features: tuple[str, ...] = ("documentation",) if evidence else ()
        if uses_dialect_functions(sql):
            features += ("functions",)
        tasks.append(
            Task(
                instance_id=instance_id,
                benchmark=benchmark,
                question=required_str(item, "question", where),
                db=required_name(item, "db_id", where),
                engine=EngineKind.SQLITE,
                external_knowledge=evidence,
                gold=GoldRef(sql=sql),
                difficulty=difficulty,
                features=features,
            )
        )
    unique_ids([t.instance_id for t in tasks], questions)
    return tasks


def _entries(questions: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """A JSON array (the official files) or JSON lines (the dataset hub's export)."""
    if questions.suffix == ".jsonl" or _first_char(questions) == "{":
        return read_jsonl(questions, "question file")
    return read_json_array(questions, "question file")


def _first_char(path: Path) -> str:
    try:
        fd, _ = open_regular(path)  # a FIFO would hold the open for ever
        with open(fd, encoding="utf-8", errors="replace") as f:
            return f.read(64).lstrip("\ufeff \t\r\n")[:1]
    except OSError:
        return ""  # read_json_array says what is wrong
