"""Spider 2.0-DBT scoring: the database each project run leaves behind, against the gold one.

A predictions folder holds one folder per instance, as the official DBT agent leaves its
output: `<instance_id>/<gold file name>` (e.g. `playbook001/playbook.duckdb`). Each task's
eval-config entries (`duckdb_match` for all 68) are scored with the official and the strict
matcher; gold files live at `gold/<instance_id>/<file>`.

Two denominators, both reported: every task (the honest one; a task whose gold is missing counts
as 0 with the error `gold_error`) and the tasks whose gold files are all present (metric
`has_gold`), which is what a score over the public gold zip means.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from querybench.benchmarks.spider2 import DbtEvalOptions
from querybench.errors import ErrorCode, PredictionRefused
from querybench.evaluation.database_answer import DatabaseReader
from querybench.evaluation.prediction_file import inside_folder
from querybench.evaluation.record import InstanceResult, OnResult
from querybench.evaluation.spider2.agentic.score import score_agentic
from querybench.evaluation.verdict import Verdict
from querybench.tasks.model import Task


def dbt_gold_dir(data_dir: Path) -> Path:
    """Where the DBT gold lives under a data root: `<instance_id>/<file>` and the eval config."""
    return data_dir / "spider2" / "spider2-dbt" / "evaluation_suite" / "gold"


def gold_files(task: Task, gold_dir: Path) -> list[Path]:
    """The gold files the task's eval-config entries name."""
    checks = task.gold.eval_params.get("evaluation", [])
    return [
        gold_dir / task.instance_id / str(c["parameters"]["gold"])
        for c in checks
        if isinstance(c["parameters"].get("gold"), str)
    ]


def prediction_file(task: Task, predictions: Path, gold: str) -> Path:
    return predictions / task.instance_id / Path(gold).name


def score_dbt_task(
    task: Task, predictions: Path, gold_dir: Path, reader: DatabaseReader | None = None
) -> InstanceResult:
    """Both verdicts of one task; its databases are read by `reader` (in killable children,
    locked down: `database_answer`), or by a reader of this call's own."""
    if reader is None:
        with DatabaseReader() as own:
            return score_dbt_task(task, predictions, gold_dir, own)
    checks: list[dict[str, Any]] = task.gold.eval_params.get("evaluation", [])
    golds = gold_files(task, gold_dir)
    has_gold = bool(checks) and all(p.is_file() for p in golds)
    metrics = {"has_gold": float(has_gold)}
    if not checks:
        return _result(
            task, Verdict.fail(ErrorCode.GOLD_ERROR, "no eval-config entry"), None, metrics
        )
    predicted = [prediction_file(task, predictions, p.name) for p in golds]
    missing_gold = ", ".join(str(p) for p in golds if not p.is_file())
    if not any(os.path.lexists(p) for p in predicted):  # a FIFO or a link is read, refused
        message = f"no {predicted[0] if predicted else 'prediction'}"
        if missing_gold:
            message += f" (and the gold file is missing: {missing_gold})"
        return _result(task, Verdict.fail(ErrorCode.MISSING_PREDICTION, message), None, metrics)
    if not has_gold:
        verdict = Verdict.fail(ErrorCode.GOLD_ERROR, f"gold file missing: {missing_gold}")
        return _result(task, verdict, None, metrics)
    try:  # `<id>/` a symlink out of the predictions folder (to the gold's `<id>/`)
        for answer in predicted:
            inside_folder(answer, predictions)
    except PredictionRefused as exc:
        return _result(task, Verdict.fail(exc.code, str(exc)), None, metrics)
    official = strict = Verdict.fail(ErrorCode.GOLD_ERROR, "no file check")
    folder = gold_dir / task.instance_id
    for check in checks:  # the official driver keeps the verdict of the last file check
        params = check["parameters"]
        prediction = prediction_file(task, predictions, str(params.get("gold", "")))
        path = prediction if os.path.lexists(prediction) else None
        official = score_agentic(
            check["func"], path, params, strict=False, gold_dir=folder, reader=reader
        )
        strict = score_agentic(
            check["func"], path, params, strict=True, gold_dir=folder, reader=reader
        )
    return _result(task, official, strict, metrics)


def _result(
    task: Task, official: Verdict, strict: Verdict | None, metrics: dict[str, float]
) -> InstanceResult:
    strict = strict or official
    return InstanceResult(
        task.instance_id,
        official.score,
        official.error,
        official.message,
        official.score,
        strict.score,
        task.difficulty,
        task.engine,
        metrics,
        official.detail,
    )


def evaluate_spider2_dbt(
    predictions: Path,
    *,
    tasks: Sequence[Task],
    gold_dir: Path,
    workers: int = DbtEvalOptions.workers,
    timeout: float = DbtEvalOptions.timeout,
    on_result: OnResult | None = None,
    _on_total: Callable[[int], None] | None = None,
) -> list[InstanceResult]:
    """One result per task, in task order; `_on_total(n)` first (a progress bar's total).
    `timeout`: seconds to open one database and read its tables (the child is killed at it)."""
    if _on_total is not None:
        _on_total(len(tasks))
    with DatabaseReader(timeout) as reader:

        def one(task: Task) -> InstanceResult:
            result = score_dbt_task(task, predictions, gold_dir, reader)
            if on_result is not None:
                on_result(result)
            return result

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            return list(pool.map(one, tasks))


def with_gold_summary(results: Sequence[InstanceResult]) -> dict[str, float | int]:
    """Scores over the tasks whose gold is present (the second denominator)."""
    kept = [r for r in results if r.metrics.get("has_gold")]
    n = len(kept)
    return {
        "n": n,
        "correct": sum(r.score == 1.0 for r in kept),
        "official_score": sum(r.official_score or 0.0 for r in kept) / n if n else 0.0,
        "strict_score": sum(r.strict_score or 0.0 for r in kept) / n if n else 0.0,
    }
