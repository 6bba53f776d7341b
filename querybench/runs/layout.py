"""Which tasks a run covers and where their databases are.

The denominator of a run is every selected task (`--ids`, then `--limit`), as `querybench eval`
counts it. A local task whose database file is missing here is not sent to the model; it is
scored `engine_unavailable` with the reason, and the summary shows the score over the runnable
tasks beside the score over all. Spider 2.0 cloud tasks score 0 with `engine_unavailable` when
no engine is reachable, as `eval` scores them.
"""

from __future__ import annotations

from collections.abc import Sequence

from querybench.errors import DataError
from querybench.layout import benchmark_root
from querybench.methods.paper_settings import apply_paper_settings
from querybench.runs.config import RunConfig
from querybench.tasks import load_tasks
from querybench.tasks.databases import task_database
from querybench.tasks.model import Task


def load_run_tasks(config: RunConfig) -> list[Task]:
    """Every task of the run's task file, before `--ids` and `--limit`: `run` reads the file
    once for its data-gap line and the run itself."""
    return load_tasks(
        config.benchmark,
        data_dir=config.selection.data_dir,
        path=config.selection.task_file,
        with_gold=config.model == "oracle" or config.prompt.oracle_functions,  # oracles read gold
    )


def select_tasks(
    config: RunConfig, tasks: Sequence[Task] | None = None
) -> tuple[list[Task], dict[str, str]]:
    """(every selected task in benchmark order, {instance id: why it cannot run here}), from
    `tasks` when the caller loaded them (`load_run_tasks`), else from the task file."""
    selection, data_dir = config.selection, config.selection.data_dir
    tasks = list(tasks) if tasks is not None else load_run_tasks(config)
    if selection.ids:
        wanted = set(selection.ids)
        unknown = wanted - {t.instance_id for t in tasks}
        if unknown:
            raise DataError(f"no such {config.benchmark} ids: {', '.join(sorted(unknown))}")
        tasks = [t for t in tasks if t.instance_id in wanted]
    if selection.limit is not None:
        tasks = tasks[: selection.limit]
    unavailable: dict[str, str] = {}
    for task in tasks:
        local = not task.benchmark.startswith("spider2") and task.engine == "sqlite"
        if local and task.benchmark != "custom" and task_database(task, data_dir) is None:
            where = data_dir or "the data folders (querybench data status)"
            unavailable[task.instance_id] = f"database not found: {task.db} is not under {where}"
    tasks = apply_paper_settings(
        tasks,
        config.benchmark,
        benchmark_root(config.benchmark, data_dir),
        reference_plan=config.prompt.reference_plan,
        oracle_functions=config.prompt.oracle_functions,
        data_dir=data_dir,
    )
    return tasks, unavailable
