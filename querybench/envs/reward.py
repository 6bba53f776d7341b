"""The RL reward: BIRD execution match of the first ```sql block, fast and hard to game.

`execution_match` is the pure rule (`match.py`: BIRD's `bird_verdict` / `bird_metrics`, never
a second copy). `SQLReward` runs the queries it needs:

* by default in `workers` child processes (`reward_workers.py`, `reward_child.py`), started
  with the reward: each keeps its read-only connections and its gold results, takes a batch of
  rewards per message (`score_many`'s slices, `ascore`'s coalesced calls, one `score`) and
  sends back only their outcomes, and is killed when a step outlives its timeout (+0.5 s);
  `processes=False` runs them on threads in this process instead (every reward then shares
  this interpreter's GIL), answers on a `QueryPool` with a 30 s timeout and gold queries on
  another with 120 s, each query in an `engines.isolated` child;
* sized by `QUERYBENCH_SQL_WORKERS` (default: the CPU cores this process may use, by its
  cgroup quota and affinity mask); a query's timeout starts when its worker starts it, so a
  busy machine queues instead of timing out;
* gold results are computed once per (database, SQL) and kept in memory (each worker its
  own); on disk through `ResultCache` across processes: `warm` writes every gold there, a
  worker those that took 10 ms or more (a cheaper one is cheaper to run again than to store);
* on SQLite an answer's rows are streamed and compared against the gold set batch by batch
  (`match.run_answer`): the first row that is not a gold row ends the query with 0, so a huge
  wrong result is never read to its end and memory holds one batch plus the gold set; an
  answer made only of gold rows is still capped (`answer_max_rows`, a `ResultTooLarge` scores
  0 with `error`).
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import weakref
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from querybench.engines import Engine
from querybench.engines.base import positive_int_env
from querybench.engines.cache import ResultCache
from querybench.engines.memory import query_memory_bytes
from querybench.engines.pool import QueryJob, QueryOutcome, QueryPool
from querybench.engines.timeouts import finite_timeout
from querybench.envs.coalesce import Coalescer
from querybench.envs.match import (
    AnswerOutcome,
    Outcome,
    RewardOutcome,
    Submitted,
    answer_sql,
    bounded,
    execution_match,
    run_answer,
    submitted,
)
from querybench.envs.repeats import Repeats, fan_out, unique_items
from querybench.envs.reward_child import WorkerConfig, WorkItem, cache_get, cache_put
from querybench.envs.reward_workers import RewardWorkers, crashed, let_workers_run
from querybench.errors import EngineError

ANSWER_TIMEOUT = 30.0
GOLD_TIMEOUT = 120.0
WORKERS_ENV = "QUERYBENCH_SQL_WORKERS"

__all__ = [
    "ANSWER_TIMEOUT",
    "GOLD_TIMEOUT",
    "Outcome",
    "RewardItem",
    "RewardOutcome",
    "SQLReward",
    "answer_sql",
    "execution_match",
    "sql_workers",
    "usable_cores",
]


def sql_workers(*variables: str) -> int:
    """How many SQL queries run at once: the first of `variables` that is set (default
    `$QUERYBENCH_SQL_WORKERS`; `bird-sql` reads `$BIRD_SQL_WORKERS` first), else
    `usable_cores()`."""
    for variable in variables or (WORKERS_ENV,):
        workers = positive_int_env(variable)
        if workers is not None:
            return workers
    return usable_cores()


def usable_cores(cgroup_root: Path = Path("/sys/fs/cgroup")) -> int:
    """The CPU cores this process may use: its affinity mask, capped by its cgroup's CPU quota
    (a container given 2 CPUs of a 64-core host gets 2, where `os.cpu_count()` says 64)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_quota(cgroup_root)
    return max(1, min(cores, math.ceil(quota))) if quota is not None else max(1, cores)


def cgroup_cpu_quota(root: Path, proc_cgroup: Path = Path("/proc/self/cgroup")) -> float | None:
    """The CPUs the cgroup quota allows (quota / period), None when unlimited or unknown.

    cgroup v2 keeps `cpu.max` ("max 100000" or "200000 100000") in the process's group and
    each ancestor, the tightest winning; v1 keeps `cpu.cfs_quota_us` (-1: none) and
    `cpu.cfs_period_us` under `cpu/`. Inside a container the group is usually `/`.
    """
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        lines = []
    limits: list[float] = []
    for line in lines:
        _, controllers, group = line.split(":", 2)
        relative = Path(group.lstrip("/"))
        if controllers == "":  # v2
            base = root / "unified" if (root / "unified").is_dir() else root
            for folder in [base / relative, *(base / relative).parents]:
                limits += _quota(folder / "cpu.max", None)
                if folder == base:
                    break
        elif "cpu" in controllers.split(","):  # v1
            folder = root / controllers
            if not folder.is_dir():
                folder = root / "cpu"
            for candidate in (folder / relative, folder):
                limits += _quota(candidate / "cpu.cfs_quota_us", candidate / "cpu.cfs_period_us")
    return min(limits) if limits else None


def _quota(quota_file: Path, period_file: Path | None) -> list[float]:
    try:
        words = quota_file.read_text().split()
        if period_file is not None:
            words += period_file.read_text().split()
        quota, period = words[0], float(words[1])
    except (OSError, IndexError, ValueError):
        return []
    if quota in ("max", "-1") or period <= 0:
        return []
    try:
        return [float(quota) / period]
    except ValueError:
        return []


@dataclass(frozen=True)
class RewardItem:
    """One reward to compute: the answer's text against a gold query on a database."""

    database: str | Path
    gold_sql: str
    completion: str


class SQLReward:
    """Computes execution-match rewards; thread-safe, and `ascore` for asyncio callers.

    Use as a context manager (or call `close`) to stop the worker processes and threads.
    """

    def __init__(
        self,
        *,
        workers: int | None = None,
        answer_timeout: float = ANSWER_TIMEOUT,
        gold_timeout: float = GOLD_TIMEOUT,
        answer_max_rows: int = 1_000_000,
        cache_dir: str | Path | None = None,
        disk_cache: bool = True,
        processes: bool = True,
        batch_size: int = 64,
    ) -> None:
        self.workers = workers if workers is not None else sql_workers()
        self.processes = processes
        self.batch_size = max(1, batch_size)
        self._config = WorkerConfig(
            finite_timeout(answer_timeout),  # NaN or infinity: no deadline would pass
            finite_timeout(gold_timeout),
            answer_max_rows,
            None if cache_dir is None else str(cache_dir),
            disk_cache,
            memory_bytes=query_memory_bytes(),  # read here: a bad value fails the caller
        )
        # Started now, so the children start while the caller does whatever comes first;
        # stopped by `close`, or when the reward is collected (or the interpreter exits).
        self._workers = RewardWorkers(self._config, self.workers) if processes else None
        self._stop_workers = weakref.finalize(self, _close, self._workers)
        self._answers = QueryPool(self.workers, answer_timeout, answer_max_rows)
        self._golds = QueryPool(self.workers, gold_timeout, None)
        self._cache = ResultCache(cache_dir) if disk_cache else None
        self._gold: dict[tuple[str, str], Outcome] = {}
        self._gold_locks: dict[tuple[str, str], threading.Lock] = {}
        self._lock = threading.Lock()
        self._coalescers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Coalescer] = (
            weakref.WeakKeyDictionary()
        )
        self._last_coalescer: Coalescer | None = None

    def __enter__(self) -> SQLReward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._workers = None
        self._stop_workers()
        self._answers.close()
        self._golds.close()

    def gold(self, database: str | Path, gold_sql: str) -> Outcome:
        """The gold outcome, computed at most once per process (a failure is kept too, so a
        gold that times out does not stall every rollout of its task again)."""
        key = (str(database), gold_sql)
        known = self._gold.get(key)
        if known is not None:
            return known
        with self._lock:
            lock = self._gold_locks.setdefault(key, threading.Lock())
        with lock:  # concurrent rollouts of one task wait for a single computation
            known = self._gold.get(key)
            if known is None:
                known = _value(self._compute_gold(database, gold_sql))
                self._gold[key] = known
        return known

    def score(self, database: str | Path, gold_sql: str, completion: str) -> RewardOutcome:
        """The reward of one answer text (past the bound of one answer, `too_large`: `bounded`)."""
        return self._score(database, gold_sql, submitted(completion))

    def score_sql(self, database: str | Path, gold_sql: str, sql: str | None) -> RewardOutcome:
        """The reward of one already extracted query (None: there was none)."""
        return self._score(database, gold_sql, bounded(sql))

    def _score(self, database: str | Path, gold_sql: str, sql: Submitted) -> RewardOutcome:
        if self.processes:
            return self._batch([(str(database), gold_sql, sql)]).result()[0]
        gold = self.gold(database, gold_sql)
        answer = sql if not isinstance(sql, str) else self._answer(database, sql, gold).result()
        return execution_match(gold, answer)

    async def ascore(self, database: str | Path, gold_sql: str, completion: str) -> RewardOutcome:
        """`score` off the event loop, so other rollouts keep flowing while a query runs.

        On processes, the calls of one event-loop pass (and those made while every worker is
        busy) travel together as one batch (`coalesce.py`), so concurrent rollouts get the
        batch rate of `score_many` rather than one process round trip each."""
        return await self._ascore(database, gold_sql, submitted(completion))

    async def ascore_sql(
        self, database: str | Path, gold_sql: str, sql: str | None
    ) -> RewardOutcome:
        """`ascore` of an already extracted query (None: there was none)."""
        return await self._ascore(database, gold_sql, bounded(sql))

    async def _ascore(self, database: str | Path, gold_sql: str, sql: Submitted) -> RewardOutcome:
        if self.processes:
            return await self._coalescer().score((str(database), gold_sql, sql))
        return await asyncio.to_thread(self._score, database, gold_sql, sql)

    def score_many(self, items: Sequence[RewardItem]) -> list[RewardOutcome]:
        """Rewards for many answers at once, in order; an answer repeated to the byte on the
        same database and gold is run once (`repeats.py`)."""
        if self.processes:
            return self._score_many_on_processes(items)
        work, where = unique_items(
            [(str(i.database), i.gold_sql, submitted(i.completion)) for i in items]
        )
        golds = [self.gold(database, gold_sql) for database, gold_sql, _ in work]
        answers = [
            sql if not isinstance(sql, str) else self._answer(database, sql, gold)
            for (database, _, sql), gold in zip(work, golds, strict=True)
        ]
        outcomes = [
            execution_match(gold, answer if not isinstance(answer, Future) else answer.result())
            for gold, answer in zip(golds, answers, strict=True)
        ]
        return fan_out(outcomes, where)

    def _score_many_on_processes(self, items: Sequence[RewardItem]) -> list[RewardOutcome]:
        # Small batches: few hand-offs, yet a slow answer holds up only its own batch, and at
        # least 4 per worker. Each goes out as soon as its answers are read, so the children run
        # while this thread reads on (2,000 answers take 6 ms to read); the distinct answers
        # the size is made for are estimated from their share among those read so far.
        repeats, batches, sent = Repeats(), [], 0
        total, spread, size = len(items), 4 * self.workers, self.batch_size
        for read, item in enumerate(items, 1):
            repeats.add((str(item.database), item.gold_sql, submitted(item.completion)))
            distinct = len(repeats.unique)
            waiting = distinct - sent
            # waiting >= min(size, distinct * total / read / spread), multiplied out
            if waiting and (waiting >= size or waiting * read * spread >= distinct * total):
                batches.append(self._batch(repeats.unique[sent:]))
                sent = distinct
                let_workers_run()
        if sent < len(repeats.unique):
            batches.append(self._batch(repeats.unique[sent:]))
        return fan_out([outcome for batch in batches for outcome in batch.result()], repeats.where)

    def _answer(self, database: str | Path, sql: str, gold: Outcome) -> Future[AnswerOutcome]:
        """The answer run on the answer pool, streamed against `gold` (`run_answer`)."""
        config = self._config

        def work(engine: Engine) -> AnswerOutcome:
            return run_answer(
                engine, sql, gold, timeout=config.answer_timeout, max_rows=config.answer_max_rows
            )

        future = self._answers.submit(database, work)
        done: Future[AnswerOutcome] = Future()

        def finish(ran: Future[AnswerOutcome]) -> None:
            if ran.cancelled():  # the reward is closing
                done.set_result(EngineError("the reward was closed before the answer ran"))
                return
            error = ran.exception()  # the database could not be opened, or a bug
            if error is None:
                done.set_result(ran.result())
            elif isinstance(error, EngineError):
                done.set_result(error)
            else:
                done.set_result(EngineError(f"unexpected {type(error).__name__}: {error}"))

        future.add_done_callback(finish)
        return done

    def warm(self, pairs: Iterable[tuple[str | Path, str]]) -> None:
        """Compute the gold of every (database, SQL) pair ahead of training, on the pool."""
        todo = [(str(db), sql) for db, sql in pairs if (str(db), sql) not in self._gold]
        jobs = [QueryJob(str(i), db, sql) for i, (db, sql) in enumerate(todo)]
        cached = {}
        if self._cache is not None:
            for job in jobs:
                hit = cache_get(self._cache, job.database, job.sql)
                if hit is not None:
                    cached[job.key] = hit
        for outcome in self._golds.run(j for j in jobs if j.key not in cached):
            db, sql = todo[int(outcome.key)]
            if outcome.result is not None and self._cache is not None:
                cache_put(self._cache, db, sql, outcome.result)
            self._gold[(db, sql)] = _value(outcome)
        for key, result in cached.items():
            self._gold[todo[int(key)]] = result

    def _batch(self, items: list[WorkItem]) -> Future[list[RewardOutcome]]:
        """`items` scored in a child process; the future never fails (a crashed child scores
        only what it was running 0 with `error`, and a closed reward everything it held)."""
        workers = self._workers
        if workers is None:
            done: Future[list[RewardOutcome]] = Future()
            done.set_result([crashed(EngineError("the reward is closed")) for _ in items])
            return done
        return workers.submit(items)

    def _coalescer(self) -> Coalescer:
        loop = asyncio.get_running_loop()
        last = self._last_coalescer  # one loop calls ascore thousands of times
        if last is not None and last.loop is loop:
            return last
        with self._lock:
            coalescer = self._coalescers.get(loop)
            if coalescer is None:
                # One batch queued behind each running one keeps every worker fed.
                coalescer = Coalescer(loop, self._batch, 2 * self.workers, self.batch_size)
                self._coalescers[loop] = coalescer
            self._last_coalescer = coalescer
            return coalescer

    def _compute_gold(self, database: str | Path, gold_sql: str) -> QueryOutcome:
        def compute() -> QueryOutcome:
            return _first(self._golds, database, gold_sql)

        if self._cache is None:
            return compute()
        return self._cache.get_or_compute(database, gold_sql, compute)


def _close(workers: RewardWorkers | None) -> None:
    if workers is not None:
        workers.close()


def _first(pool: QueryPool, database: str | Path, sql: str) -> QueryOutcome:
    for outcome in pool.run([QueryJob("", database, sql)]):
        return outcome
    return QueryOutcome("", None, EngineError("no outcome from the pool"))


def _value(outcome: QueryOutcome) -> Outcome:
    return outcome.result or outcome.error or EngineError("no outcome from the pool")
