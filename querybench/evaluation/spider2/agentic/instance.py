"""Spider 2.0 agentic (`spider2`): one submission line scored as the official `evaluate.py`
scores it, and strictly.

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
refuses paths that leave the submission folder (both scorings). A path is resolved as the
system resolves it (both scorings): `<id>/../shared_files/x.csv` from a task folder `<id>/`
that does not exist is unreadable (0; officially a `.sql` answer there crashes the run), though
its lexical form names a file that is there.

`evaluate.py` scores a whole submission folder with these verdicts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from querybench.engines.base import Result
from querybench.errors import AnswerRefused, ErrorCode, PredictionRefused, UnresolvablePath
from querybench.evaluation.database_answer import DatabaseReader
from querybench.evaluation.prediction_file import ReadLimits, inside_folder, read_prediction_text
from querybench.evaluation.spider2.agentic.score import score_agentic
from querybench.evaluation.spider2.agentic.submission import SubmissionEntry
from querybench.evaluation.spider2.evaluate import official_result_csv
from querybench.evaluation.verdict import Verdict
from querybench.tasks.model import Task
from querybench.tasks.spider2_agentic import FILE_FUNCS, TEXT_FUNCS

SQL_RESULT = "pred_result.csv"
RunSql = Callable[[Task, str], Result]
_CRASH = {ErrorCode.GOLD_ERROR, ErrorCode.SCORER_ERROR, ErrorCode.BAD_PREDICTION_FILE}


def stopped(how: str, why: str) -> Verdict:
    """Where the official evaluate.py stops (pdb, or an uncaught exception): an error verdict."""
    return Verdict.fail(ErrorCode.SCORER_ERROR, f"official evaluate.py {how}: {why}")


@dataclass(frozen=True)
class Answer:
    """One task's submission line, with where its files, its gold and a scratch folder are."""

    task: Task
    entry: SubmissionEntry
    folder: Path  # the submission folder
    gold: Path  # gold/<instance_id>
    run_sql: RunSql | None
    scratch: Path  # where a SQL answer's result is written (never the submission)
    reader: DatabaseReader | None = None  # reads DuckDB answers and golds (None: per call)

    @property
    def fields(self) -> Mapping[str, Any]:
        return self.entry.fields

    @property
    def checks(self) -> list[dict[str, Any]]:
        return list(self.task.gold.eval_params.get("evaluation", []))

    def path(self, name: str) -> Path:
        """`<submission>/<instance_id>/<name>`, refused when it leaves the submission folder,
        and unreadable (`UnresolvablePath`) when the operating system could not resolve it."""
        joined = self.folder / self.task.instance_id / name
        path = Path(os.path.normpath(joined))
        root = Path(os.path.normpath(self.folder))
        if path != root and root not in path.parents:
            raise AnswerRefused(f"{name!r} leaves the submission folder")
        _check_resolvable(self.folder, Path(self.task.instance_id, name))
        try:  # `<id>/` itself, or a folder in `name`, a symlink out (to the gold's `<id>/`)
            inside_folder(path, self.folder)
        except PredictionRefused as exc:
            raise AnswerRefused(str(exc)) from None
        return path


def _check_resolvable(folder: Path, relative: Path) -> None:
    """`UnresolvablePath` when a `..` of `relative` follows a part that is no folder;
    `AnswerRefused` when it follows a link (where the system's `..` and the lexical one part)."""
    walked = folder
    for part in relative.parts:
        if part == "..":
            if walked.is_symlink():
                raise AnswerRefused(f"{relative} steps back out of the link {walked.name}")
            if not walked.is_dir():
                there = walked.relative_to(folder)
                raise UnresolvablePath(
                    f"{relative} cannot be opened: {there}/ is no folder, so the system cannot "
                    f"resolve {there}/.. (officially unreadable)"
                )
        walked = walked / part


# --------------------------------------------------------------------------- official


def official_verdict(instance: Answer) -> Verdict:
    fields = instance.fields
    if "answer_type" not in fields:
        return stopped("crashes", "KeyError: 'answer_type'")
    kind = fields["answer_type"]
    try:
        if kind == "answer":
            return _official_answer(instance)
        if kind == "file":
            return _official_file(instance)
        if kind == "files":
            return _official_files(instance)
    except AnswerRefused as exc:
        return Verdict.fail(ErrorCode.BAD_PREDICTION_FILE, str(exc))
    return Verdict.fail(
        ErrorCode.BAD_PREDICTION_FILE, f"answer_type {kind!r} is none of answer, file, files"
    )


def _official_answer(instance: Answer) -> Verdict:
    current = Verdict.fail(ErrorCode.WRONG_RESULT, "the gold takes no text answer")
    scores = []
    for check in instance.checks:
        if check["func"] in TEXT_FUNCS:
            if "answer_or_path" not in instance.fields:
                return stopped("stops in pdb", "KeyError: 'answer_or_path'")
            pred = instance.fields["answer_or_path"]
            if not isinstance(pred, str):
                return stopped("stops in pdb", f"{check['func']} of a non-string {pred!r}")
            current = score_agentic(check["func"], pred, check["parameters"], strict=False)
            if current.error in _CRASH:
                return stopped("stops in pdb", f"{check['func']}: {current.message}")
        scores.append(current)
    if not scores:
        return stopped("crashes", "max() of no scores (an empty evaluation list)")
    return next((s for s in scores if s.passed), scores[-1])


def _official_file(instance: Answer) -> Verdict:
    if "answer_or_path" not in instance.fields:
        return stopped("crashes", "KeyError: 'answer_or_path'")
    name = instance.fields["answer_or_path"]
    if not isinstance(name, str):
        return stopped("crashes", f"answer_or_path {name!r} has no .endswith")
    if name.endswith(".sql"):
        ran = _run_sql_answer(instance, name, official=True)
        if isinstance(ran, Verdict):
            return ran
        path = ran
    else:
        path = instance.path(name)
    current = Verdict.fail(
        ErrorCode.WRONG_RESULT, "the gold takes no file answer (table_match/duckdb_match)"
    )
    for check in instance.checks:
        func, params = check["func"], check["parameters"]
        if func not in FILE_FUNCS:
            continue
        if func == "duckdb_match" and not isinstance(params.get("gold"), str):
            return stopped("crashes", f"duckdb_match gold {params.get('gold')!r} is no file name")
        # The last table_match / duckdb_match check stands; an exception is a 0.
        current = score_agentic(
            func, path, params, strict=False, gold_dir=instance.gold, reader=instance.reader
        )
    return current


def _official_files(instance: Answer) -> Verdict:
    raw = instance.task.gold.eval_params.get("official_evaluation")
    if not isinstance(raw, Mapping):
        return stopped("crashes", "a list-valued gold evaluation read as one object")
    params = raw.get("parameters")
    if not isinstance(params, Mapping) or "gold" not in params:
        return stopped("crashes", "the gold evaluation has no parameters.gold")
    golds, names = params["gold"], instance.fields.get("answer_or_path")
    if not isinstance(golds, str | list) or not isinstance(names, str | list):
        return stopped("crashes", "gold or answer_or_path is not a list of file names")
    if not _iterable_of_str(golds) or not _iterable_of_str(names):
        return stopped("crashes", "gold or answer_or_path is not a list of file names")
    gold_paths = [instance.gold / g for g in golds]  # a string is taken per character
    pred_paths = [instance.path(n) for n in names]
    verdict = score_agentic(
        "tables_match", pred_paths, {**params, "gold": gold_paths}, strict=False
    )
    if verdict.error in (ErrorCode.GOLD_ERROR, ErrorCode.SCORER_ERROR):
        return stopped("crashes", f"tables_match: {verdict.message}")
    return verdict


def _iterable_of_str(value: object) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    )


# --------------------------------------------------------------------------- strict


def strict_verdict(instance: Answer) -> Verdict:
    kind = instance.fields.get("answer_type")
    pred = instance.fields.get("answer_or_path")
    try:
        if kind == "answer":
            if not isinstance(pred, str):
                return Verdict.fail(
                    ErrorCode.BAD_PREDICTION_FILE, f"answer {pred!r} is not a string"
                )
            return _best(instance, TEXT_FUNCS, pred, "text answer")
        if kind == "file":
            if not isinstance(pred, str) or not pred:
                return Verdict.fail(
                    ErrorCode.BAD_PREDICTION_FILE, f"file {pred!r} is not a file name"
                )
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
                return Verdict.fail(
                    ErrorCode.BAD_PREDICTION_FILE, f"files {pred!r} is not a list of names"
                )
            return _best(instance, {"tables_match"}, [instance.path(p) for p in pred], "files")
    except AnswerRefused as exc:
        return Verdict.fail(ErrorCode.BAD_PREDICTION_FILE, str(exc))
    return Verdict.fail(
        ErrorCode.BAD_PREDICTION_FILE, f"answer_type {kind!r} is none of answer, file, files"
    )


def _best(instance: Answer, funcs: set[str] | frozenset[str], pred: Any, what: str) -> Verdict:
    verdicts = [
        score_agentic(
            c["func"],
            pred,
            c["parameters"],
            strict=True,
            gold_dir=instance.gold,
            reader=instance.reader,
        )
        for c in instance.checks
        if c["func"] in funcs
    ]
    if not verdicts:
        return Verdict.fail(ErrorCode.WRONG_RESULT, f"the gold takes no {what}")
    return next((v for v in verdicts if v.passed), verdicts[0])


# --------------------------------------------------------------------------- SQL answers


def _run_sql_answer(instance: Answer, name: str, *, official: bool) -> Path | Verdict:
    """The CSV a `.sql` answer's result is scored as (written to a private folder)."""
    try:
        source = instance.path(name)
    except UnresolvablePath as exc:  # officially `open()` outside any try: the run stops
        return (
            stopped("crashes", str(exc))
            if official
            else Verdict.fail(ErrorCode.BAD_PREDICTION_FILE, str(exc))
        )
    try:  # read as every prediction file is: regular, in its folder, bounded
        sql = read_prediction_text(source, source.parent, ReadLimits())
    except PredictionRefused as exc:
        if exc.code is not ErrorCode.MISSING_PREDICTION:  # a FIFO, a link out, too big, not UTF-8
            return Verdict.fail(exc.code, f"cannot read {name}: {exc}")
        if official:
            return stopped("crashes", f"cannot read {name}: {exc}")
        return Verdict.fail(ErrorCode.BAD_PREDICTION_FILE, f"cannot read {name}: {exc}")
    if instance.run_sql is None:
        return Verdict.fail(ErrorCode.ENGINE_UNAVAILABLE, "no engine to run SQL answers on")
    from querybench.errors import EngineError, EngineUnavailable, QuerybenchError

    try:
        result = instance.run_sql(instance.task, sql)
    except EngineUnavailable as exc:
        return Verdict.fail(ErrorCode.ENGINE_UNAVAILABLE, str(exc))
    except EngineError as exc:
        if official:  # the failure is printed and no pred_result.csv is written
            return _left_over(instance, f"the query failed ({exc})", Verdict.engine_error(exc))
        return Verdict.engine_error(exc)
    except QuerybenchError as exc:
        if official:
            return _left_over(instance, f"the query failed ({exc})")
        return Verdict.statement_failed(ErrorCode.EXEC_ERROR, str(exc))
    if official and not result.rows:
        return _left_over(instance, "the query returned no rows")
    path = instance.scratch / ("official" if official else "strict") / SQL_RESULT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(official_result_csv(result), encoding="utf-8")
    return path


def _left_over(instance: Answer, why: str, failed: Verdict | None = None) -> Path | Verdict:
    """The `pred_result.csv` an earlier run left, else the 0 of `why` (with the failed
    query's own code and detail, e.g. `timeout`, when there is one)."""
    stale = instance.path(SQL_RESULT)
    if stale.is_file():
        return stale  # officially the pred_result.csv already there is what gets scored
    message = f"{why}; officially no {SQL_RESULT} is written"
    if failed is not None and failed.error is not None:
        return Verdict.fail(failed.error, message, failed.detail)
    return Verdict.fail(ErrorCode.WRONG_RESULT, message)


def engine_runner(data_dir: Path | None, timeout: float = 120.0) -> RunSql:
    """Run a SQL answer on its task's database here (SQLite file, or the offline emulation),
    looked up in `data_dir`, or in the data roots when None. The answer runs in a killable
    child (`engines.pool.run_one`), as every query of a model does: its timeout covers
    translation, execution and fetch, and a single call no engine interrupts (SQLite's
    `LIKE`, `printf`) is killed at it. A failure is remembered for the same task and SQL
    (both scorings ask for each answer): a timeout costs one timeout, not two."""
    import threading

    from querybench.engines.pool import run_one
    from querybench.errors import EngineError, EngineUnavailable
    from querybench.tasks.databases import task_target

    failed: dict[tuple[str, str], EngineError] = {}
    lock = threading.Lock()

    def run(task: Task, sql: str) -> Result:
        target = task_target(task, data_dir)
        if target is None:
            raise EngineUnavailable(
                f"no {task.engine} database {task.db} here for {task.instance_id}"
            )
        key = (task.instance_id, sql)
        with lock:
            known = failed.get(key)
        if known is not None:
            raise known
        outcome = run_one(target, sql, timeout, max_rows=None, key=task.instance_id)
        if outcome.error is not None:
            with lock:
                failed[key] = outcome.error
            raise outcome.error
        assert outcome.result is not None
        return outcome.result

    return run
