"""Running gold and predicted SQL together: one pool, gold results from the on-disk cache."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

from querybench.engines.base import Result
from querybench.errors import EngineError

Jobs = dict[str, tuple[str | Path, str]]  # key -> (database file or server URL, SQL)
Outcomes = dict[str, Result | EngineError]


def run_gold_and_predictions(
    gold_jobs: Jobs,
    pred_jobs: Jobs,
    *,
    timeout: float | None,
    workers: int,
    cache_dir: str | Path | None = None,
    on_query: Callable[[], None] | None = None,
) -> tuple[Outcomes, Outcomes]:
    """Run gold and prediction jobs on one pool; the outcome of each, by key.

    Gold results come from the result cache when it has them (`cache_dir`, default
    `$QUERYBENCH_CACHE` or ~/.cache/querybench) and are stored there once computed (database
    files only: a server has no content to key them by); predictions always run. `on_query`
    is called after each query that ran (progress).
    """
    from querybench.engines.cache import ResultCache
    from querybench.engines.pool import QueryJob, QueryPool

    cache = ResultCache(cache_dir)
    gold: Outcomes = {}
    pred: Outcomes = {}
    for key, (db, sql) in gold_jobs.items():
        try:
            hit = cache.get(db, sql)
        except (EngineError, OSError):
            continue  # no database to fingerprint: the pool will report the error
        if hit is not None:
            gold[key] = hit
    jobs = [QueryJob("g" + k, db, sql) for k, (db, sql) in gold_jobs.items() if k not in gold]
    jobs += [QueryJob("p" + k, db, sql) for k, (db, sql) in pred_jobs.items()]
    with QueryPool(workers=workers, timeout=timeout) as pool:
        for outcome in pool.run(jobs):
            is_gold, key = outcome.key[0] == "g", outcome.key[1:]
            value = outcome.result or outcome.error or EngineError("no outcome from the pool")
            if on_query is not None:
                on_query()
            (gold if is_gold else pred)[key] = value
            if is_gold and outcome.result is not None:
                try:
                    cache.put(*gold_jobs[key], outcome.result)
                except EngineError:
                    pass  # a server URL: nothing to fingerprint, so nothing cached
                except OSError as exc:  # a read-only or full cache costs speed, not results
                    warnings.warn(f"result cache not written: {exc}", RuntimeWarning, stacklevel=2)
    return gold, pred
