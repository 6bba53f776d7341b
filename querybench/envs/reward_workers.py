"""Reward work in worker processes, so rewards do not share one interpreter's GIL.

Each process keeps its own read-only engines (one per database, least recently used closed
first) and its own gold results, read from the shared disk `ResultCache` when the parent has
warmed it, else computed there once. Work arrives in batches of (database, gold SQL, answer
SQL) and only the small `RewardOutcome`s travel back: the rows never cross the pipe.
Every query goes through the engine (`execute`, or for an answer on SQLite `execute_batches`,
streamed against the gold set), so read-only opening, the authorizer, the one-statement
rule, the row cap and the timeout (started when the process picks the query up) all hold here
exactly as on the thread pool; the engines run in the worker's own `QueryProcess`
(`engines.isolated`), killed when a query outlives its timeout, so no answer costs more.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from querybench.engines import Engine
from querybench.engines.base import Result
from querybench.engines.cache import ResultCache
from querybench.engines.isolated import QueryProcess
from querybench.envs.match import AnswerOutcome, Outcome, RewardOutcome, execution_match, run_answer
from querybench.errors import EngineError

# One reward to compute in a worker: (database, gold SQL, the answer's SQL or None).
WorkItem = tuple[str, str, str | None]


@dataclass(frozen=True)
class WorkerConfig:
    answer_timeout: float
    gold_timeout: float
    answer_max_rows: int | None
    cache_dir: str | None
    disk_cache: bool
    open_databases: int = 16


class _Worker:
    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.cache = ResultCache(config.cache_dir) if config.disk_cache else None
        self.engines: OrderedDict[str, Engine] = OrderedDict()
        self.process = QueryProcess(open_databases=config.open_databases)
        self.gold: dict[tuple[str, str], Outcome] = {}

    def score(self, item: WorkItem) -> RewardOutcome:
        database, gold_sql, sql = item
        gold = self.gold_of(database, gold_sql)
        config = self.config
        answer: AnswerOutcome | None = None
        if sql is not None:
            try:
                engine = self.engine(database)
            except Exception as exc:  # as in `run`: the error is this answer's outcome
                answer = exc if isinstance(exc, EngineError) else EngineError(str(exc))
            else:
                answer = run_answer(
                    engine,
                    sql,
                    gold,
                    timeout=config.answer_timeout,
                    max_rows=config.answer_max_rows,
                )
        return execution_match(gold, answer)

    def gold_of(self, database: str, gold_sql: str) -> Outcome:
        key = (database, gold_sql)
        known = self.gold.get(key)
        if known is None:
            known = None if self.cache is None else cache_get(self.cache, database, gold_sql)
            if known is None:
                known = self.run(database, gold_sql, self.config.gold_timeout, None)
                if self.cache is not None and not isinstance(known, EngineError):
                    cache_put(self.cache, database, gold_sql, known)
            self.gold[key] = known
        return known

    def run(self, database: str, sql: str, timeout: float, max_rows: int | None) -> Outcome:
        try:
            return self.engine(database).execute(sql, timeout=timeout, max_rows=max_rows)
        except EngineError as exc:
            return exc
        except Exception as exc:  # a bug on one answer must not take the batch down
            return EngineError(f"unexpected {type(exc).__name__}: {exc}")

    def engine(self, database: str) -> Engine:
        engine = self.engines.get(database)
        if engine is not None:
            self.engines.move_to_end(database)
            return engine
        engine = self.process.engine(database)
        self.engines[database] = engine
        if len(self.engines) > self.config.open_databases:
            _, oldest = self.engines.popitem(last=False)
            oldest.close()
        return engine


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


_worker: _Worker | None = None


def start_worker(config: WorkerConfig) -> None:
    """The process pool's initializer."""
    global _worker
    _worker = _Worker(config)


def ready() -> bool:
    return _worker is not None


def score_batch(items: list[WorkItem]) -> list[RewardOutcome]:
    """The rewards of `items`, in order (runs in a worker process)."""
    if _worker is None:
        raise RuntimeError("score_batch runs only in a process started by start_worker")
    return [_worker.score(item) for item in items]
