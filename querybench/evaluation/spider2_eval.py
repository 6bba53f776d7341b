"""Evaluating a folder of Spider 2.0 predictions: exec_result (CSV) or sql mode.

Every task of the eval config is scored, so the denominator is honest: a task without a
prediction scores 0 with `missing_prediction`.
"""

from __future__ import annotations

import io
import multiprocessing
import sys
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Literal

import pandas as pd

from querybench.engines.base import Result
from querybench.errors import DataError
from querybench.evaluation.large_result import ResultTable, read_result
from querybench.evaluation.record import InstanceResult
from querybench.evaluation.spider2 import (
    OnResult,
    failed,
    instance_result,
    score_frame,
    variant_of,
)
from querybench.evaluation.spider2_gold import Benchmark, Spider2Gold, engine_family
from querybench.evaluation.spider2_official import Variant
from querybench.evaluation.verdict import (
    BAD_PREDICTION_FILE,
    ENGINE_UNAVAILABLE,
    GOLD_ERROR,
    MISSING_PREDICTION,
    PARSE_ERROR,
    Verdict,
)
from querybench.tasks.databases import EMULATION_URLS
from querybench.tasks.input_files import read_jsonl

Mode = Literal["exec_result", "sql"]
Scoring = Literal["official", "strict"]

_FENCED_SQL = "```sql\n"
_CHUNK = 16  # tasks per worker-process job in exec_result mode
# BigQuery and Snowflake tasks run on `<db>.duckdb` emulation files in --db-dir when present.
_EMULATION_URL = {"bq": EMULATION_URLS["bigquery"], "sf": EMULATION_URLS["snowflake"]}


def evaluate_spider2(
    benchmark: Benchmark,
    predictions: str | Path,
    gold_dir: str | Path,
    *,
    mode: Mode = "exec_result",
    scoring: Scoring = "official",
    db_dir: str | Path | Sequence[Path] | None = None,
    tasks_file: str | Path | None = None,
    workers: int = 2,
    timeout: float = 60.0,
    on_result: OnResult | None = None,
    write_csv: bool = False,
) -> list[InstanceResult]:
    """Score every task of the gold's eval config. In sql mode with `write_csv`, each query
    that ran also leaves `<id>.csv` beside its `<id>.sql`: the file the official sql mode
    writes, which exec_result mode reads."""
    pred_dir = Path(predictions)
    if not pred_dir.is_dir():
        raise DataError(f"predictions folder not found: {pred_dir}")
    gold = Spider2Gold(gold_dir, benchmark)
    if mode == "exec_result":
        results: Iterable[InstanceResult] = _exec_result_mode(gold, pred_dir, scoring, workers)
    else:
        databases = _task_databases(tasks_file) if tasks_file else {}
        results = _sql_mode(gold, pred_dir, scoring, db_dir, databases, workers, timeout, write_csv)
    out = []
    for result in results:
        out.append(result)
        if on_result is not None:
            on_result(result)
    return sorted(out, key=lambda r: r.instance_id)


def _exec_result_mode(
    gold: Spider2Gold, pred_dir: Path, scoring: Scoring, workers: int
) -> Iterator[InstanceResult]:
    """Score every task; with several workers, chunks of tasks go to worker processes."""
    ids = sorted(gold.specs)
    if workers <= 1 or len(ids) < 2 * _CHUNK:
        yield from _score_ids(gold, pred_dir, scoring, ids)
        return
    chunks = [ids[i : i + _CHUNK] for i in range(0, len(ids), _CHUNK)]
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    gold.result_paths(ids[0])  # list the gold folder once, before the workers start
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_adopt_gold, initargs=(gold,)
    ) as pool:
        futures = [pool.submit(_score_chunk, pred_dir, scoring, chunk) for chunk in chunks]
        for future in as_completed(futures):
            yield from future.result()


_worker_gold: Spider2Gold | None = None


def _adopt_gold(gold: Spider2Gold) -> None:
    """Worker-process initializer: the parent's gold (config read, folder listed) is reused."""
    global _worker_gold
    _worker_gold = gold


def _score_chunk(pred_dir: Path, scoring: Scoring, ids: list[str]) -> list[InstanceResult]:
    assert _worker_gold is not None, "worker started without its gold"
    return list(_score_ids(_worker_gold, pred_dir, scoring, ids))


def _score_ids(
    gold: Spider2Gold, pred_dir: Path, scoring: Scoring, ids: list[str]
) -> Iterator[InstanceResult]:
    variant = variant_of(gold.benchmark)
    for instance_id in ids:
        path = pred_dir / f"{instance_id}.csv"
        if not path.is_file():
            yield failed(instance_id, Verdict.fail(MISSING_PREDICTION, f"no {path.name}"), gold)
            continue
        try:
            pred = read_result(path)
        except DataError as exc:
            yield failed(instance_id, Verdict.fail(BAD_PREDICTION_FILE, str(exc)), gold)
            continue
        yield _score(instance_id, pred, gold, scoring, variant)


def _score(
    instance_id: str,
    pred: ResultTable,
    gold: Spider2Gold,
    scoring: Scoring,
    variant: Variant,
) -> InstanceResult:
    try:
        golds, single = gold.load_results(instance_id)
    except DataError as exc:
        return failed(instance_id, Verdict.fail(GOLD_ERROR, str(exc)), gold)
    verdicts = score_frame(pred, golds, single, gold.specs[instance_id], variant)
    return instance_result(instance_id, verdicts, scoring, gold)


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
    gold: Spider2Gold,
    pred_dir: Path,
    scoring: Scoring,
    db_dir: str | Path | Sequence[Path] | None,
    databases: dict[str, str],
    workers: int,
    timeout: float,
    write_csv: bool = False,
) -> Iterator[InstanceResult]:
    from querybench.engines.pool import QueryJob, QueryPool

    variant = variant_of(gold.benchmark)
    jobs: list[QueryJob] = []
    for instance_id in sorted(gold.specs):
        path = pred_dir / f"{instance_id}.sql"
        if not path.is_file():
            yield failed(instance_id, Verdict.fail(MISSING_PREDICTION, f"no {path.name}"), gold)
            continue
        family = engine_family(instance_id)
        if family != "local" and family not in _EMULATION_URL:
            yield failed(
                instance_id,
                Verdict.fail(ENGINE_UNAVAILABLE, f"no {family} engine configured here"),
                gold,
            )
            continue
        database = databases.get(instance_id)
        dirs = [Path(db_dir)] if isinstance(db_dir, str | Path) else [Path(d) for d in db_dir or ()]
        if not dirs or database is None:
            reason = "task has no database name" if dirs else "no --db-dir given"
            yield failed(instance_id, Verdict.fail(ENGINE_UNAVAILABLE, reason), gold)
            continue
        name = f"{database}{'.sqlite' if family == 'local' else '.duckdb'}"  # first folder wins
        db_path = next((d / name for d in dirs if (d / name).is_file()), dirs[0] / name)
        if not db_path.is_file():
            yield failed(
                instance_id,
                Verdict.fail(ENGINE_UNAVAILABLE, f"database not found: {db_path}"),
                gold,
            )
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            yield failed(instance_id, Verdict.fail(BAD_PREDICTION_FILE, str(exc)), gold)
            continue
        sql = extract_official_sql(text)
        if not sql.strip():
            yield failed(instance_id, Verdict.fail(PARSE_ERROR, "empty SQL"), gold)
            continue
        target = db_path if family == "local" else f"{_EMULATION_URL[family]}{db_path.resolve()}"
        jobs.append(QueryJob(instance_id, target, sql))
    with QueryPool(workers=workers, timeout=timeout) as pool:
        for outcome in pool.run(jobs):
            if outcome.error is not None:
                verdict = Verdict.fail(outcome.error.code, str(outcome.error))
                yield failed(outcome.key, verdict, gold)
                continue
            assert outcome.result is not None
            try:
                text = official_result_csv(outcome.result)
                if write_csv:
                    (pred_dir / f"{outcome.key}.csv").write_text(text, encoding="utf-8")
                pred = pd.read_csv(io.StringIO(text))
            except (pd.errors.EmptyDataError, ValueError) as exc:
                yield failed(outcome.key, Verdict.fail(BAD_PREDICTION_FILE, str(exc)), gold)
                continue
            yield _score(outcome.key, pred, gold, scoring, variant)
