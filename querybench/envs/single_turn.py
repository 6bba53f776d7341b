"""The single-turn text-to-SQL taskset for verifiers (v1): one question, one ```sql answer.

The prompt is the budgeted schema from `build_context`, the benchmark's hint (BIRD evidence)
and the question; the first ```sql block of the reply is run read-only and scored by
`execution_match` (weight 1), with `error`, `trivial` and `gold_error` recorded as metrics.

    vf-eval querybench-sql --env.taskset.benchmark spider1 --env.taskset.num-tasks 20 ...

(`environments/querybench_sql` is the installable module `vf-eval` imports by that id.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import verifiers.v1 as vf

from querybench.envs.reward import RewardOutcome, SQLReward, answer_sql, sql_workers
from querybench.envs.tasks import load_sql_tasks

_rewards: dict[int, SQLReward] = {}
_reward_lock = threading.Lock()


def shared_reward(workers: int | None = None) -> SQLReward:
    """The process's `SQLReward` of `workers` workers (default `sql_workers()`): its pools and
    gold cache serve every rollout."""
    size = sql_workers() if workers is None else workers
    with _reward_lock:
        if size not in _rewards:
            _rewards[size] = SQLReward(workers=size)
        return _rewards[size]


class SQLTasksetConfig(vf.TasksetConfig):  # type: ignore[misc]
    benchmark: Literal["bird", "bird-mini-dev", "spider1", "spider2-lite", "custom"] = "spider1"
    """Which questions: `--env.taskset.benchmark bird`."""
    split: str = "dev"
    """`dev`, or `train` for BIRD."""
    num_tasks: int | None = None
    """Only the first N tasks (those whose database is present)."""
    data_dir: Path | None = None
    """The benchmark's folder; default `$BIRD_DIR` for BIRD, else `$QUERYBENCH_DATA/<name>`."""
    path: Path | None = None
    """A task file to read instead of the benchmark's own (required for `custom`)."""
    budget: int | None = 6000
    """Token budget of the schema context (o200k tokens); None shows everything."""


class SQLTaskData(vf.TaskData):  # type: ignore[misc]
    database: str
    """The SQLite file the question is asked on."""
    gold_sql: str
    benchmark: str
    db_id: str


class ExecutionMatchScoring:
    """The reward and metrics of a SQL task, shared by the single- and multi-turn tasks:
    `submitted_sql` is scored against the gold by BIRD execution match."""

    data: SQLTaskData

    @vf.metric  # type: ignore[untyped-decorator]
    async def execution(self, trace: Any) -> dict[str, float]:
        """The `error`, `trivial` and `gold_error` metrics."""
        return (await self._outcome(trace)).metrics

    @vf.reward(weight=1.0)  # type: ignore[untyped-decorator]
    async def execution_match(self, trace: Any) -> float:
        return (await self._outcome(trace)).reward

    def reward_service(self) -> SQLReward:
        """The `SQLReward` that runs this task's queries."""
        return shared_reward()

    def submitted_sql(self, trace: Any) -> str | None:
        """What is scored: the final reply's first ```sql block (None: it has none)."""
        return answer_sql(str(trace.last_reply or ""))

    async def _outcome(self, trace: Any) -> RewardOutcome:
        # Metrics run before rewards: the reward reuses (and forgets) the metric's outcome.
        memo: dict[str, RewardOutcome] = self.__dict__.setdefault("_outcomes", {})
        key = str(trace.id)
        outcome = memo.pop(key, None)
        if outcome is None:
            data = self.data
            outcome = await self.reward_service().ascore_sql(
                data.database, data.gold_sql, self.submitted_sql(trace)
            )
            memo[key] = outcome
            trace.info["execution_match"] = {
                "error": outcome.verdict.error,
                "message": outcome.verdict.message,
            }
        return outcome


class SQLTask(ExecutionMatchScoring, vf.Task[SQLTaskData, vf.State, vf.TaskConfig]):  # type: ignore[misc]
    """Scores the reply's first ```sql block against the gold by BIRD execution match."""


class SQLTaskset(vf.Taskset[SQLTask, SQLTasksetConfig]):  # type: ignore[misc]
    def load(self) -> Iterator[SQLTask]:
        yield from sql_tasks(self.config, SQLTask)


def sql_tasks(config: SQLTasksetConfig, task_class: type[Any]) -> Iterator[Any]:
    """The verifiers tasks of `config`, built as `task_class` (shared with multi-turn)."""
    for item in load_sql_tasks(
        config.benchmark,
        split=config.split,
        num_tasks=config.num_tasks,
        data_dir=config.data_dir,
        path=config.path,
        budget=config.budget,
    ):
        data = SQLTaskData(
            id=f"{item.task.benchmark}/{item.task.instance_id}",
            name=item.task.instance_id,
            prompt=item.prompt,
            system_prompt=item.system_prompt,
            database=str(item.database),
            gold_sql=item.gold_sql,
            benchmark=item.task.benchmark,
            db_id=item.task.db,
        )
        yield task_class(data, config.task)


def load_environment(**kwargs: Any) -> SQLTaskset:
    """The taskset for trainers: `load_environment(benchmark="bird", num_tasks=100)`."""
    return SQLTaskset(SQLTasksetConfig(id="querybench-sql", **kwargs))
