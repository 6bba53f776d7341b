"""Spider 2.0 agentic (`spider2`): a submission folder scored as the official `evaluate.py` does,
and strictly.

Official scoring follows the branch of `evaluate.py` that a line's `answer_type` selects, with the
gold entry's checks (an object, or a list of them):

* `answer`: every `string_match` / `number_match` check scores the text and the best counts; a
  check of another kind repeats the score before it (0 at first). Any exception there stops the
  official code in `pdb`: here the instance gets a `scorer_error` verdict saying why;
* `file`: a path ending in `.sql` is run (officially always on BigQuery; here on the task's
  engine) and its result saved as `pred_result.csv` (nothing is saved for an empty result, so
  the file left by an earlier run, if any, is what gets scored); then every `table_match` /
  `duckdb_match` check scores the file and the *last* one stands (an exception is a 0);
* `files`: `tables_match` with the parameters of the gold entry read as one object, whatever its
  `func` (a list-valued entry crashes the official run; a string is iterated per character);
* any other `answer_type` scores 0.

A line carrying its own `evaluation` replaces the gold's spec in the official code; here it is
refused (0, `bad_prediction_file`) in both scorings. Strict scoring uses the strict matchers,
lets any check of the answer's kind pass, scores an empty SQL result as an empty table, and
refuses paths that leave the submission folder (both scorings).

Denominators: every task (a task without a line is `missing_prediction`), the DBT part (metric
`dbt`), and the tasks whose gold is all here (metric `has_gold`). Metric `official_counted` marks
the instances the official script itself counts (its denominator is the submitted ids only).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from querybench.engines.base import Result
from querybench.evaluation.agentic import score_agentic
from querybench.evaluation.record import InstanceResult
from querybench.evaluation.spider2_eval import official_result_csv
from querybench.evaluation.spider2_submission import Submission, SubmissionEntry, read_submission
from querybench.evaluation.verdict import (
    BAD_PREDICTION_FILE,
    ENGINE_UNAVAILABLE,
    EXEC_ERROR,
    GOLD_ERROR,
    MISSING_PREDICTION,
    SCORER_ERROR,
    WRONG_RESULT,
    Verdict,
)
from querybench.tasks.model import Task
from querybench.tasks.spider2_agentic import FILE_FUNCS, TEXT_FUNCS

SQL_RESULT = "pred_result.csv"
RunSql = Callable[[Task, str], Result]
_CRASH = {GOLD_ERROR, SCORER_ERROR, BAD_PREDICTION_FILE}


class _Stop(Exception):
    """Where the official evaluate.py stops (pdb, or an uncaught exception)."""


def _stopped(how: str, why: str) -> Verdict:
    return Verdict.fail(SCORER_ERROR, f"official evaluate.py {how}: {why}")


@dataclass(frozen=True)
class _Instance:
    task: Task
    entry: SubmissionEntry
    folder: Path  # the submission folder
    gold: Path  # gold/<instance_id>
    run_sql: RunSql | None

    @property
    def fields(self) -> Mapping[str, Any]:
        return self.entry.fields

    @property
    def checks(self) -> list[dict[str, Any]]:
        return list(self.task.gold.eval_params.get("evaluation", []))

    def path(self, name: str) -> Path:
        """`<submission>/<instance_id>/<name>`, refused when it leaves the submission folder."""
        path = Path(os.path.normpath(self.folder / self.task.instance_id / name))
        root = Path(os.path.normpath(self.folder))
        if path != root and root not in path.parents:
            raise _Refused(f"{name!r} leaves the submission folder")
        return path


class _Refused(Exception):
    pass


# --------------------------------------------------------------------------- official


def official_verdict(instance: _Instance) -> Verdict:
    fields = instance.fields
    if "answer_type" not in fields:
        return _stopped("crashes", "KeyError: 'answer_type'")
    kind = fields["answer_type"]
    try:
        if kind == "answer":
            return _official_answer(instance)
        if kind == "file":
            return _official_file(instance)
        if kind == "files":
            return _official_files(instance)
    except _Refused as exc:
        return Verdict.fail(BAD_PREDICTION_FILE, str(exc))
    return Verdict.fail(BAD_PREDICTION_FILE, f"answer_type {kind!r} is none of answer, file, files")


def _official_answer(instance: _Instance) -> Verdict:
    current = Verdict.fail(WRONG_RESULT, "the gold takes no text answer")
    scores = []
    for check in instance.checks:
        if check["func"] in TEXT_FUNCS:
            if "answer_or_path" not in instance.fields:
                return _stopped("stops in pdb", "KeyError: 'answer_or_path'")
            pred = instance.fields["answer_or_path"]
            if not isinstance(pred, str):
                return _stopped("stops in pdb", f"{check['func']} of a non-string {pred!r}")
            current = score_agentic(check["func"], pred, check["parameters"], strict=False)
            if current.error in _CRASH:
                return _stopped("stops in pdb", f"{check['func']}: {current.message}")
        scores.append(current)
    if not scores:
        return _stopped("crashes", "max() of no scores (an empty evaluation list)")
    return next((s for s in scores if s.passed), scores[-1])


def _official_file(instance: _Instance) -> Verdict:
    if "answer_or_path" not in instance.fields:
        return _stopped("crashes", "KeyError: 'answer_or_path'")
    name = instance.fields["answer_or_path"]
    if not isinstance(name, str):
        return _stopped("crashes", f"answer_or_path {name!r} has no .endswith")
    if name.endswith(".sql"):
        ran = _run_sql_answer(instance, name, official=True)
        if isinstance(ran, Verdict):
            return ran
        path = ran
    else:
        path = instance.path(name)
    current = Verdict.fail(WRONG_RESULT, "the gold takes no file answer (table_match/duckdb_match)")
    for check in instance.checks:
        func, params = check["func"], check["parameters"]
        if func not in FILE_FUNCS:
            continue
        if func == "duckdb_match" and not isinstance(params.get("gold"), str):
            return _stopped("crashes", f"duckdb_match gold {params.get('gold')!r} is no file name")
        # The last table_match / duckdb_match check stands; an exception is a 0.
        current = score_agentic(func, path, params, strict=False, gold_dir=instance.gold)
    return current


def _official_files(instance: _Instance) -> Verdict:
    raw = instance.task.gold.eval_params.get("official_evaluation")
    if not isinstance(raw, Mapping):
        return _stopped("crashes", "a list-valued gold evaluation read as one object")
    params = raw.get("parameters")
    if not isinstance(params, Mapping) or "gold" not in params:
        return _stopped("crashes", "the gold evaluation has no parameters.gold")
    golds, names = params["gold"], instance.fields.get("answer_or_path")
    if not isinstance(golds, str | list) or not isinstance(names, str | list):
        return _stopped("crashes", "gold or answer_or_path is not a list of file names")
    if not _iterable_of_str(golds) or not _iterable_of_str(names):
        return _stopped("crashes", "gold or answer_or_path is not a list of file names")
    gold_paths = [instance.gold / g for g in golds]  # a string is taken per character
    pred_paths = [instance.path(n) for n in names]
    verdict = score_agentic(
        "tables_match", pred_paths, {**params, "gold": gold_paths}, strict=False
    )
    if verdict.error in (GOLD_ERROR, SCORER_ERROR):
        return _stopped("crashes", f"tables_match: {verdict.message}")
    return verdict


def _iterable_of_str(value: object) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    )


# --------------------------------------------------------------------------- strict


def strict_verdict(instance: _Instance) -> Verdict:
    kind = instance.fields.get("answer_type")
    pred = instance.fields.get("answer_or_path")
    try:
        if kind == "answer":
            if not isinstance(pred, str):
                return Verdict.fail(BAD_PREDICTION_FILE, f"answer {pred!r} is not a string")
            return _best(instance, TEXT_FUNCS, pred, "text answer")
        if kind == "file":
            if not isinstance(pred, str) or not pred:
                return Verdict.fail(BAD_PREDICTION_FILE, f"file {pred!r} is not a file name")
            ran = (
                _run_sql_answer(instance, pred, official=False)
                if pred.endswith(".sql")
                else instance.path(pred)
            )
            if isinstance(ran, Verdict):
                return ran
            return _best(instance, FILE_FUNCS, ran, "file answer")
        if kind == "files":
            if not isinstance(pred, list) or not all(isinstance(p, str) for p in pred) or not pred:
                return Verdict.fail(BAD_PREDICTION_FILE, f"files {pred!r} is not a list of names")
            return _best(instance, {"tables_match"}, [instance.path(p) for p in pred], "files")
    except _Refused as exc:
        return Verdict.fail(BAD_PREDICTION_FILE, str(exc))
    return Verdict.fail(BAD_PREDICTION_FILE, f"answer_type {kind!r} is none of answer, file, files")


def _best(instance: _Instance, funcs: set[str] | frozenset[str], pred: Any, what: str) -> Verdict:
    verdicts = [
        score_agentic(c["func"], pred, c["parameters"], strict=True, gold_dir=instance.gold)
        for c in instance.checks
        if c["func"] in funcs
    ]
    if not verdicts:
        return Verdict.fail(WRONG_RESULT, f"the gold takes no {what}")
    return next((v for v in verdicts if v.passed), verdicts[0])


# --------------------------------------------------------------------------- SQL answers


def _run_sql_answer(instance: _Instance, name: str, *, official: bool) -> Path | Verdict:
    """The CSV a `.sql` answer's result is scored as (written to a private folder)."""
    source = instance.path(name)
    try:
        sql = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        if official:
            return _stopped("crashes", f"cannot read {name}: {exc}")
        return Verdict.fail(BAD_PREDICTION_FILE, f"cannot read {name}: {exc}")
    if instance.run_sql is None:
        return Verdict.fail(ENGINE_UNAVAILABLE, "no engine to run SQL answers on")
    from querybench.errors import EngineUnavailable, QuerybenchError

    try:
        result = instance.run_sql(instance.task, sql)
    except EngineUnavailable as exc:
        return Verdict.fail(ENGINE_UNAVAILABLE, str(exc))
    except QuerybenchError as exc:
        if official:  # the failure is printed and no pred_result.csv is written
            return _left_over(instance, f"the query failed ({exc})")
        return Verdict.fail(EXEC_ERROR, str(exc))
    if official and not result.rows:
        return _left_over(instance, "the query returned no rows")
    folder = Path(tempfile.mkdtemp(prefix="qb-spider2-sql-"))
    path = folder / SQL_RESULT
    path.write_text(official_result_csv(result), encoding="utf-8")
    return path


def _left_over(instance: _Instance, why: str) -> Path | Verdict:
    stale = instance.path(SQL_RESULT)
    if stale.is_file():
        return stale  # officially the pred_result.csv already there is what gets scored
    return Verdict.fail(WRONG_RESULT, f"{why}; officially no {SQL_RESULT} is written")


def engine_runner(data_dir: Path, timeout: float = 120.0) -> RunSql:
    """Run a SQL answer on its task's database here (SQLite file, or the offline emulation)."""
    from querybench.engines import connect
    from querybench.errors import EngineUnavailable
    from querybench.tasks.databases import task_target

    def run(task: Task, sql: str) -> Result:
        target = task_target(task, data_dir)
        if target is None:
            raise EngineUnavailable(
                f"no {task.engine} database {task.db} here for {task.instance_id}"
            )
        engine = connect(target)
        try:
            return engine.execute(sql, timeout=timeout)
        finally:
            engine.close()

    return run


# --------------------------------------------------------------------------- a folder


def has_gold(task: Task, gold_dir: Path) -> bool:
    """Whether every gold file the task's checks name is here (text checks need none)."""
    checks = task.gold.eval_params.get("evaluation", [])
    names: list[str] = []
    for check in checks:
        if check["func"] in TEXT_FUNCS:
            continue
        gold = check["parameters"].get("gold")
        names += [gold] if isinstance(gold, str) else [g for g in gold or [] if isinstance(g, str)]
    return bool(checks) and all((gold_dir / task.instance_id / n).is_file() for n in names)


REFUSED_SPEC = (
    "the submission line carries its own evaluation spec (officially it replaces the gold's, "
    "so a submission could pass itself); refused"
)


def score_instance(
    task: Task, submission: Submission, gold_dir: Path, run_sql: RunSql | None, scoring: str
) -> InstanceResult:
    metrics = {
        "has_gold": float(has_gold(task, gold_dir)),
        "dbt": float(task.extra.get("type") == "DBT"),
        "official_counted": float(task.instance_id in submission.official and not submission.fatal),
    }
    official = strict = None
    if not task.gold.eval_params.get("evaluation"):
        official = strict = Verdict.fail(GOLD_ERROR, "no eval-config entry")
    strict_entry = submission.strict.get(task.instance_id)
    entry = submission.official.get(task.instance_id)
    if strict is None and strict_entry is None:
        official = strict = Verdict.fail(MISSING_PREDICTION, "no results_metadata.jsonl line")
    if strict is None and strict_entry is not None and "evaluation" in strict_entry.fields:
        official = strict = Verdict.fail(BAD_PREDICTION_FILE, REFUSED_SPEC)
    gold = gold_dir / task.instance_id
    if strict is None and strict_entry is not None:
        strict = strict_verdict(_Instance(task, strict_entry, submission.folder, gold, run_sql))
        if submission.fatal is not None:
            official = _stopped("scores nothing", submission.fatal)
        elif entry is None:
            official = Verdict.fail(
                MISSING_PREDICTION,
                f"line {strict_entry.line} is dropped by the official reader (after a bad line)",
            )
        else:
            official = official_verdict(_Instance(task, entry, submission.folder, gold, run_sql))
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
    )


@dataclass(frozen=True)
class AgenticEvaluation:
    results: list[InstanceResult]
    warnings: tuple[str, ...]


def evaluate_spider2_agentic(
    tasks: Sequence[Task],
    predictions: Path,
    gold_dir: Path,
    *,
    scoring: str = "official",
    run_sql: RunSql | None = None,
    workers: int = 2,
    on_result: Callable[[InstanceResult], None] | None = None,
) -> AgenticEvaluation:
    """Every task scored from the submission in `predictions` (one result per task, in order)."""
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

    def one(task: Task) -> InstanceResult:
        result = score_instance(task, submission, gold_dir, run_sql, scoring)
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


def denominators(results: Sequence[InstanceResult]) -> list[Denominator]:
    """The honest reading: every task, the DBT part, the tasks with gold here, and the official
    script's own denominator (the submitted ids it reads)."""
    parts = [
        ("every task", list(results)),
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
