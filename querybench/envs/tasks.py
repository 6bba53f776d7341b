"""The tasks an RL environment serves: a querybench `Task` with its database file and prompt.

Independent of verifiers, so trainers other than verifiers (SkyRL, verl) can read the same
prompts and score with the same `SQLReward`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from querybench.context import build_context
from querybench.envs.skiplist import read_skip_list
from querybench.errors import DataError
from querybench.methods.zero_shot import QUESTION, SYSTEM, dialect_name, dialect_notes
from querybench.tasks import load_tasks
from querybench.tasks.databases import task_database
from querybench.tasks.model import Task

TASKSETS = ("bird", "bird-mini-dev", "spider1", "spider2-lite", "custom")
# taskset -> split -> the querybench benchmark that loads it
_SPLITS = {
    "bird": {"dev": "bird", "train": "bird-train"},
    "bird-mini-dev": {"dev": "bird-mini-dev"},
    "spider1": {"dev": "spider1"},
    # Spider 2.0-lite's local (SQLite) tasks whose rebuilt database and gold SQL are present.
    "spider2-lite": {"dev": "spider2-lite"},
    "custom": {"dev": "custom"},
}


@dataclass(frozen=True)
class SQLTask:
    """One RL task: the question's prompt, its SQLite database and the gold SQL."""

    task: Task
    database: Path
    system_prompt: str
    prompt: str

    @property
    def gold_sql(self) -> str:
        return self.task.gold.sql or ""


def load_sql_tasks(
    taskset: str,
    *,
    split: str = "dev",
    num_tasks: int | None = None,
    data_dir: str | Path | None = None,
    path: str | Path | None = None,
    budget: int | None = 6000,
) -> list[SQLTask]:
    """The tasks of `taskset` whose database file is present and whose gold SQL is known.

    `data_dir` is the folder holding the taskset's data (BIRD: `dev.json` and
    `dev_databases/<db>/<db>.sqlite` or `<db>/<db>.sqlite`); default `$BIRD_DIR` for BIRD,
    else `$QUERYBENCH_DATA/<bird|spider1>`. `path` is the task file for `custom`. BIRD train
    leaves out the questions of the shipped skip list (`bird_train_skip.txt`), whose gold
    fails on the installed SQLite.
    """
    skip = read_skip_list() if (taskset, split) == ("bird", "train") else frozenset()
    tasks: list[SQLTask] = []
    for task, database in located_tasks(taskset, split=split, data_dir=data_dir, path=path):
        if num_tasks is not None and len(tasks) >= num_tasks:
            break
        if task.instance_id not in skip:
            tasks.append(_sql_task(task, database, budget))
    return tasks


def located_tasks(
    taskset: str,
    *,
    split: str = "dev",
    data_dir: str | Path | None = None,
    path: str | Path | None = None,
) -> Iterator[tuple[Task, Path]]:
    """Each task of `taskset` whose database file is present and whose gold SQL is known,
    with that file (no prompt built and no skip list applied: `skiplist` runs these)."""
    if taskset not in _SPLITS:
        raise DataError(f"unknown taskset {taskset!r}; choose one of {', '.join(TASKSETS)}")
    benchmark = _SPLITS[taskset].get(split)
    if benchmark is None:
        splits = ", ".join(_SPLITS[taskset])
        raise DataError(f"taskset {taskset!r} has no split {split!r}; choose one of {splits}")
    folder = _data_folder(taskset, data_dir)
    for task in _load(benchmark, folder, path):
        database = _database(task, folder, split)
        if database is not None and task.gold.sql:
            yield task, database


def _data_folder(taskset: str, data_dir: str | Path | None) -> Path | None:
    if data_dir is not None:
        return Path(data_dir).expanduser()
    if taskset.startswith("bird") and os.environ.get("BIRD_DIR"):
        return Path(os.environ["BIRD_DIR"]).expanduser()
    return None


def _load(benchmark: str, folder: Path | None, path: str | Path | None) -> list[Task]:
    if benchmark == "custom":
        return load_tasks("custom", path=path)
    if folder is None:
        return load_tasks(benchmark, path=path)
    # load_tasks takes the data root and adds the benchmark's folder itself.
    if path is None:
        names = {"bird": "dev.json", "bird-train": "train.json"}
        name = names.get(benchmark, "mini_dev_sqlite.json" if "mini" in benchmark else "dev.json")
        candidates = [folder / name, folder / benchmark.removeprefix("bird-") / name]
        path = next((p for p in candidates if p.is_file()), candidates[0])
    return load_tasks(benchmark, data_dir=folder.parent, path=path)


def _database(task: Task, folder: Path | None, split: str) -> Path | None:
    """The task's SQLite file in any of the official layouts, None when it is not here."""
    for key in ("db_path", "database", "db_file"):
        value = task.extra.get(key)
        if value:
            explicit = Path(str(value))
            return explicit if explicit.is_file() else None
    if task.db.startswith("sqlite://"):  # custom tasks name their file as a URL
        url_path = Path(task.db.removeprefix("sqlite://"))
        return url_path if url_path.is_file() else None
    if task.benchmark.startswith("spider2"):
        if task.engine != "sqlite":
            return None  # cloud tasks have no local database
        return task_database(task, folder)
    if folder is None:
        return task_database(task)  # the data roots, as every reader searches them
    db = task.db
    for candidate in (
        folder / f"{split}_databases" / db / f"{db}.sqlite",
        folder / "database" / db / f"{db}.sqlite",
        folder / db / f"{db}.sqlite",
    ):
        if candidate.is_file():
            return candidate
    return None


def _sql_task(task: Task, database: Path, budget: int | None) -> SQLTask:
    task = dataclasses.replace(task, extra={**task.extra, "db_path": str(database)})
    context = build_context(task, budget=budget)
    system = SYSTEM.format(
        dialect=dialect_name(task),
        notes=dialect_notes(task),
    )
    prompt = f"{context.prompt}\n\n{QUESTION.format(question=task.question)}"
    return SQLTask(task, database, system, prompt)
