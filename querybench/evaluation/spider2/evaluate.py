"""Evaluating a folder of Spider 2.0 predictions: exec_result (CSV) or sql mode.

Every task of the eval config is scored, so the denominator is honest: a task without a
prediction scores 0 with `missing_prediction`.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from querybench import file_digests
from querybench.benchmarks.spider2 import Spider2EvalOptions
from querybench.engines.base import Result
from querybench.engines.registry import emulation_spec
from querybench.errors import DataError, ErrorCode, PredictionRefused
from querybench.evaluation.prediction_file import (
    ReadLimits,
    Scanned,
    check_result_shape,
    open_prediction,
    predictions_folder,
    read_prediction_text,
)
from querybench.evaluation.record import InstanceResult, OnResult
from querybench.evaluation.spider2 import csv_cache, verdict_cache
from querybench.evaluation.spider2.gold import Benchmark, Spider2Gold, engine_family
from querybench.evaluation.spider2.verdict_cache import Keyed
from querybench.evaluation.spider2.verdicts import Verdicts, failed, instance_result
from querybench.evaluation.verdict import Verdict
from querybench.tasks.input_files import read_jsonl

if TYPE_CHECKING:  # pandas and the scorers load on the first prediction the store cannot answer
    import pandas as pd

    from querybench.engines.cloud import CloudTarget
    from querybench.evaluation.spider2.instance import Scored

Mode = Literal["exec_result", "sql"]
Scoring = Literal["official", "strict"]

_FENCED_SQL = "```sql\n"
_CHUNK = 16  # tasks per worker-process job in exec_result mode
CHUNK_BYTES = 1 << 20  # predictions per job at most, a file bigger alone
# Prediction bytes below which exec_result mode scores in-process whatever --workers says:
# forking, and sending results back, cost more than they save on less (see docs/benchmarks.md).
POOL_MIN_BYTES = 32 << 20
# Below it, predictions the parsed-CSV cache has not seen, from which a second core, if idle,
# is worth a worker pool's start-up: pandas parsing them is most of a cold run.
COLD_POOL_MIN_BYTES = 4 << 20


def evaluate_spider2(
    predictions: str | Path,
    *,
    benchmark: Benchmark,
    gold_dir: str | Path,
    mode: str = Spider2EvalOptions.mode,
    scoring: str = Spider2EvalOptions.scoring,
    db_dir: str | Path | Sequence[Path] | None = None,
    tasks_file: str | Path | None = None,
    workers: int = Spider2EvalOptions.workers,
    timeout: float = Spider2EvalOptions.timeout,
    on_result: OnResult | None = None,
    write_csv: bool = False,
    limits: ReadLimits | None = None,
    instance_ids: Collection[str] | None = None,
    _on_total: Callable[[int], None] | None = None,
) -> list[InstanceResult]:
    """Score every task of the gold's eval config (or only `instance_ids`). In sql mode with
    `write_csv`, each query that ran also leaves `<id>.csv` beside its `<id>.sql`: the file the
    official sql mode writes, which exec_result mode reads. `limits` bound what reading one
    prediction may cost (see `prediction_file`); `_on_total(n)` first (a progress bar's total)."""
    pred_dir = predictions_folder(predictions)
    gold = Spider2Gold(gold_dir, benchmark)
    ids = sorted(gold.specs if instance_ids is None else set(gold.specs) & set(instance_ids))
    if _on_total is not None:
        _on_total(len(ids))
    job = _Job(gold, pred_dir, cast(Scoring, scoring), limits or ReadLimits())
    if mode == "exec_result":
        results: Iterable[InstanceResult] = _exec_result_mode(job, ids, workers)
    else:
        databases = _task_databases(tasks_file) if tasks_file else {}
        results = _sql_mode(job, ids, db_dir, databases, workers, timeout, write_csv)
    out = []
    for result in results:
        out.append(result)
        if on_result is not None:
            on_result(result)
    return sorted(out, key=lambda r: r.instance_id)


@dataclass(frozen=True)
class _Job:
    """What every instance of one evaluation shares."""

    gold: Spider2Gold
    pred_dir: Path
    scoring: Scoring
    limits: ReadLimits

    def read(self, instance_id: str) -> tuple[Scored | Verdicts, Keyed | None]:
        """A prediction CSV, checked and bounded (`PredictionRefused` / `DataError` if not),
        parsed, or its verdicts if the verdict store knows its content; and its verdict key
        (None: not to be stored)."""
        with self._opened(instance_id) as scanned:
            if not isinstance(scanned.handle, io.BytesIO):  # a big file, spooled: parsed anew
                from querybench.evaluation.spider2.large_result import read_result

                return read_result(scanned), None
            data = scanned.handle.getbuffer()  # a small file, read whole: cacheable
            known, keyed = self._known(instance_id, data)
            if keyed is not None:
                scanned.remember(keyed.prediction_digest)
            if known is not None:
                return known, keyed
            if keyed is None:
                return csv_cache.parse_table(data, scanned.name, "prediction"), None
            # its verdicts are stored, which answer a re-score: its parse would only cost
            # an entry (0.1 ms) and a write
            digest = keyed.prediction_digest
            table = csv_cache.parse_table(data, scanned.name, "prediction", digest, keep=False)
            return table, keyed

    def scored(self, instance_id: str) -> bool:
        """Whether the verdict store knows this prediction (read and hashed, never parsed)."""
        if not verdict_cache.enabled():
            return False
        try:
            with self._opened(instance_id) as scanned:
                if not isinstance(scanned.handle, io.BytesIO):
                    return False
                known, _ = self._known(instance_id, scanned.handle.getbuffer())
        except (PredictionRefused, DataError, OSError):
            return False
        return known is not None

    def _opened(self, instance_id: str) -> AbstractContextManager[Scanned]:
        return open_prediction(
            self.pred_dir / f"{instance_id}.csv", self.pred_dir, self.limits, (self.gold.dir,)
        )

    def _known(self, instance_id: str, data: memoryview) -> tuple[Verdicts | None, Keyed | None]:
        """The stored verdicts of this prediction's content (None if none), and its key."""
        paths, single = self.gold.result_paths(instance_id)
        spec = self.gold.specs[instance_id]
        keyed = verdict_cache.instance_key(self.gold.benchmark, spec, paths, single, data)
        return (verdict_cache.lookup(keyed.key) if keyed is not None else None), keyed

    def failed(self, instance_id: str, code: ErrorCode, message: str) -> InstanceResult:
        return self.rejected(instance_id, Verdict.fail(code, message))

    def rejected(self, instance_id: str, verdict: Verdict) -> InstanceResult:
        return failed(instance_id, verdict, self.gold)


def _exec_result_mode(job: _Job, ids: list[str], workers: int) -> Iterator[InstanceResult]:
    """Score every task; with several workers and enough to read, chunks of tasks go to
    worker processes."""
    if workers <= 1 or not _worth_a_pool(job.pred_dir, ids, job.scored):
        with csv_cache.deferred_writes():
            yield from _score_ids(job, ids)
        return
    chunks = _chunks(job.pred_dir, ids)
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    job.gold.result_paths(ids[0])  # list the gold folder once, before the workers start
    # the scorers too: imported once here, each forked worker has them (a spawned one imports)
    import querybench.evaluation.spider2.instance  # noqa: F401

    lost: list[list[str]] = []
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_adopt_job, initargs=(job,)
    ) as pool:
        futures = {}
        for k, chunk in enumerate(chunks):
            try:
                futures[pool.submit(_score_chunk, chunk)] = chunk
            except BrokenProcessPool:  # a worker died before every chunk was sent
                lost.extend(chunks[k:])
                break
        for future in as_completed(futures):
            try:
                results, known = future.result()
            except Exception:  # a worker died (killed, out of memory): the pool is broken
                lost.append(futures[future])
                continue
            file_digests.adopt(known)  # the manifest hashes none of them again
            yield from results
    for chunk in lost:
        yield from _rescued(job, chunk, context)


def _chunks(pred_dir: Path, ids: list[str]) -> list[list[str]]:
    """The workers' jobs, the biggest predictions first: each of `_CHUNK` tasks or
    `CHUNK_BYTES` of predictions, whichever comes first. A worker takes the next job when it
    is done, so the small ones at the end even out the workers' finish (in id order the big
    Snowflake results came last, and one worker went on alone)."""
    sizes = {}
    for instance_id in ids:
        try:
            sizes[instance_id] = os.stat(pred_dir / f"{instance_id}.csv").st_size
        except OSError:  # the read reports it
            sizes[instance_id] = 0
    chunks: list[list[str]] = []
    held = 0
    for instance_id in sorted(ids, key=lambda i: -sizes[i]):
        if not chunks or len(chunks[-1]) == _CHUNK or held >= CHUNK_BYTES:
            chunks.append([])
            held = 0
        chunks[-1].append(instance_id)
        held += sizes[instance_id]
    return chunks


def _worth_a_pool(
    pred_dir: Path, ids: list[str], scored: Callable[[str], bool] | None = None
) -> bool:
    """Whether the predictions present outweigh starting worker processes: at least two
    chunks of them, and `POOL_MIN_BYTES` to read, or `COLD_POOL_MIN_BYTES` neither the verdict
    store (`scored`) nor the parsed-CSV cache has seen while a core is idle (the official
    6-file sample runs in-process; a warm re-score too, without importing pandas)."""
    try:
        names = set(os.listdir(pred_dir))
    except OSError:
        return False  # scored in-process, which reports the error per instance
    present = [name for name in (f"{i}.csv" for i in ids) if name in names]
    if len(present) < 2 * _CHUNK:
        return False
    total = 0
    for name in present:
        with contextlib.suppress(OSError):  # the read reports it
            total += os.stat(pred_dir / name).st_size
        if total >= POOL_MIN_BYTES:
            return True
    if total < COLD_POOL_MIN_BYTES or not _idle_core():
        return False
    sample = sorted({present[0], present[len(present) // 2], present[-1]})
    known = sum(scored(name.removesuffix(".csv")) for name in sample) if scored else 0
    if known * 2 > len(sample):  # a warm re-score: a pool would only cost its start
        return False
    return _mostly_unparsed(pred_dir, sample)


# Readings of the runnable count, a millisecond apart: a kernel thread writing back the files
# just written (a new submission) is runnable in about one reading of thirty.
_IDLE_READINGS, _IDLE_GAP_S = 3, 0.001


def _idle_core() -> bool:
    """Whether a core is free now: fewer runnable threads than cores, this one included
    (`/proc/loadavg`'s instant count: the load averages lag a minute behind), in one of a
    few readings (`_IDLE_READINGS`; a busy machine is busy in all of them). Elsewhere, no."""
    try:
        cores = len(os.sched_getaffinity(0))
        for reading in range(_IDLE_READINGS):
            if reading:
                time.sleep(_IDLE_GAP_S)
            with open("/proc/loadavg", "rb") as f:
                if int(f.read().split()[3].split(b"/")[0]) < cores:
                    return True
    except (OSError, ValueError, IndexError, AttributeError):
        return False
    return False


def _mostly_unparsed(pred_dir: Path, sample: list[str]) -> bool:
    """Whether most of these predictions (first, middle, last) are not in the parsed-CSV
    cache: a cold run's parsing is the work a second process pays for; a warm one's is not."""
    unparsed = [csv_cache.is_stored(pred_dir / name, "prediction") is False for name in sample]
    return sum(unparsed) * 2 > len(sample)


def _rescued(
    job: _Job, ids: list[str], context: multiprocessing.context.BaseContext
) -> Iterator[InstanceResult]:
    """The instances of a chunk whose worker died, scored again in a process of their own,
    halved until the instance that kills its process is alone: it fails (`scorer_error`),
    every other instance still scores."""
    with ProcessPoolExecutor(
        1, mp_context=context, initializer=_adopt_job, initargs=(job,)
    ) as pool:
        try:
            results, known = pool.submit(_score_chunk, ids).result()
            file_digests.adopt(known)
        except Exception as exc:
            results = None
            died = f"the scoring process died ({type(exc).__name__}: {exc})"
    if results is not None:
        yield from results
    elif len(ids) == 1:
        yield job.failed(ids[0], ErrorCode.SCORER_ERROR, died)
    else:
        yield from _rescued(job, ids[: len(ids) // 2], context)
        yield from _rescued(job, ids[len(ids) // 2 :], context)


_worker_job: _Job | None = None


def _adopt_job(job: _Job) -> None:
    """Worker-process initializer: the parent's gold (config read, folder listed) is reused."""
    global _worker_job
    _worker_job = job


def _score_chunk(ids: list[str]) -> tuple[list[InstanceResult], list[file_digests.Known]]:
    """A chunk's results, and the digests of the files read whole for them (every gold file
    of its instances, hashed for their verdict keys)."""
    assert _worker_job is not None, "worker started without its gold"
    mark = file_digests.known_count()
    with csv_cache.deferred_writes():
        results = list(_score_ids(_worker_job, ids))
    return results, file_digests.known_since(mark)


def _score_ids(job: _Job, ids: list[str]) -> Iterator[InstanceResult]:
    try:
        for instance_id in ids:
            try:
                pred, keyed = job.read(instance_id)
            except PredictionRefused as exc:
                yield job.failed(instance_id, exc.code, str(exc))
                continue
            except DataError as exc:
                yield job.failed(instance_id, ErrorCode.BAD_PREDICTION_FILE, str(exc))
                continue
            except MemoryError:
                message = f"{instance_id}.csv: out of memory parsing it"
                yield job.failed(instance_id, ErrorCode.TOO_LARGE, message)
                continue
            yield _score(instance_id, pred, job, keyed)
    finally:
        verdict_cache.flush()


def _score(
    instance_id: str, pred: Scored | Verdicts, job: _Job, keyed: Keyed | None = None
) -> InstanceResult:
    """Both verdicts of one parsed prediction (stored under `keyed`, whose gold bytes are
    parsed, unless None), or those the verdict store gave; any error here is this instance's
    verdict."""
    gold = job.gold
    try:
        if isinstance(pred, Verdicts):
            verdicts = pred
        else:
            from querybench.evaluation.spider2.instance import score_frame, variant_of

            if keyed is None:
                golds, single = gold.load_results(instance_id)
            else:
                golds, single = gold.load_results(instance_id, keyed.gold_bytes, keyed.gold_digests)
            verdicts = score_frame(
                pred, golds.tables, single, gold.specs[instance_id], variant_of(gold.benchmark)
            )
            if keyed is not None and not golds.unreadable:
                verdict_cache.remember(keyed.key, verdicts)
        return instance_result(instance_id, verdicts, job.scoring, gold)
    except DataError as exc:
        return job.failed(instance_id, ErrorCode.GOLD_ERROR, str(exc))
    except MemoryError:
        return job.failed(instance_id, ErrorCode.TOO_LARGE, "out of memory while scoring")
    except Exception as exc:
        return job.failed(instance_id, ErrorCode.SCORER_ERROR, f"{type(exc).__name__}: {exc}")


def extract_official_sql(text: str) -> str:
    """The official sql-mode extraction: the first "```sql" fenced block, else the whole text."""
    start = text.find(_FENCED_SQL)
    if start < 0:
        return text
    end = text.find("\n```", start + len(_FENCED_SQL) - 1)
    if end < 0:
        return text
    return text[start + len(_FENCED_SQL) : end].strip()


def official_result_csv(result: Result) -> str:
    """The CSV the official sql mode writes for a result (header, then 500-row chunks).

    The official scorer reads SQLite results with `pd.read_sql_query(chunksize=500)`, appends
    each chunk to a CSV and parses that CSV again; types are inferred per chunk on the way out
    and for the whole file on the way in, so the caller parses this text to see the prediction
    as the official sql mode does.
    """
    import pandas as pd

    buffer = io.StringIO()
    columns = list(result.columns)
    if not result.rows:
        pd.DataFrame.from_records([], columns=columns, coerce_float=True).to_csv(
            buffer, index=False
        )
    for start in range(0, len(result.rows), 500):
        chunk = pd.DataFrame.from_records(
            result.rows[start : start + 500], columns=columns, coerce_float=True
        )
        chunk.to_csv(buffer, header=start == 0, index=False)
    return buffer.getvalue()


def _task_databases(tasks_file: str | Path) -> dict[str, str]:
    """instance_id -> database name, from `spider2-lite.jsonl` (`db`) or `spider2-snow.jsonl`."""
    out: dict[str, str] = {}
    for where, item in read_jsonl(Path(tasks_file), "tasks file"):
        try:
            out[item["instance_id"]] = item.get("db") or item["db_id"]
        except KeyError as exc:
            raise DataError(f"{where}: bad task line ({exc})") from exc
    return out


def _sql_mode(
    job: _Job,
    ids: list[str],
    db_dir: str | Path | Sequence[Path] | None,
    databases: dict[str, str],
    workers: int,
    timeout: float,
    write_csv: bool = False,
) -> Iterator[InstanceResult]:
    # sql mode's own: the warehouses' credentials and the task families' engines
    from querybench.engines.cloud import cloud_target
    from querybench.engines.pool import QueryJob, QueryPool
    from querybench.tasks.spider2 import FAMILY_KINDS

    jobs: list[QueryJob] = []
    dirs = [Path(db_dir)] if isinstance(db_dir, str | Path) else [Path(d) for d in db_dir or ()]
    warehouses: dict[tuple[str, str], CloudTarget] = {}  # the credentials looked up once a db
    for instance_id in ids:
        path = job.pred_dir / f"{instance_id}.sql"
        family = engine_family(instance_id)
        emulation = None if family == "local" else emulation_spec(FAMILY_KINDS.get(family, ""))
        if family != "local" and emulation is None:
            yield job.failed(
                instance_id, ErrorCode.ENGINE_UNAVAILABLE, f"no {family} engine configured here"
            )
            continue
        database = databases.get(instance_id)
        if database is None or (not dirs and emulation is None):
            reason = "task has no database name" if database is None else "no --db-dir given"
            yield job.failed(instance_id, ErrorCode.ENGINE_UNAVAILABLE, reason)
            continue
        name = f"{database}{'.sqlite' if family == 'local' else '.duckdb'}"  # first folder wins
        db_path = next((d / name for d in dirs if (d / name).is_file()), None)
        target: str | Path | None = db_path
        if db_path is not None and emulation is not None:
            target = emulation.url_for(db_path.resolve())
        elif db_path is None and emulation is not None:  # no emulation built: the warehouse
            key = (emulation.kind.value, database)
            if key not in warehouses:
                warehouses[key] = cloud_target(*key)
            warehouse = warehouses[key]
            if warehouse.url is None:
                missing = f"no emulation {name} built and {warehouse.problem}"
                yield job.failed(instance_id, ErrorCode.ENGINE_UNAVAILABLE, missing)
                continue
            target = warehouse.url
        if target is None:
            where = dirs[0] / name if dirs else name
            yield job.failed(
                instance_id, ErrorCode.ENGINE_UNAVAILABLE, f"database not found: {where}"
            )
            continue
        if not os.path.lexists(path):  # after the engine: a task that cannot run here says so
            yield job.failed(instance_id, ErrorCode.MISSING_PREDICTION, f"no {path.name}")
            continue
        try:
            text = read_prediction_text(path, job.pred_dir, job.limits, (job.gold.dir,))
        except PredictionRefused as exc:
            yield job.failed(instance_id, exc.code, str(exc))
            continue
        sql = extract_official_sql(text)
        if not sql.strip():
            yield job.rejected(
                instance_id, Verdict.statement_failed(ErrorCode.PARSE_ERROR, "empty SQL")
            )
            continue
        jobs.append(QueryJob(instance_id, target, sql))
    with QueryPool(workers=workers, timeout=timeout) as pool:
        for outcome in pool.run(jobs):
            if outcome.error is not None:
                if isinstance(outcome.error.__cause__, MemoryError):
                    yield job.failed(outcome.key, ErrorCode.TOO_LARGE, str(outcome.error))
                else:
                    yield job.rejected(outcome.key, Verdict.engine_error(outcome.error))
                continue
            assert outcome.result is not None
            try:
                pred = _round_trip(job, outcome.key, outcome.result, write_csv)
            except PredictionRefused as exc:
                yield job.failed(outcome.key, exc.code, str(exc))
                continue
            except MemoryError:
                yield job.failed(
                    outcome.key, ErrorCode.TOO_LARGE, "out of memory writing its result CSV"
                )
                continue
            except Exception as exc:  # one result the round trip cannot take fails alone
                yield job.failed(
                    outcome.key, ErrorCode.BAD_PREDICTION_FILE, f"{type(exc).__name__}: {exc}"
                )
                continue
            yield _score(outcome.key, pred, job)


def _round_trip(job: _Job, instance_id: str, result: Result, write_csv: bool) -> pd.DataFrame:
    """The prediction as the official sql mode sees it: its result written as CSV, read back."""
    check_result_shape(len(result.columns), len(result.rows), job.limits)
    text = official_result_csv(result)
    if write_csv:  # replaced, never written through whatever sits at that name
        path = job.pred_dir / f"{instance_id}.csv"
        path.unlink(missing_ok=True)
        with open(path, "x", encoding="utf-8") as f:
            f.write(text)
    import pandas as pd

    return pd.read_csv(io.StringIO(text))
