"""Benchmark tasks: one `load_tasks` over a loader per benchmark, all producing `Task`.

>>> tasks = load_tasks("spider2-lite")          # from $QUERYBENCH_DATA
>>> tasks = load_tasks("custom", path="my_questions.yaml")
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Protocol

from querybench.benchmarks import BenchmarkSpec, names, resolve, spec
from querybench.data.layout import benchmark_root
from querybench.errors import DataError
from querybench.tasks.model import FEATURES, GoldRef, Task

__all__ = ["BENCHMARKS", "FEATURES", "GoldRef", "Task", "find_task", "load_tasks", "task_to_json"]


class Loader(Protocol):
    """A benchmark's task loader, as its spec names it: the data root holding its task file
    (`root`), a task file read instead (`file`), and whether gold folders are read."""

    def __call__(
        self, spec: BenchmarkSpec, root: Path, file: Path | None, with_gold: bool
    ) -> list[Task]: ...


# every benchmark's name, in the registry's order (`querybench.benchmarks`)
BENCHMARKS = names()


def load_tasks(
    benchmark: str,
    *,
    data_dir: str | Path | None = None,
    path: str | Path | None = None,
    with_gold: bool = True,
) -> list[Task]:
    """Every task of `benchmark`, in file order.

    `data_dir` is the data root (default: the first of `$QUERYBENCH_DATA`, the checkout's
    `../shared/data` and the user data dir that holds the task file); `path` a task file to read
    instead of the benchmark's own (required for `custom`). `with_gold=False` leaves Spider 2.0
    gold folders unread.
    Raises `DataError` (one line naming file, line and field) on anything malformed.
    """
    found = spec(benchmark)
    file = Path(path).expanduser() if path is not None else None
    root = benchmark_root(benchmark, data_dir) if found.task_files else Path()
    loader: Loader = resolve(found.loader)
    return loader(found, root, file, with_gold)


def find_task(tasks: list[Task], instance_id: str) -> Task:
    for task in tasks:
        if task.instance_id == instance_id:
            return task
    benchmark = tasks[0].benchmark if tasks else "this benchmark"
    raise DataError(f"no task {instance_id!r} in {benchmark} ({len(tasks)} tasks)")


def task_to_json(task: Task) -> dict[str, Any]:
    """The task as plain JSON values, with the Task model's field names."""
    return dataclasses.asdict(task)
