"""A bounded pool of worker threads running read-only queries, each timed from its own pickup.

Every worker thread drives its own `QueryProcess` (`engines.isolated`): the queries run in a
child process that is killed when one outlives its timeout, so a single call that no engine
can interrupt costs its timeout, not its run time. The child keeps the worker's connection per
database (reused across jobs, least recently used closed first), so no connection is ever
shared between threads.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from querybench.engines import Engine
from querybench.engines.base import Result
from querybench.engines.isolated import IsolatedEngine, QueryProcess, may_fork
from querybench.errors import EngineError

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class QueryJob:
    key: str  # the caller's id, e.g. an instance_id
    database: str | Path  # anything connect() accepts
    sql: str


@dataclass(frozen=True)
class QueryOutcome:
    """Exactly one of `result` and `error` is set."""

    key: str
    result: Result | None
    error: EngineError | None

    def __post_init__(self) -> None:
        if (self.result is None) == (self.error is None):
            raise ValueError("a QueryOutcome needs exactly one of result and error")


class QueryPool:
    """Runs jobs on `workers` threads; `run` yields outcomes in completion order.

    A job's `timeout` starts when a worker picks it up, so queued jobs are not charged for
    waiting. A job that fails (bad SQL, refused, timeout, missing database, even a bug) yields
    an outcome with its error; it never stops the other jobs.
    """

    def __init__(
        self,
        workers: int = 4,
        timeout: float | None = 30.0,
        max_rows: int | None = 1_000_000,
        *,
        open_per_worker: int = 8,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.timeout = timeout
        self.max_rows = max_rows
        self._open_per_worker = max(1, open_per_worker)
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="querybench-query")
        self._local = threading.local()
        self._all_open: set[QueryProcess] = set()
        self._all_open_lock = threading.Lock()
        self._spare: list[QueryProcess] | None = None  # children started before the workers

    def __enter__(self) -> QueryPool:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close(abort=exc_type is not None)

    def run(self, jobs: Iterable[QueryJob], *, batch: int = 1) -> Iterator[QueryOutcome]:
        """Outcomes as jobs finish; `jobs` is read lazily, a few ahead of the workers.

        A worker takes `batch` jobs at a time and runs them one after the other, each timed
        from its own start: many short queries then cost one hand-off between threads per
        batch rather than per query (at half a millisecond each under load, more than the
        queries themselves)."""
        in_flight: set[Future[list[QueryOutcome]]] = set()
        self._start_children()
        try:
            for chunk in _chunks(jobs, max(1, batch)):
                in_flight.add(self._executor.submit(self._run_jobs, chunk))
                if len(in_flight) >= 2 * self.workers:
                    done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
                    yield from (outcome for future in done for outcome in future.result())
            while in_flight:
                done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
                yield from (outcome for future in done for outcome in future.result())
        finally:
            for future in in_flight:  # the caller stopped early
                future.cancel()

    def submit(self, database: str | Path, work: Callable[[Engine], T]) -> Future[T]:
        """`work` run on a worker with that worker's own engine for `database`, for callers
        that need more than `execute` (e.g. streaming rows); it gets no timeout or row cap of
        the pool's, and opening the database may raise into the future."""
        return self._executor.submit(lambda: work(self._engine_for(database)))

    def close(self, *, abort: bool = False) -> None:
        """Wait for the running jobs and stop the children; with `abort` (the caller stopped
        by an exception, Ctrl-C) kill the children first, so no worker waits out a query."""
        if abort:
            with self._all_open_lock:
                running = list(self._all_open)
            for process in running:
                process.abort()
        self._executor.shutdown(wait=True, cancel_futures=True)
        with self._all_open_lock:
            processes, self._all_open = self._all_open, set()
        for process in processes:
            process.close()

    def _start_children(self) -> None:
        """On the first run, one child per worker started from the calling thread before any
        worker thread exists, so that they can be forked from this process (`start`); a
        worker that finds none (or needs another after a kill) starts its own."""
        if self._spare is not None:
            return
        self._spare = []
        if not may_fork():
            return  # they would come from the forkserver anyway: leave them to the workers
        for _ in range(self.workers):
            process = QueryProcess(open_databases=self._open_per_worker)
            with self._all_open_lock:
                self._all_open.add(process)
            self._spare.append(process)
            try:
                process.start()
            except Exception as exc:  # the worker retries on its first job, and reports it there
                log.debug("query child not forked ahead (%s); its worker starts one", exc)
                continue

    def _run_jobs(self, jobs: list[QueryJob]) -> list[QueryOutcome]:
        """The jobs in order, each run of them on one database sent to the child at once."""
        outcomes = []
        for _, same in itertools.groupby(jobs, key=lambda job: str(job.database)):
            run = list(same)
            if len(run) == 1:
                outcomes.append(self._run_job(run[0]))
                continue
            try:
                engine = self._engine_for(run[0].database)
                values = engine.execute_many(
                    [job.sql for job in run], timeout=self.timeout, max_rows=self.max_rows
                )
            except EngineError as exc:
                values = [exc] * len(run)
            except Exception as exc:  # a bug in one batch must not take the others down
                values = [_unexpected(exc)] * len(run)
            for job, value in zip(run, values, strict=True):
                if isinstance(value, Result):
                    outcomes.append(QueryOutcome(job.key, value, None))
                else:
                    outcomes.append(QueryOutcome(job.key, None, value))
        return outcomes

    def _run_job(self, job: QueryJob) -> QueryOutcome:
        try:
            engine = self._engine_for(job.database)
            result = engine.execute(job.sql, timeout=self.timeout, max_rows=self.max_rows)
            return QueryOutcome(job.key, result, None)
        except EngineError as exc:
            return QueryOutcome(job.key, None, exc)
        except Exception as exc:  # a bug in one job must not take the others down
            return QueryOutcome(job.key, None, _unexpected(exc))

    def _engine_for(self, database: str | Path) -> IsolatedEngine:
        engines: OrderedDict[str, IsolatedEngine] | None = getattr(self._local, "engines", None)
        if engines is None:
            engines = self._local.engines = OrderedDict()
            with self._all_open_lock:
                spare = self._spare.pop() if self._spare else None
                if spare is None:
                    spare = QueryProcess(open_databases=self._open_per_worker)
                    self._all_open.add(spare)
            self._local.process = spare
        name = str(database)
        engine = engines.get(name)
        if engine is not None:
            engines.move_to_end(name)
            return engine
        process: QueryProcess = self._local.process
        engine = process.engine(database)
        engines[name] = engine
        if len(engines) > self._open_per_worker:
            _, oldest = engines.popitem(last=False)
            oldest.close()
        return engine


def run_one(
    database: str | Path,
    sql: str,
    timeout: float | None = 30.0,
    max_rows: int | None = 1_000_000,
    *,
    key: str = "",
) -> QueryOutcome:
    """One query on a fresh connection in a fresh `QueryProcess`, with the same error handling
    and the same hard timeout as the pool."""
    with QueryProcess(open_databases=1) as process:
        try:
            engine = process.engine(database)
            return QueryOutcome(key, engine.execute(sql, timeout=timeout, max_rows=max_rows), None)
        except EngineError as exc:
            return QueryOutcome(key, None, exc)
        except Exception as exc:
            return QueryOutcome(key, None, _unexpected(exc))


def _chunks(jobs: Iterable[QueryJob], size: int) -> Iterator[list[QueryJob]]:
    iterator = iter(jobs)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def _unexpected(exc: Exception) -> EngineError:
    error = EngineError(f"unexpected {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error
