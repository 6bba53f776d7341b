"""Running gold and predicted SQL together: outcomes from the on-disk cache, the rest run once."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from querybench.engines.base import Result
from querybench.errors import EngineError

if TYPE_CHECKING:
    from querybench.engines.cache import ResultCache

Jobs = dict[str, tuple[str | Path, str]]  # key -> (database file or server URL, SQL)
Outcomes = dict[str, Result | EngineError]
Query = tuple[str, str]  # (database, SQL) as text: what makes two jobs the same query

MAX_ROWS = 1_000_000  # the row cap of every query run here (the pool's default)
MAX_ENTRY_BYTES = 16 * 1024**2  # the largest prediction result kept in the cache
BATCH = 16  # the most queries a pool worker takes at a time


def run_gold_and_predictions(
    gold_jobs: Jobs,
    pred_jobs: Jobs,
    *,
    timeout: float | None,
    workers: int,
    cache_dir: str | Path | None = None,
    cache: ResultCache | None = None,
    on_query: Callable[[], None] | None = None,
) -> tuple[Outcomes, Outcomes]:
    """Run gold and prediction jobs on one pool; the outcome of each, by key.

    Gold and prediction outcomes come from the result cache when it has them (`cache_dir`,
    default `$QUERYBENCH_CACHE` or ~/.cache/querybench) and are stored there once computed
    (database files only: a server has no content to key them by); a prediction's result over
    `MAX_ENTRY_BYTES` is not stored, nor is any failure but a deterministic one. So a warm
    re-score runs no query. Each distinct query (database, SQL text) runs once: a prediction
    that is its gold's very text shares the gold's outcome, as running it again would return
    the same rows. The one exception is a result holding a float NaN, which equals no other
    NaN: the official scripts run the two queries apart and find them different, so such a
    prediction gets rows of its own. `cache`, an open result cache, is used instead of
    `cache_dir`'s and left open (its caller writes more through the same connection).
    `on_query` is called after each query that ran.
    """
    from querybench.engines.cache import ResultCache

    owned = cache is None
    if cache is None:
        cache = ResultCache(cache_dir)
    try:
        gold_queries = {key: _query(job) for key, job in gold_jobs.items()}
        pred_queries = {key: _query(job) for key, job in pred_jobs.items()}
        distinct = list(dict.fromkeys([*gold_queries.values(), *pred_queries.values()]))
        # One read of the store; a database that cannot be fingerprinted is left to the pool,
        # which reports its error.
        known = _in_time(cache.get_outcomes(distinct, max_rows=MAX_ROWS), timeout)
        to_run = [q for q in distinct if q not in known]
        computed: dict[Query, Result | EngineError] = {}
        try:
            _run(to_run, timeout, workers, on_query, computed)
        finally:  # on Ctrl-C too: what finished is kept, so the same command resumes from it
            _store(cache, list(computed.items()))
        known |= computed
        gold = {key: known[query] for key, query in gold_queries.items()}
        pred = {key: known[query] for key, query in pred_queries.items()}
        shared = set(gold_queries.values())
        again = [
            q for q in dict.fromkeys(pred_queries.values()) if q in shared and _has_nan(known[q])
        ]
        if again:  # their own copy of the rows: read again from the store, else run again
            fresh = _in_time(cache.get_outcomes(again, max_rows=MAX_ROWS), timeout)
            _run([q for q in again if q not in fresh], timeout, workers, on_query, fresh)
            pred |= {key: fresh[query] for key, query in pred_queries.items() if query in fresh}
    finally:
        if owned:
            cache.close()
    return gold, pred


def _query(job: tuple[str | Path, str]) -> Query:
    return str(job[0]), job[1]


def _in_time(
    stored: dict[Query, Result | EngineError], timeout: float | None
) -> dict[Query, Result | EngineError]:
    """The stored outcomes this run's `timeout` would have let finish: a result that took
    longer (stored by a run with a longer timeout) runs again, to time out as it would cold."""
    if timeout is None:
        return stored
    return {
        query: value
        for query, value in stored.items()
        if not isinstance(value, Result) or value.elapsed_s < timeout
    }


def _run(
    queries: list[Query],
    timeout: float | None,
    workers: int,
    on_query: Callable[[], None] | None,
    out: dict[Query, Result | EngineError],
) -> None:
    """Each query's outcome into `out` as it comes (so an interrupted run keeps those that
    finished): on `workers` children driven from this thread (`_run_on_children`), or, where
    no child can be started here, on a pool, which reports that query by query."""
    if not queries:
        return
    ordered = sorted(queries, key=lambda query: query[0])  # a batch stays on one database
    if _run_on_children(ordered, timeout, workers, out, on_query):
        return
    rest = [query for query in ordered if query not in out]
    from querybench.engines.pool import QueryJob, QueryPool

    jobs = [QueryJob(str(i), db, sql) for i, (db, sql) in enumerate(rest)]
    with QueryPool(workers=workers, timeout=timeout, max_rows=MAX_ROWS) as pool:
        for outcome in pool.run(jobs, batch=_batch(len(jobs), workers)):
            value = outcome.result or outcome.error or EngineError("no outcome from the pool")
            out[rest[int(outcome.key)]] = value
            if on_query is not None:
                on_query()


def _run_on_children(
    queries: list[Query],
    timeout: float | None,
    workers: int,
    out: dict[Query, Result | EngineError],
    on_query: Callable[[], None] | None,
) -> bool:
    """`queries` in batches of one database (`_batch`), each child taking its next batch
    (`_Lanes`) once its last is answered, all of them waited on from this thread: no worker
    threads, so each child is forked from this process (`QueryProcess.start`) and an answer
    costs no hand-over between threads. Each query is timed on its own (`QueryProcess.
    send_many`). False, with nothing run, where no child can be started here."""
    from multiprocessing.connection import wait

    from querybench.engines.isolated import Answers, QueryProcess

    size = _batch(len(queries), workers)
    batches: list[list[Query]] = []
    for query in queries:
        last = batches[-1] if batches else None
        if last is None or len(last) >= size or last[0][0] != query[0]:
            batches.append([query])
        else:
            last.append(query)
    children = [QueryProcess() for _ in range(max(1, min(workers, len(batches))))]
    lanes = _Lanes(batches, len(children))
    opened: list[dict[str, EngineError | None]] = [{} for _ in children]
    running: dict[int, tuple[list[Query], Answers]] = {}

    def record(batch: list[Query], values: list[Result | EngineError]) -> None:
        for query, value in zip(batch, values, strict=True):
            out[query] = value
            if on_query is not None:
                on_query()

    try:
        try:
            for child in children:
                child.start()
        except Exception:
            return False
        while lanes or running:
            for index, child in enumerate(children):
                while index not in running and lanes:
                    batch = lanes.take(index)
                    database = batch[0][0]
                    if database not in opened[index]:
                        try:
                            child.engine(database)
                            opened[index][database] = None
                        except EngineError as exc:
                            opened[index][database] = exc
                    failed = opened[index][database]
                    if failed is not None:
                        record(batch, [failed] * len(batch))
                        continue
                    sqls = [sql for _, sql in batch]
                    answers = child.send_many(database, sqls, timeout=timeout, max_rows=MAX_ROWS)
                    running[index] = (batch, answers)
            if not running:
                continue
            limits = [w for _, a in running.values() if (w := a.wait_s()) is not None]
            ready = wait([a.pipe for _, a in running.values()], min(limits) if limits else None)
            for index, (batch, answers) in list(running.items()):
                before = len(answers.outcomes)
                answers.step(answers.pipe in ready)
                record(batch[before : len(answers.outcomes)], answers.outcomes[before:])
                if answers.done:
                    del running[index]
                    answers.__exit__(None)
        return True
    except BaseException as exc:
        for _, answers in running.values():  # no one will read what they answer: killed
            answers.__exit__(type(exc))
        raise
    finally:
        for child in children:
            child.close()


class _Lanes:
    """Batches (in database order) split into one lane per child, each a run of whole
    databases of about equal size: a child takes from its own lane, then from the far end of
    the longest other, so that each database is opened by one child, not by every child
    (an open is a round trip that holds up the others, 0.5 ms or more each)."""

    def __init__(self, batches: list[list[Query]], children: int) -> None:
        total = sum(len(batch) for batch in batches)
        self.lanes: list[deque[list[Query]]] = [deque() for _ in range(children)]
        done, lane, database = 0, 0, None
        for batch in batches:
            if batch[0][0] != database:  # a lane changes only between databases
                database = batch[0][0]
                lane = min(children - 1, done * children // max(1, total))
            self.lanes[lane].append(batch)
            done += len(batch)

    def __bool__(self) -> bool:
        return any(self.lanes)

    def take(self, child: int) -> list[Query]:
        own = self.lanes[child]
        if own:
            return own.popleft()
        return max(self.lanes, key=len).pop()


def _batch(jobs: int, workers: int) -> int:
    """Jobs per hand-off to a worker: a few batches per worker, so that one slow query holds
    back only its own batch, at most `BATCH`."""
    return max(1, min(BATCH, jobs // (4 * max(1, workers))))


def _store(cache: ResultCache, computed: list[tuple[Query, Result | EngineError]]) -> None:
    """The computed outcomes in one write (a server URL has no content to key them by)."""
    try:
        cache.put_outcomes(computed, max_rows=MAX_ROWS, max_bytes=MAX_ENTRY_BYTES)
    except OSError as exc:  # a read-only or full cache costs speed, not results
        import logging

        from querybench.store import warn_unusable

        warn_unusable(logging.getLogger(__name__), cache.path, exc)


def _has_nan(value: Result | EngineError) -> bool:
    return isinstance(value, Result) and any(
        isinstance(cell, float) and math.isnan(cell) for row in value.rows for cell in row
    )
