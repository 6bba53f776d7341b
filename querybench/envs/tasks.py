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

from querybench.benchmarks import Family, family, spec
from querybench.context import build_context
from querybench.data.roots import find_root
from querybench.engines.pool import QueryJob
from querybench.envs.bird_data import FOLDER_ENV, database_candidates
from querybench.envs.skiplist import train_skip_ids
from querybench.errors import DataError
from querybench.methods.zero_shot import QUESTION, SYSTEM, dialect_name, dialect_notes
from querybench.tasks import load_tasks
from querybench.tasks.bird import bird_file
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
    `dev_databases/[dev_databases/]<db>/<db>.sqlite` or `<db>/<db>.sqlite`); default
    `$BIRD_DIR` for BIRD (`$BIRD_TRAIN_DIR` for its train split),
    else `$QUERYBENCH_DATA/<bird|spider1>`. `path` is the task file for `custom`. BIRD train
    leaves out the questions whose gold fails on the installed SQLite (`skiplist`: the list
    is built on the first train load).
    """
    located = list(located_tasks(taskset, split=split, data_dir=data_dir, path=path))
    skip: frozenset[str] = frozenset()
    benchmark = spec(_SPLITS[taskset][split])
    if benchmark.failing_gold:
        train_json = _task_file(benchmark.name, _data_folder(taskset, data_dir, split), path)
        jobs = [QueryJob(t.instance_id, db, t.gold.sql or "") for t, db in located]
        skip = train_skip_ids(train_json, jobs)
    tasks: list[SQLTask] = []
    for task, database in located:
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
    with that file (no prompt built and no skip list applied)."""
    if taskset not in _SPLITS:
        raise DataError(f"unknown taskset {taskset!r}; choose one of {', '.join(TASKSETS)}")
    benchmark = _SPLITS[taskset].get(split)
    if benchmark is None:
        splits = ", ".join(_SPLITS[taskset])
        raise DataError(f"taskset {taskset!r} has no split {split!r}; choose one of {splits}")
    folder = _data_folder(taskset, data_dir, split)
    for task in _load(benchmark, folder, path):
        database = _database(task, folder, split)
        if database is not None and task.gold.sql:
            yield task, database


def _data_folder(taskset: str, data_dir: str | Path | None, split: str) -> Path | None:
    if data_dir is not None:
        return Path(data_dir).expanduser()
    variable = FOLDER_ENV["train" if split == "train" else "dev"]  # $BIRD_TRAIN_DIR, $BIRD_DIR
    if family(_SPLITS[taskset].get(split)) is Family.BIRD and os.environ.get(variable):
        return Path(os.environ[variable]).expanduser()
    return None


def _load(benchmark: str, folder: Path | None, path: str | Path | None) -> list[Task]:
    if family(benchmark) is Family.CUSTOM:
        return load_tasks(benchmark, path=path)
    if folder is None:
        return load_tasks(benchmark, path=path)
    # load_tasks takes the data root and adds the benchmark's folder itself.
    return load_tasks(benchmark, data_dir=folder.parent, path=_task_file(benchmark, folder, path))


def _task_file(benchmark: str, folder: Path | None, path: str | Path | None) -> Path:
    """The task file `_load` reads: BIRD's as `layout.TASK_FILES` places it under its folder."""
    if path is not None:
        return Path(path).expanduser()
    if folder is None:
        return bird_file(benchmark, find_root("bird") / "bird")
    if family(benchmark) is Family.BIRD:
        return bird_file(benchmark, folder)
    candidates = [folder / "dev.json", folder / benchmark / "dev.json"]
    return next((p for p in candidates if p.is_file()), candidates[0])


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
    if family(task.benchmark) is Family.SPIDER2:
        if task.engine != "sqlite":
            return None  # cloud tasks have no local database
        return task_database(task, folder)
    if folder is None:
        return task_database(task)  # the data roots, as every reader searches them
    db = task.db
    if family(task.benchmark) is Family.BIRD:
        candidates = database_candidates(split, folder, db)
    else:
        candidates = [folder / "database" / db / f"{db}.sqlite", folder / db / f"{db}.sqlite"]
    return next((candidate for candidate in candidates if candidate.is_file()), None)


def _sql_task(task: Task, database: Path, budget: int | None) -> SQLTask:
    task = dataclasses.replace(task, extra={**task.extra, "db_path": str(database)})
    context = build_context(task, budget=budget)
    system = SYSTEM.format(
        dialect=dialect_name(task),
        notes=dialect_notes(task),
    )
    prompt = f"{context.prompt}\n\n{QUESTION.format(question=task.question)}"
    return SQLTask(task, database, system, prompt)
