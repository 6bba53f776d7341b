"""Spider 2.0 agentic (`spider2`): a whole submission folder scored, official and strict.

Denominators: every task (a task without a line is `missing_prediction`; the built-in list, or
with a `--gold-dir` holding its own eval config the tasks that config names), the DBT part (metric
`dbt`), and the tasks whose gold is all here (metric `has_gold`). Metric `official_counted` marks
the instances the official script itself counts (its denominator is the submitted ids only).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from querybench.benchmarks.spider2 import AgenticEvalOptions
from querybench.errors import ErrorCode
from querybench.evaluation.database_answer import DatabaseReader
from querybench.evaluation.record import InstanceResult, OnResult
from querybench.evaluation.spider2.agentic.instance import (
    Answer,
    RunSql,
    official_verdict,
    stopped,
    strict_verdict,
)
from querybench.evaluation.spider2.agentic.submission import (
    Submission,
    SubmissionEntry,
    read_submission,
)
from querybench.evaluation.verdict import Verdict
from querybench.tasks.model import Task
from querybench.tasks.spider2_agentic import has_gold

REFUSED_SPEC = (
    "the submission line carries its own evaluation spec (officially it replaces the gold's, "
    "so a submission could pass itself); refused"
)


def score_instance(
    task: Task,
    submission: Submission,
    gold_dir: Path,
    run_sql: RunSql | None,
    scoring: str,
    reader: DatabaseReader | None = None,
) -> InstanceResult:
    metrics = {
        "has_gold": float(has_gold(task, gold_dir)),
        "dbt": float(task.extra.get("type") == "DBT"),
        "official_counted": float(task.instance_id in submission.official and not submission.fatal),
    }
    official = strict = None
    if not task.gold.eval_params.get("evaluation"):
        official = strict = Verdict.fail(ErrorCode.GOLD_ERROR, "no eval-config entry")
    strict_entry = submission.strict.get(task.instance_id)
    if strict is None and strict_entry is None:
        official = strict = Verdict.fail(
            ErrorCode.MISSING_PREDICTION, "no results_metadata.jsonl line"
        )
    if strict is None and strict_entry is not None and "evaluation" in strict_entry.fields:
        official = strict = Verdict.fail(ErrorCode.BAD_PREDICTION_FILE, REFUSED_SPEC)
    if strict is None and strict_entry is not None:
        with tempfile.TemporaryDirectory(prefix="qb-spider2-") as scratch:
            official, strict = _both(
                task, submission, strict_entry, gold_dir, run_sql, Path(scratch), reader
            )
    assert official is not None and strict is not None
    chosen = strict if scoring == "strict" else official
    return InstanceResult(
        task.instance_id,
        chosen.score,
        chosen.error,
        chosen.message,
        official.score,
        strict.score,
        task.difficulty,
        task.engine,
        metrics,
        chosen.detail,
    )


def _both(
    task: Task,
    submission: Submission,
    strict_entry: SubmissionEntry,
    gold_dir: Path,
    run_sql: RunSql | None,
    scratch: Path,
    reader: DatabaseReader | None,
) -> tuple[Verdict, Verdict]:
    gold = gold_dir / task.instance_id
    folder = submission.folder
    strict = strict_verdict(Answer(task, strict_entry, folder, gold, run_sql, scratch, reader))
    entry = submission.official.get(task.instance_id)
    if submission.fatal is not None:
        official = stopped("scores nothing", submission.fatal)
    elif entry is None:
        official = Verdict.fail(
            ErrorCode.MISSING_PREDICTION,
            f"line {strict_entry.line} is dropped by the official reader (after a bad line)",
        )
    else:
        official = official_verdict(Answer(task, entry, folder, gold, run_sql, scratch, reader))
    return official, strict


@dataclass(frozen=True)
class AgenticEvaluation:
    results: list[InstanceResult]
    warnings: tuple[str, ...]


def evaluate_spider2_agentic(
    predictions: Path,
    *,
    tasks: Sequence[Task],
    gold_dir: Path,
    scoring: str = AgenticEvalOptions.scoring,
    run_sql: RunSql | None = None,
    workers: int = AgenticEvalOptions.workers,
    timeout: float = AgenticEvalOptions.timeout,
    on_result: OnResult | None = None,
    _on_total: Callable[[int], None] | None = None,
) -> AgenticEvaluation:
    """Every task scored from the submission in `predictions` (one result per task, in order);
    `_on_total(n)` first (a progress bar's total). `timeout`: seconds to open one DuckDB
    answer (or gold) and read its tables (`run_sql` bounds its own queries)."""
    if _on_total is not None:
        _on_total(len(tasks))
    submission = read_submission(predictions)
    warnings = list(submission.warnings)
    known = {t.instance_id for t in tasks}
    unknown = sorted(set(submission.strict) - known)
    if unknown:
        warnings.append(
            f"{len(unknown)} submitted id(s) are no task and are ignored (officially "
            f"silently): {', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''}"
        )
    warnings += _line_warnings(submission, known)

    with DatabaseReader(timeout) as reader:

        def one(task: Task) -> InstanceResult:
            result = score_instance(task, submission, gold_dir, run_sql, scoring, reader)
            if on_result is not None:
                on_result(result)
            return result

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            results = list(pool.map(one, tasks))
    return AgenticEvaluation(results, tuple(dict.fromkeys(warnings)))


def _line_warnings(submission: Submission, known: set[str]) -> list[str]:
    out = []
    for entry in submission.strict.values():
        if entry.instance_id not in known:
            continue
        where = f"results_metadata.jsonl:{entry.line} ({entry.instance_id})"
        kind, pred = entry.fields.get("answer_type"), entry.fields.get("answer_or_path")
        if "evaluation" in entry.fields:
            out.append(f"{where}: carries its own evaluation spec; refused in both scorings")
        if kind not in ("answer", "file", "files"):
            out.append(f"{where}: answer_type {kind!r} is officially a silent 0")
        elif kind == "files" and isinstance(pred, str):
            out.append(f"{where}: files given as one string; officially read per character")
        elif kind == "file" and isinstance(pred, str) and pred.endswith(".sql"):
            out.append(
                f"{where}: a .sql answer is run on the task's engine here; the official "
                "evaluate.py runs every .sql answer on BigQuery"
            )
        elif kind == "answer" and not isinstance(pred, str):
            out.append(f"{where}: a non-string answer stops the official code in pdb")
    return out


@dataclass(frozen=True)
class Denominator:
    name: str
    n: int
    correct: int
    official: float
    strict: float


def denominators(
    results: Sequence[InstanceResult], task_set: Path | None = None
) -> list[Denominator]:
    """The honest reading: every task, the DBT part, the tasks with gold here, and the official
    script's own denominator (the submitted ids it reads); "every task" names its set: the
    built-in list, or the eval config `task_set` that replaced it (`gold_dir_config`)."""
    every = f"every task ({task_set})" if task_set is not None else "every task (built-in list)"
    parts = [
        (every, list(results)),
        ("DBT tasks", [r for r in results if r.metrics.get("dbt")]),
        ("gold here", [r for r in results if r.metrics.get("has_gold")]),
        (
            "official evaluate.py's own count",
            [r for r in results if r.metrics.get("official_counted")],
        ),
    ]
    out = []
    for name, kept in parts:
        n = len(kept)
        official = sum(r.official_score or 0.0 for r in kept)
        strict = sum(r.strict_score or 0.0 for r in kept)
        out.append(
            Denominator(
                name,
                n,
                sum(r.score == 1.0 for r in kept),
                official / n if n else 0.0,
                strict / n if n else 0.0,
            )
        )
    return out
