"""Running gold and predicted SQL together: outcomes from the on-disk cache, the rest run once."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from querybench.engines.base import Result
from querybench.errors import EngineError

if TYPE_CHECKING:
    from querybench.engines.cache import ResultCache
    from querybench.engines.isolated import QueryProcess

Jobs = dict[str, tuple[str | Path, str]]  # key -> (database file or server URL, SQL)
Outcomes = dict[str, Result | EngineError]
Query = tuple[str, str]  # (database, SQL) as text: what makes two jobs the same query

MAX_ROWS = 1_000_000  # the row cap of every query run here (the pool's default)
MAX_ENTRY_BYTES = 16 * 1024**2  # the largest prediction result kept in the cache
BATCH = 16  # the most queries a pool worker takes at a time
POOL_AFTER_S = 0.05  # a job's queries run in one child until they take this long, then on a pool


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
    finished): in one child driven from this thread while the work stays under
    `POOL_AFTER_S` (no worker threads for a small job: they cost more than its queries), the
    rest on a pool of `workers`, that child, its databases open, the first worker's."""
    if not queries:
        return
    from querybench.engines.isolated import QueryProcess

    ordered = sorted(queries, key=lambda query: query[0])  # a batch stays on one database
    first = QueryProcess()
    process: QueryProcess | None = first
    try:
        rest = _run_while_small(first, ordered, timeout, out, on_query)
    except Exception:  # no child could be started here: the pool reports it query by query
        first.close()
        process, rest = None, [query for query in ordered if query not in out]
    except BaseException:
        first.close()
        raise
    if not rest:
        first.close()
        return
    from querybench.engines.pool import QueryJob, QueryPool

    jobs = [QueryJob(str(i), db, sql) for i, (db, sql) in enumerate(rest)]
    children = () if process is None else (process,)  # its databases open: a worker's child
    try:
        pool = QueryPool(workers=workers, timeout=timeout, max_rows=MAX_ROWS, children=children)
    except BaseException:
        first.close()
        raise
    with pool:
        for outcome in pool.run(jobs, batch=_batch(len(jobs), workers)):
            value = outcome.result or outcome.error or EngineError("no outcome from the pool")
            out[rest[int(outcome.key)]] = value
            if on_query is not None:
                on_query()


def _run_while_small(
    process: QueryProcess,
    queries: list[Query],
    timeout: float | None,
    out: dict[Query, Result | EngineError],
    on_query: Callable[[], None] | None,
) -> list[Query]:
    """Run `queries` in order in `process`'s child (each timed from its own start, as on the
    pool), in batches sized to what is left of `POOL_AFTER_S` at their pace so far, into
    `out`; the queries not run once that time is spent (the child left running)."""
    done = 0
    opened: dict[str, EngineError | None] = {}
    process.start()
    start = time.monotonic()
    while done < len(queries):
        spent = time.monotonic() - start
        if done and spent >= POOL_AFTER_S:
            break  # a started child always gets its first query, however loaded we are
        pace = spent / done if done else POOL_AFTER_S
        size = max(1, min(BATCH, int((POOL_AFTER_S - spent) / max(pace, 1e-6))))
        database = queries[done][0]
        end = done + 1
        while end < min(len(queries), done + size) and queries[end][0] == database:
            end += 1
        run = queries[done:end]
        if database not in opened:
            try:
                process.engine(database)
                opened[database] = None
            except EngineError as exc:
                opened[database] = exc
        failed = opened[database]
        sqls = [sql for _, sql in run]
        values = (
            [failed] * len(run)
            if failed is not None
            else process.execute_many(database, sqls, timeout=timeout, max_rows=MAX_ROWS)
        )
        for query, value in zip(run, values, strict=True):
            out[query] = value
            if on_query is not None:
                on_query()
        done += len(run)
    return queries[done:]


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
