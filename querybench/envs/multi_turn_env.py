"""The multi-turn text-to-SQL taskset for verifiers (v1): explore with SQL tools, then submit.

The same tasks as the single-turn taskset, with `SQLToolset`'s tools (`execute_sql`,
`list_tables`, `describe_table`, `sample_rows`, `submit`) launched per rollout. The rollout
stops once `submit` has been called or after `max_turns` model turns; the reward is the
execution match of the submitted SQL (when nothing was submitted, the last reply's first
```sql block), by the same `SQLReward` and rule as the single-turn taskset.

    vf-eval querybench-sql-tools --env.taskset.benchmark spider1 --env.taskset.task.max-turns 8
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf

from querybench.envs.single_turn import (
    ExecutionMatchScoring,
    SQLTaskData,
    SQLTasksetConfig,
    sql_tasks,
)
from querybench.envs.sql_toolset import SQLToolset, SQLToolsState

TOOLS_PROMPT = (
    "\n\nUse the tools to explore the database (execute_sql, list_tables, describe_table, "
    "sample_rows), then call submit with your final SQL query."
)


class SQLToolsTaskConfig(vf.TaskConfig):  # type: ignore[misc]
    max_turns: int = 10
    """Model turns before the rollout stops: `--env.taskset.task.max-turns`."""
    tools: vf.ToolsetConfig = vf.ToolsetConfig()
    """Where the SQL tool server runs (a subprocess beside the rollout by default)."""


class MultiTurnSQLTask(
    ExecutionMatchScoring,
    vf.Task[SQLTaskData, SQLToolsState, SQLToolsTaskConfig],  # type: ignore[misc]
):
    """Scores the SQL given to `submit` against the gold by BIRD execution match."""

    @classmethod
    def toolsets(cls, config: SQLToolsTaskConfig) -> list[vf.Toolset]:
        return [SQLToolset(config.tools)]

    async def setup(self, trace: Any, runtime: Any) -> None:
        trace.state.database = self.data.database

    @vf.stop  # type: ignore[untyped-decorator]
    async def submitted(self, trace: vf.Trace) -> bool:
        return trace.state.submitted is not None

    @vf.stop  # type: ignore[untyped-decorator]
    async def turn_limit(self, trace: vf.Trace) -> bool:
        return trace.num_turns >= self.config.max_turns  # type: ignore[no-any-return]

    def submitted_sql(self, trace: Any) -> str | None:
        submitted = trace.state.submitted
        if submitted is not None:
            return str(submitted)
        return super().submitted_sql(trace)


class SQLToolsTasksetConfig(SQLTasksetConfig):
    task: SQLToolsTaskConfig = SQLToolsTaskConfig()


class SQLToolsTaskset(vf.Taskset[MultiTurnSQLTask, SQLToolsTasksetConfig]):  # type: ignore[misc]
    def load(self) -> Iterator[MultiTurnSQLTask]:
        for task in sql_tasks(self.config, MultiTurnSQLTask):
            yield task.with_data(prompt=task.data.prompt + TOOLS_PROMPT)


def load_environment(**kwargs: Any) -> SQLToolsTaskset:
    """For trainers: `load_environment(benchmark="bird", num_tasks=100)`; the task knobs go
    under `task`, e.g. `task={"max_turns": 8}`."""
    return SQLToolsTaskset(SQLToolsTasksetConfig(id="querybench-sql-tools", **kwargs))
