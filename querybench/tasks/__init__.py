"""Benchmark tasks: one `load_tasks` over a loader per benchmark, all producing `Task`.

>>> tasks = load_tasks("spider2-lite")          # from $QUERYBENCH_DATA
>>> tasks = load_tasks("custom", path="my_questions.yaml")
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from querybench.errors import DataError
from querybench.layout import benchmark_root
from querybench.tasks.model import FEATURES, GoldRef, Task

__all__ = ["BENCHMARKS", "FEATURES", "GoldRef", "Task", "find_task", "load_tasks", "task_to_json"]

# benchmark -> its folder under the data root
BENCHMARKS = {
    "spider2-lite": "spider2",
    "spider2-snow": "spider2",
    "spider2-dbt": "spider2",
    "spider2": "spider2",
    "bird": "bird",
    "bird-mini-dev": "bird",
    "bird-dev-20251106": "bird",
    "bird-train": "bird",
    "spider1": "spider1",
    "custom": "",
}


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
    if benchmark not in BENCHMARKS:
        raise DataError(f"unknown benchmark {benchmark!r}; choose one of {', '.join(BENCHMARKS)}")
    file = Path(path).expanduser() if path is not None else None
    if benchmark == "custom":
        if file is None:
            raise DataError("the custom benchmark needs a task file (path=..., --path)")
        from querybench.tasks.custom import load_custom

        return load_custom(file)
    folder = BENCHMARKS[benchmark]
    root = benchmark_root(benchmark, data_dir) / folder
    if benchmark in ("spider2-lite", "spider2-snow"):
        from querybench.tasks.spider2 import load_spider2

        return load_spider2(benchmark, root, path=file, with_gold=with_gold)  # type: ignore[arg-type]
    if benchmark == "spider2-dbt":
        from querybench.tasks.spider2_dbt import load_spider2_dbt

        return load_spider2_dbt(root / "spider2-dbt", path=file, with_gold=with_gold)
    if benchmark == "spider2":
        from querybench.tasks.spider2_agentic import load_spider2_agentic

        return load_spider2_agentic(root, path=file, with_gold=with_gold)
    if benchmark.startswith("bird"):
        from querybench.tasks.bird import load_bird

        return load_bird(benchmark, root, path=file)
    from querybench.tasks.spider1 import load_spider1

    return load_spider1(root, path=file)


def find_task(tasks: list[Task], instance_id: str) -> Task:
    for task in tasks:
        if task.instance_id == instance_id:
            return task
    benchmark = tasks[0].benchmark if tasks else "this benchmark"
    raise DataError(f"no task {instance_id!r} in {benchmark} ({len(tasks)} tasks)")


def task_to_json(task: Task) -> dict[str, Any]:
    """The task as plain JSON values, with the Task model's field names."""
    return dataclasses.asdict(task)
