"""Where a task's database is, for the benchmarks whose databases are local files.

Every lookup follows `data.py`'s rule: the candidate places of `layout.py`, in every data root
in order (or only in the folder given).
"""

from __future__ import annotations

from pathlib import Path

from querybench.benchmarks import Family, family
from querybench.data.layout import (
    SPIDER2_LOCAL_DIRS,
    database_folders,
    emulation_candidates,
    sqlite_candidates,
)
from querybench.data.roots import Roots, data_roots, find_data
from querybench.engines.registry import emulation_spec
from querybench.tasks.model import Task

Where = Path | Roots | None  # one data folder, several, or None for every data root


def roots_of(where: Where) -> list[Path]:
    if where is None:
        return data_roots()
    if isinstance(where, Path):
        return [where]
    return list(where)


def task_database(task: Task, where: Where = None) -> Path | None:
    """The SQLite file of `task`, when there is one here."""
    for key in ("db_path", "database", "db_file"):
        value = task.extra.get(key)
        if value and Path(str(value)).is_file():
            return Path(str(value))
    found = find_data(*sqlite_candidates(task.benchmark, task.db), roots=roots_of(where))
    return found if found is not None and found.is_file() else None


def spider2_database_dirs(where: Where = None) -> list[Path]:
    """Every existing folder of Spider 2.0 `<db>.sqlite` / `<db>.duckdb` files, in lookup order
    (what sql mode searches when no `--db-dir` is given)."""
    return [
        root / folder
        for root in roots_of(where)
        for folder in SPIDER2_LOCAL_DIRS
        if (root / folder).is_dir()
    ]


def emulation_file(task: Task, where: Where = None) -> Path | None:
    found = find_data(*emulation_candidates(task.db), roots=roots_of(where))
    return found if found is not None and found.is_file() else None


def task_target(task: Task, where: Where = None) -> str | None:
    """What `engines.connect` opens for `task` here: its SQLite file or, for a Spider 2.0
    BigQuery/Snowflake task, its emulation file when one was built, else the warehouse itself
    when its credentials are here; None when none is."""
    emulation = emulation_spec(task.engine) if family(task.benchmark) is Family.SPIDER2 else None
    if emulation is not None:  # BigQuery, Snowflake: a `<db>.duckdb` file of `data emulate`
        path = emulation_file(task, where)
        if path is not None:
            return emulation.url_for(path.resolve())
        from querybench.engines.cloud import cloud_target  # credentials: only here

        return cloud_target(task.engine, task.db).url
    database = task_database(task, where)
    return None if database is None else str(database)


def database_dirs(benchmark: str, where: Where = None) -> list[Path]:
    """Every existing folder of `benchmark`'s `<db>/<db>.sqlite` files, in lookup order (the
    first holding a database wins, as `task_database` looks)."""
    return [
        root / folder
        for root in roots_of(where)
        for folder in database_folders(benchmark)
        if (root / folder).is_dir()
    ]
