"""The reward's work kind: batches of rewards in, their outcomes out, each step announced.

Served by the one query child (`engines/child.py`, driven by `engines/supervisor.py` through
`reward_workers.RewardProcess`, which kills it when a step outlives its deadline): a `work`
message is a batch of tasks and its reply their small `RewardOutcome`s, never rows. It uses
the child's read-only engines (`Child.engine`: `connect`, with the same authorizer,
one-statement rule, row and byte caps and timeouts as everywhere) and keeps its gold results,
read from the shared disk `ResultCache` when someone warmed it, else computed here once.
Before each step (a gold query, an answer, a cache read) it announces the item, the step and
the step's deadline in the child's progress bytes; after the step, "no deadline". Comparing an
answer's rows gets a deadline of its own (an answer's timeout more, not the query's: its rows
can be made to cost quadratic time). Its imports are this module's alone: no asyncio, no pool.
"""

from __future__ import annotations

import contextlib
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from querybench.engines.base import Result
from querybench.engines.cache import ResultCache
from querybench.engines.child import OPENING, WORK, Child
from querybench.engines.memory import out_of_memory
from querybench.engines.supervision import OPEN_TIMEOUT_S
from querybench.envs.match import Judged, Outcome, RewardOutcome, Submitted, judged, run_answer
from querybench.errors import EngineError
from querybench.evaluation.verdict import Verdict

# One reward to compute: (database, gold SQL, the answer's SQL, None, or why it is not run:
# `match.bounded`, which never reaches the child: the parent makes it the task's answer).
WorkItem = tuple[str, str, Submitted]
# A work item as the child gets it, with the gold and answer outcomes already settled by a
# kill (None: compute it), so the verdict is always made by the same code.
Task = tuple[str, str, str | None, EngineError | None, EngineError | None]

# A batch's outcomes as they cross the pipe (`Packer`): each distinct (reward, verdict,
# metrics) once, then for every item the index of its own among them. A reply of 64 outcomes
# is a few distinct ones (the verdicts are shared values already), so this pickles a short
# table and one bytes object instead of an object and a dict per item.
PackedOutcomes: TypeAlias = (
    "tuple[list[tuple[float, Verdict, tuple[tuple[str, float], ...]]], bytes | array[int]]"
)

# What the reward's replies hold beyond a query child's (`engines/replies.py`): the verdicts,
# and the index array of a batch of more than 256 distinct outcomes.
REPLY_GLOBALS = frozenset(
    {
        ("querybench.evaluation.verdict", "Verdict"),
        ("querybench.evaluation.detail", "VerdictDetail"),
        ("querybench.evaluation.detail", "Difference"),
        ("querybench.evaluation.detail", "Shape"),
        ("array", "array"),
        ("array", "_array_reconstructor"),
    }
)

# The reward's own steps, as written to the progress bytes (beside the child's `OPENING`).
GOLD, ANSWER = WORK + 1.0, WORK + 2.0
# A gold computed in less is not written to the disk cache: creating the file costs more
# (milliseconds on a busy disk) than running it again in the next process.
DISK_CACHE_MIN_S = 0.01


@dataclass(frozen=True)
class WorkerConfig:
    answer_timeout: float
    gold_timeout: float
    answer_max_rows: int | None
    cache_dir: str | None
    disk_cache: bool
    # Spider 1.0 dev has 20 databases, BIRD dev 11: a smaller LRU reopens them in turn.
    open_databases: int = 64
    # The child's memory cap (`engines/memory.py`), read by the parent: None, the default.
    memory_bytes: int | None = None


def cache_get(cache: ResultCache, database: str | Path, sql: str) -> Result | None:
    """The cached result, None when there is none or it cannot be read."""
    try:
        return cache.get(database, sql)
    except (EngineError, OSError):
        return None


def cache_put(cache: ResultCache, database: str | Path, sql: str, result: Result) -> None:
    # A read-only or full cache (or a database that cannot be fingerprinted) costs speed, not
    # results.
    with contextlib.suppress(OSError, EngineError):
        cache.put(database, sql, result)


class RewardWork:
    """The reward's work kind in one child: `__call__` scores a batch of tasks."""

    def __init__(self, child: Child, config: WorkerConfig) -> None:
        self.config = config
        self.child = child
        self.progress = child.progress
        self.engine = child.engine
        self.cache = ResultCache(config.cache_dir) if config.disk_cache else None
        # Each gold's outcome and the set of its rows, made once.
        self.gold: dict[tuple[str, str], tuple[Outcome, frozenset[tuple[object, ...]] | None]]
        self.gold = {}

    def score(self, task: Task) -> RewardOutcome:
        """The reward of one task."""
        verdict, metrics = self.judge(task)
        return RewardOutcome(verdict.score, verdict, metrics)

    def judge(self, task: Task) -> Judged:
        """The verdict and metrics of one task (`match.judged`, the rule of `execution_match`)."""
        database, gold_sql, sql, gold_known, answer_known = task
        gold: Outcome
        if gold_known is not None:
            gold, gold_rows = gold_known, None
        else:
            gold, gold_rows = self.gold_of(database, gold_sql)
        if answer_known is not None or sql is None:
            return judged(gold, answer_known)
        try:
            engine = self.engine(database)
        except Exception as exc:  # as in `run`: the error is this answer's outcome
            return judged(gold, exc if isinstance(exc, EngineError) else EngineError(str(exc)))
        config, child = self.config, self.child
        child.query_step(engine, config.answer_timeout, ANSWER)
        try:
            answer = run_answer(
                engine,
                sql,
                gold,
                timeout=config.answer_timeout,
                max_rows=config.answer_max_rows,
                gold_rows=gold_rows,
            )
            if isinstance(answer, Result):
                # Whole rows are compared under a deadline of their own: rows made to share
                # one hash bucket (integers k * (2**61 - 1)) make the set comparison
                # quadratic. Streamed rows were compared within the answer's own deadline.
                child.query_step(engine, config.answer_timeout, ANSWER)
            return judged(gold, answer)
        finally:
            self.progress.done()

    def gold_of(
        self, database: str, gold_sql: str
    ) -> tuple[Outcome, frozenset[tuple[object, ...]] | None]:
        """The gold outcome and, when it has rows, their set (both made once per gold)."""
        key = (database, gold_sql)
        known = self.gold.get(key)
        if known is None:
            outcome: Outcome | None = None
            cache, progress = self.cache, self.progress
            if cache is not None:
                progress.step(OPENING, OPEN_TIMEOUT_S)
                outcome = cache_get(cache, database, gold_sql)
                progress.done()
            if outcome is None:
                start = time.monotonic()
                outcome = self.run(database, gold_sql)
                took = time.monotonic() - start
                if cache is not None and isinstance(outcome, Result) and took >= DISK_CACHE_MIN_S:
                    progress.step(OPENING, OPEN_TIMEOUT_S)
                    cache_put(cache, database, gold_sql, outcome)
                    progress.done()
            rows = frozenset(outcome.rows) if isinstance(outcome, Result) else None
            known = self.gold[key] = (outcome, rows)
        return known

    def run(self, database: str, sql: str) -> Outcome:
        try:
            engine = self.engine(database)
            self.child.query_step(engine, self.config.gold_timeout, GOLD)
            return engine.execute(sql, timeout=self.config.gold_timeout, max_rows=None)
        except EngineError as exc:
            return exc
        except MemoryError:
            return out_of_memory()
        except Exception as exc:  # a bug on one answer must not take the batch down
            return EngineError(f"unexpected {type(exc).__name__}: {exc}")
        finally:
            self.progress.done()

    def __call__(self, tasks: list[Task]) -> PackedOutcomes:
        """The outcomes of a batch, in order (`PackedOutcomes`), each item's index announced as
        it starts."""
        progress, packed = self.progress, Packer()
        for index, task in enumerate(tasks):
            progress.index = index
            packed.add(*self.judge(task))
        progress.index = len(tasks)  # past the last item: a failure now loses the reply
        return packed.packed()


class Packer:
    """A batch's outcomes made `PackedOutcomes` one at a time (`unpack_outcomes` undoes it)."""

    __slots__ = ("known", "table", "where")

    def __init__(self) -> None:
        self.table: list[tuple[float, Verdict, tuple[tuple[str, float], ...]]] = []
        self.known: dict[tuple[int, tuple[tuple[str, float], ...]], int] = {}
        self.where: list[int] = []

    def add(self, verdict: Verdict, metrics: dict[str, float]) -> None:
        items = tuple(metrics.items())
        # By the verdict's identity (its score is the reward): equal verdicts made apart stay
        # apart, as pickling them one by one kept them; the table keeps every one alive.
        key = (id(verdict), items)
        index = self.known.get(key)
        if index is None:
            index = self.known[key] = len(self.table)
            self.table.append((verdict.score, verdict, items))
        self.where.append(index)

    def packed(self) -> PackedOutcomes:
        table, where = self.table, self.where
        # One byte an item while it can name every distinct outcome, else four.
        return table, bytes(where) if len(table) <= 256 else array("I", where)


def unpack_outcomes(packed: PackedOutcomes) -> list[RewardOutcome]:
    """The outcomes a `Packer` packed, each with a metrics dict of its own."""
    table, where = packed
    return [
        RewardOutcome(reward, verdict, dict(metrics))
        for reward, verdict, metrics in [table[index] for index in where]
    ]
