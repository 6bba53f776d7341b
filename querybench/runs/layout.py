"""Which tasks a run covers and where their databases are.

The denominator of a run is every selected task (`--ids`, then `--runnable`, then `--limit`), as
`querybench eval` counts it. A task that cannot run here (`tasks/runnable.py`'s rule: its
database, emulation or schema metadata missing) is not sent to the model; it is scored
`engine_unavailable` with the reason, and the summary shows the score over the runnable tasks
beside the score over all. `--runnable` leaves those tasks out of the selection instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from querybench.data.layout import benchmark_root
from querybench.errors import DataError
from querybench.methods.paper_settings import apply_paper_settings
from querybench.runs.config import RunConfig
from querybench.tasks import load_tasks
from querybench.tasks.model import Task
from querybench.tasks.runnable import runnability


def load_run_tasks(config: RunConfig) -> list[Task]:
    """Every task of the run's task file, before `--ids` and `--limit`: `run` reads the file
    once for its data-gap line and the run itself."""
    return load_tasks(
        config.benchmark,
        data_dir=config.selection.data_dir,
        path=config.selection.task_file,
        with_gold=config.model == "oracle" or config.prompt.oracle_functions,  # oracles read gold
    )


def selected_tasks(config: RunConfig, tasks: Sequence[Task]) -> list[Task]:
    """The run's tasks in benchmark order: `--ids`, then `--runnable`, then `--limit`."""
    selection = config.selection
    chosen = list(tasks)
    if selection.ids:
        wanted = set(selection.ids)
        unknown = wanted - {t.instance_id for t in chosen}
        if unknown:
            raise DataError(f"no such {config.benchmark} ids: {', '.join(sorted(unknown))}")
        chosen = [t for t in chosen if t.instance_id in wanted]
    if selection.runnable:
        chosen = runnability(chosen, selection.data_dir).runnable
    if selection.limit is not None:
        chosen = chosen[: selection.limit]
    return chosen


def select_tasks(
    config: RunConfig, tasks: Sequence[Task] | None = None
) -> tuple[list[Task], dict[str, str]]:
    """(every selected task in benchmark order, {instance id: why it cannot run here}), from
    `tasks` when the caller loaded them (`load_run_tasks`), else from the task file."""
    data_dir = config.selection.data_dir
    tasks = selected_tasks(config, tasks if tasks is not None else load_run_tasks(config))
    unavailable = runnability(tasks, data_dir).messages()
    tasks = apply_paper_settings(
        tasks,
        config.benchmark,
        benchmark_root(config.benchmark, data_dir),
        reference_plan=config.prompt.reference_plan,
        oracle_functions=config.prompt.oracle_functions,
        data_dir=data_dir,
    )
    return tasks, unavailable
