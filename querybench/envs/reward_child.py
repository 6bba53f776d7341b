"""The reward's child process: batches of rewards in, their outcomes out, each step announced.

Started by `reward_workers.RewardProcess` (which kills it when a step outlives its deadline),
it keeps its read-only engines open (`connect`: the same engines, with the same authorizer,
one-statement rule, row and byte caps and timeouts as everywhere) and its gold results, read
from the shared disk `ResultCache` when someone warmed it, else computed here once. Before each
step (opening a database, a gold query, an answer) it writes the item, the step and the step's
deadline into a few bytes the parent maps; after the step, "no deadline". Comparing an answer's
rows gets a deadline of its own (an answer's timeout more, not the query's: its rows can be made
to cost quadratic time). Its imports are this module's alone: no asyncio, no pool.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import time
from collections import OrderedDict
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from querybench.engines import Engine, connect
from querybench.engines.base import Result
from querybench.engines.cache import ResultCache
from querybench.engines.memory import out_of_memory
from querybench.engines.supervision import OPEN_TIMEOUT_S, enter_query_child
from querybench.engines.timeouts import counts_cpu, wall_cap
from querybench.envs.match import Outcome, RewardOutcome, execution_match, run_answer
from querybench.errors import EngineError

# One reward to compute: (database, gold SQL, the answer's SQL or None).
WorkItem = tuple[str, str, str | None]
# A work item as the child gets it, with the gold and answer outcomes already settled by a
# kill (None: compute it), so the verdict is always made by the same code.
Task = tuple[str, str, str | None, EngineError | None, EngineError | None]

# The steps, as written to the progress bytes.
IDLE, OPENING, GOLD, ANSWER = 0.0, 1.0, 2.0, 3.0
# deadline (monotonic, 0: none), batch number, item index (in the batch as sent), step, and
# the CPU deadline (this process's `time.process_time`, 0: none; `engines/timeouts.py`)
PROGRESS = struct.Struct("dqqdd")
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


class _Progress:
    """The child's side of the progress bytes: each step announced before it runs, and its
    end (the time between steps is not the query's)."""

    def __init__(self, fd: int) -> None:
        self._map = mmap.mmap(fd, PROGRESS.size)
        self.batch, self.index = -1, 0  # no batch yet

    def step(self, step: float, timeout: float, *, cpu: bool = False) -> None:
        """Announce `step`, of `timeout` on the wall clock, or (`cpu`) of CPU time capped by
        the wall clock (`timeouts.wall_cap`)."""
        if cpu:
            deadline, cpu_deadline = time.monotonic() + wall_cap(timeout), time.process_time()
            cpu_deadline += timeout
        else:
            deadline, cpu_deadline = time.monotonic() + timeout, 0.0
        PROGRESS.pack_into(self._map, 0, deadline, self.batch, self.index, step, cpu_deadline)

    def done(self) -> None:
        PROGRESS.pack_into(self._map, 0, 0.0, self.batch, self.index, IDLE, 0.0)


class _Worker:
    def __init__(self, config: WorkerConfig, progress: _Progress) -> None:
        self.config = config
        self.progress = progress
        self.cache = ResultCache(config.cache_dir) if config.disk_cache else None
        self.engines: OrderedDict[str, Engine] = OrderedDict()
        # Each gold's outcome and the set of its rows, made once.
        self.gold: dict[tuple[str, str], tuple[Outcome, frozenset[tuple[object, ...]] | None]]
        self.gold = {}

    def score(self, task: Task) -> RewardOutcome:
        database, gold_sql, sql, gold_known, answer_known = task
        gold: Outcome
        if gold_known is not None:
            gold, gold_rows = gold_known, None
        else:
            gold, gold_rows = self.gold_of(database, gold_sql)
        if answer_known is not None or sql is None:
            return execution_match(gold, answer_known)
        try:
            engine = self.engine(database)
        except Exception as exc:  # as in `run`: the error is this answer's outcome
            return execution_match(
                gold, exc if isinstance(exc, EngineError) else EngineError(str(exc))
            )
        config, progress = self.config, self.progress
        cpu = counts_cpu(engine.spec.name)
        progress.step(ANSWER, config.answer_timeout, cpu=cpu)
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
                progress.step(ANSWER, config.answer_timeout, cpu=cpu)
            return execution_match(gold, answer)
        finally:
            progress.done()

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
            self.progress.step(GOLD, self.config.gold_timeout, cpu=counts_cpu(engine.spec.name))
            return engine.execute(sql, timeout=self.config.gold_timeout, max_rows=None)
        except EngineError as exc:
            return exc
        except MemoryError:
            return out_of_memory()
        except Exception as exc:  # a bug on one answer must not take the batch down
            return EngineError(f"unexpected {type(exc).__name__}: {exc}")
        finally:
            self.progress.done()

    def engine(self, database: str) -> Engine:
        engine = self.engines.get(database)
        if engine is not None:
            self.engines.move_to_end(database)
            return engine
        self.progress.step(OPENING, OPEN_TIMEOUT_S)
        try:
            engine = self.engines[database] = connect(database)
            if len(self.engines) > self.config.open_databases:
                _, oldest = self.engines.popitem(last=False)
                oldest.close()
        finally:
            self.progress.done()
        return engine


def serve(requests_fd: int, replies_fd: int, progress_fd: int) -> None:
    """The child's loop: the config, then batches of tasks in and their outcomes out, until
    the parent closes the pipe."""
    requests = Connection(requests_fd, writable=False)
    replies = Connection(replies_fd, readable=False)
    progress = _Progress(progress_fd)
    os.close(progress_fd)
    config: WorkerConfig = requests.recv()
    # The parent (a trainer) decides when this process ends: a Ctrl-C is not for it.
    enter_query_child(ignore_ctrl_c=True, memory_bytes=config.memory_bytes)
    worker = _Worker(config, progress)
    progress.done()
    while True:
        try:
            number, tasks = requests.recv()
        except (EOFError, OSError):
            break
        progress.batch = number
        outcomes = []
        for index, task in enumerate(tasks):
            progress.index = index
            outcomes.append(worker.score(task))
        progress.index = len(tasks)  # past the last item: a failure now loses the reply
        progress.done()
        try:
            replies.send(outcomes)
        except (BrokenPipeError, OSError):
            break
    # Nothing to flush (the cache files are written whole), and a teardown costs more than
    # the child's last batch did.
    os._exit(0)
