"""Which tasks a run covers and where their databases are.

The denominator of a run is every selected task (`--ids`, then `--limit`) whose database is
available here; tasks whose database file is missing are listed as skipped, never scored.
Spider 2.0 tasks are always kept (cloud tasks score 0 with `engine_unavailable` when no engine
is reachable, as `querybench eval` scores them).
"""

from __future__ import annotations

from querybench.errors import DataError
from querybench.layout import benchmark_root
from querybench.methods.paper_settings import apply_paper_settings
from querybench.runs.config import RunConfig
from querybench.tasks import load_tasks
from querybench.tasks.databases import task_database
from querybench.tasks.model import Task


def select_tasks(config: RunConfig) -> tuple[list[Task], list[str]]:
    """(tasks to run, ids skipped for a missing database), in benchmark order."""
    tasks = load_tasks(
        config.benchmark,
        data_dir=config.data_dir,
        path=config.task_file,
        with_gold=config.model == "oracle" or config.oracle_functions,  # oracles read gold
    )
    if config.ids:
        wanted = set(config.ids)
        unknown = wanted - {t.instance_id for t in tasks}
        if unknown:
            raise DataError(f"no such {config.benchmark} ids: {', '.join(sorted(unknown))}")
        tasks = [t for t in tasks if t.instance_id in wanted]
    kept: list[Task] = []
    skipped: list[str] = []
    for task in tasks:
        local = not task.benchmark.startswith("spider2") and task.engine == "sqlite"
        if local and task.benchmark != "custom" and task_database(task, config.data_dir) is None:
            skipped.append(task.instance_id)
        else:
            kept.append(task)
    if config.limit is not None:
        kept = kept[: config.limit]
    kept = apply_paper_settings(
        kept,
        config.benchmark,
        benchmark_root(config.benchmark, config.data_dir),
        reference_plan=config.reference_plan,
        oracle_functions=config.oracle_functions,
    )
    return kept, skipped
