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


# BigQuery and Snowflake tasks run on DuckDB-backed emulation files `<db>.duckdb` (built by
# engines.spider2_metadata_load.build_emulation) beside the rebuilt SQLite databases.
EMULATION_URLS = {"bigquery": "bigquery+local://", "snowflake": "snowflake+local://"}


def task_target(task: Task, root: Path) -> str | None:
    """What `engines.connect` opens for `task` here: its SQLite file or, for a Spider 2.0
    BigQuery/Snowflake task, its emulation file when one was built; None when neither is."""
    if task.benchmark.startswith("spider2") and task.engine in EMULATION_URLS:
        path = root / "spider2-lite-local" / f"{task.db}.duckdb"
        return f"{EMULATION_URLS[task.engine]}{path.resolve()}" if path.is_file() else None
    database = task_database(task, root)
    return None if database is None else str(database)
