"""`bird-sql`: BIRD text-to-SQL as a verifiers (v1) single-turn taskset.

The model gets the database's CREATE TABLE statements, BIRD's evidence and the question
(`bird_data.PROMPT`) and answers with one SQLite query in a ```sql block; the first such block
is run read-only and scored by execution match (weight 1), with `error`, `trivial` and
`gold_error` recorded as metrics (weight 0). SQL runs on `$BIRD_SQL_WORKERS` workers.

    vf-run bird-sql -m <model> --client.base-url <URL> ... [--env.taskset.split train]

`environments/bird_sql` is the installable package (`bird_sql`) `vf-eval` imports by that id;
`environments/bird_sql/README.md` is the user's guide.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import verifiers.v1 as vf

from querybench.envs import bird_data, skiplist
from querybench.envs.reward import SQLReward, sql_workers
from querybench.envs.single_turn import ExecutionMatchScoring, SQLTaskData, shared_reward
from querybench.errors import DataError


class BirdSQLTasksetConfig(vf.TasksetConfig):  # type: ignore[misc]
    split: bird_data.Split = "dev"
    """`dev` or `train` (train leaves out the questions whose gold fails on this SQLite)."""
    data_dir: Path | None = None
    """The split's folder; default `$BIRD_DIR` (dev) or `$BIRD_TRAIN_DIR` (train)."""
    num_tasks: int | None = None
    """Only the first N questions."""


class BirdSQLTaskData(SQLTaskData):
    evidence: str = ""
    """BIRD's hint, as the prompt shows it."""


class BirdSQLTask(ExecutionMatchScoring, vf.Task[BirdSQLTaskData, vf.State, vf.TaskConfig]):  # type: ignore[misc]
    """Scores the reply's first ```sql block against the gold by BIRD execution match."""

    def reward_service(self) -> SQLReward:
        return shared_reward(sql_workers(*skiplist.WORKERS_ENVS))


class BirdSQLTaskset(vf.Taskset[BirdSQLTask, BirdSQLTasksetConfig]):  # type: ignore[misc]
    def load(self) -> Iterator[BirdSQLTask]:
        for data in bird_sql_task_data(
            self.config.split, self.config.data_dir, self.config.num_tasks
        ):
            yield BirdSQLTask(data, self.config.task)


def bird_sql_task_data(
    split: bird_data.Split, data_dir: str | Path | None = None, num_tasks: int | None = None
) -> list[BirdSQLTaskData]:
    """The split's first `num_tasks` questions (all by default) with their prompts.

    Train leaves out the questions whose gold fails on this SQLite (the skip list, built on
    the first train load). No question, or a question's database missing, is a `DataError`
    naming the path it looked for.
    """
    questions = bird_data.question_file(split, bird_data.split_folder(split, data_dir))
    tasks = bird_data.load_questions(split, questions)
    if split == "train":
        skip = skiplist.train_skip_ids(questions, skiplist.train_jobs(questions))
        tasks = [task for task in tasks if task.instance_id not in skip]
    if num_tasks is not None:
        if num_tasks < 1:
            raise DataError(f"num-tasks must be at least 1, got {num_tasks}")
        tasks = tasks[:num_tasks]
    if not tasks:
        raise DataError(f"{questions}: every BIRD {split} question's gold fails here")
    data = []
    for task in tasks:
        database = bird_data.database_path(split, questions, task.db)
        data.append(
            BirdSQLTaskData(
                id=f"bird-{split}/{task.instance_id}",
                name=task.instance_id,
                prompt=bird_data.prompt(database, task.question, task.external_knowledge),
                database=str(database),
                gold_sql=task.gold.sql or "",
                benchmark="bird" if split == "dev" else "bird-train",
                db_id=task.db,
                evidence=task.external_knowledge or "",
            )
        )
    return data


def load_environment(**kwargs: Any) -> BirdSQLTaskset:
    """The taskset for trainers: `load_environment(split="train", num_tasks=1000)`."""
    return BirdSQLTaskset(BirdSQLTasksetConfig(id="bird-sql", **kwargs))
