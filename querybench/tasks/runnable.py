"""The one rule for whether a task can run here, read by `data status`, `tasks list`, `run`,
`eval` and `report` (on the tasks of the results it reads), so every command gives the same
count.

A task can run here when what running it needs is found by the data lookup (`data.py`):

* a local SQLite task: its database file;
* a Spider 2.0-lite/-snow task: its schema metadata (the context every method and the agent's
  schema folder are built from), and its database: the SQLite file for a local task; for a
  BigQuery / Snowflake one the built offline emulation (`data emulate`), else the warehouse
  itself when its credentials are here (`engines/cloud.py`), which `run` and `eval` then use;
* a DBT project: its start database;
* a task on a server engine (PostgreSQL, ClickHouse): never, here (no loader fills the server);
* a custom task: always (it names its own database).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from querybench.benchmarks import Family, lookup
from querybench.data.roots import Roots
from querybench.engines.cloud import cloud_target
from querybench.engines.registry import emulated_kinds
from querybench.tasks.databases import emulation_file, roots_of, task_database
from querybench.tasks.model import Task

_CLOUD = emulated_kinds()


@dataclass(frozen=True)
class Blocker:
    """Why one task cannot run here: the reason it shares with others, the fix, and its own
    words (the message its `engine_unavailable` verdict carries)."""

    reason: str
    fix: str
    message: str


@dataclass(frozen=True)
class Runnability:
    """The tasks of one selection split by the rule: `blocked` maps each task that cannot run
    here to its blocker."""

    tasks: tuple[Task, ...]
    blocked: dict[str, Blocker]

    @property
    def runnable(self) -> list[Task]:
        return [t for t in self.tasks if t.instance_id not in self.blocked]

    def messages(self) -> dict[str, str]:
        """{instance id: why it cannot run here}, for the verdicts."""
        return {iid: b.message for iid, b in self.blocked.items()}

    def reasons(self) -> list[tuple[int, str, str]]:
        """(count, reason, fix) per reason, most common first."""
        counts = Counter((b.reason, b.fix) for b in self.blocked.values())
        return [(n, reason, fix) for (reason, fix), n in counts.most_common()]

    def line(self) -> str:
        """`N of M tasks can run here; K <reason> (fix: ...); ...`."""
        head = f"{len(self.tasks) - len(self.blocked)} of {len(self.tasks)} tasks can run here"
        return "; ".join([head, *(f"{n} {r} (fix: {f})" for n, r, f in self.reasons())])


def runnability(tasks: Iterable[Task], where: Path | Roots | None = None) -> Runnability:
    """Apply the rule to `tasks`, looking their files up in `where` (a data folder, several, or
    None for every data root)."""
    listed = tuple(tasks)
    blocked = {t.instance_id: b for t in listed if (b := blocker(t, where)) is not None}
    return Runnability(listed, blocked)


def blocker(task: Task, where: Path | Roots | None = None) -> Blocker | None:
    """Why `task` cannot run here, or None when it can."""
    roots = roots_of(where)
    fetch = f"querybench data fetch {task.benchmark}"
    found = lookup(task.benchmark)
    if found is None or found.family is Family.CUSTOM:  # it names its own database
        return None
    if found.spider2_resources and not task.extra.get("metadata_dir"):  # context from metadata
        return Blocker(
            "tasks have no schema metadata here",
            fetch,
            f"no schema metadata for database {task.db!r} ({task.engine}) in the data folders",
        )
    if task.engine == "sqlite":
        if task_database(task, roots) is not None:
            return None
        return Blocker(
            "local tasks lack their database",
            fetch,
            f"database not found: {task.db} is not under {_where(where)}",
        )
    if task.engine in _CLOUD:
        if emulation_file(task, roots) is not None:
            return None
        warehouse = cloud_target(task.engine, task.db)
        if warehouse.url is not None:
            return None
        return Blocker(
            "BigQuery / Snowflake tasks have neither a built emulation nor credentials",
            f"querybench data emulate {task.benchmark}, or credentials as docs/data.md says",
            f"no {task.engine} engine here: no emulation of {task.db} built "
            f"(querybench data emulate {task.benchmark}) and {warehouse.problem}",
        )
    if task.engine == "duckdb":
        if has_start_database(task):
            return None
        return Blocker(
            "DBT tasks lack their start database",
            "querybench data fetch spider2-dbt",
            f"no start database in the DBT project of {task.instance_id}: "
            f"{task.db}.duckdb is not here (querybench data fetch spider2-dbt)",
        )
    return Blocker(
        f"{task.engine} tasks need their data on a local {task.engine} server",
        "docs/data.md",
        f"no {task.engine} server with {task.db} here",
    )


def has_start_database(task: Task) -> bool:
    """A DBT project's start database (`<project>/*.duckdb`) is there."""
    project = task.extra.get("project_dir")
    return bool(project) and any(Path(str(project)).glob("*.duckdb"))


def select_runnable(tasks: Sequence[Task], where: Path | Roots | None = None) -> list[Task]:
    """`--runnable`: the tasks of `tasks` that can run here, in order."""
    return runnability(tasks, where).runnable


def _where(where: Path | Roots | None) -> str:
    return str(where) if isinstance(where, Path) else "the data folders (querybench data status)"
