"""Where a task's database file is, for the benchmarks whose databases are local files."""

from __future__ import annotations

from pathlib import Path

from querybench.tasks.model import Task


def task_database(task: Task, root: Path) -> Path | None:
    """The SQLite file of `task`, when there is one here."""
    for key in ("db_path", "database", "db_file"):
        value = task.extra.get(key)
        if value and Path(str(value)).is_file():
            return Path(str(value))
    if task.benchmark.startswith("spider2"):
        candidates = [root / "spider2-lite-local" / f"{task.db}.sqlite"]
    else:
        folder = "bird" if task.benchmark.startswith("bird") else task.benchmark
        candidates = [
            root / folder / "database" / task.db / f"{task.db}.sqlite",
            root / folder / task.db / f"{task.db}.sqlite",
            root / folder / "dev_databases" / task.db / f"{task.db}.sqlite",
        ]
    return next((p for p in candidates if p.is_file()), None)
