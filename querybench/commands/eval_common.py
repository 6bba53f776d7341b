"""What every eval command shares, free of typer and rich: the two terminals, a usage error
(`error: ...`, exit 2 by `SystemExit`, which typer lets through as its own `Exit`), the checks
of its inputs, scoring under a progress bar, and the results file and summary at the end."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from querybench.benchmarks.eval_options import EXECUTOR
from querybench.errors import QuerybenchError
from querybench.evaluation.record import InstanceResult
from querybench.report.summary import print_summary, summarise
from querybench.report.terminal import Terminal
from querybench.runs.manifest import Machine

if TYPE_CHECKING:
    from querybench.runs.manifest import Manifest
    from querybench.tasks.model import Task

console = Terminal(stderr=True)
out_console = Terminal()


def usage_error(message: str) -> NoReturn:
    console.error(message)
    raise SystemExit(2)


def warn(message: str) -> None:
    console.warning(message)


def check_predictions_kind(predictions: Path, mode: str) -> None:
    """A folder of the other mode's files, or of none, scores 0 everywhere: say so before
    scoring it."""
    if not predictions.is_dir():
        return
    found = {kind: sum(1 for _ in predictions.glob(f"*.{kind}")) for kind in ("csv", "sql")}
    wanted, other = ("csv", "sql") if mode == "exec_result" else ("sql", "csv")
    if not found["csv"] and not found["sql"]:
        warn(
            f"{predictions} holds no <instance_id>.{wanted} file (nor any .{other}): every "
            "instance will be missing_prediction; is it the right folder?"
        )
    if not found[wanted] and found[other]:
        hint = "--mode sql" if mode == "exec_result" else "--mode exec_result"
        warn(
            f"--mode {mode} reads <instance_id>.{wanted} files, but {predictions} holds "
            f"{found[other]} .{other} files and no .{wanted}: every instance will be "
            f"missing_prediction; did you mean {hint}?"
        )


def check_sql_mode_only(**given: Path | None) -> None:
    """Flags only sql mode reads, given to exec_result mode (which reads the CSV results and
    runs nothing): said, rather than dropped in silence."""
    for name, value in given.items():
        if value is not None:
            flag = "--" + name.replace("_", "-")
            warn(f"{flag} is read only with --mode sql; --mode exec_result ignores {value}")


def check_dbt_predictions(predictions: Path) -> None:
    """A DBT outputs folder without a single project database scores 0 everywhere: say so, and
    what it should hold, before scoring it."""
    if predictions.is_dir() and next(predictions.glob("*/*.duckdb"), None) is None:
        warn(
            f"{predictions} holds no <instance_id>/<db>.duckdb file (the database a DBT "
            "project run leaves, e.g. playbook001/playbook.duckdb): every instance will be "
            "missing_prediction; is it the right folder?"
        )


def check_prediction_names(
    predictions: Path, mode: str, benchmark: str, results: Sequence[InstanceResult]
) -> None:
    """Files of the right kind, none named after a task: another benchmark's folder?"""
    from querybench.errors import ErrorCode

    if not all(r.error == ErrorCode.MISSING_PREDICTION for r in results):
        return  # some were found: no need to list the folder
    suffix = "csv" if mode == "exec_result" else "sql"
    files = sorted(predictions.glob(f"*.{suffix}")) if predictions.is_dir() else []
    if files:
        warn(
            f"{predictions} holds {len(files)} .{suffix} files but none is named after a "
            f"{benchmark} instance id (found e.g. {files[0].name}, expected e.g. "
            f"{results[0].instance_id}.{suffix}): another benchmark's predictions?"
        )


def check_db_dir(db_dir: Path | None, pattern: str, expected: str) -> None:
    """An explicit --db-dir without a single database can only be a mistake: exit 2."""
    if db_dir is None:
        return
    if not db_dir.is_dir():
        usage_error(f"--db-dir {db_dir} is not a folder (expected {expected})")
    if next(db_dir.glob(pattern), None) is None:
        usage_error(f"--db-dir {db_dir} holds no database: expected {expected}, found none")


def check_gold_dir(gold_dir: Path | None, expected: str) -> None:
    """An explicit --gold-dir that is no folder would score every instance 0: exit 2."""
    if gold_dir is not None and not gold_dir.is_dir():
        usage_error(f"--gold-dir {gold_dir} is not a folder (expected {expected})")


def check_output(output: Path | None) -> None:
    """An --output that cannot be written (a folder, a read-only place) exits 2 before the
    scoring, not with a traceback after it, the scores lost."""
    if output is None:
        return
    if output.is_dir():
        usage_error(
            f"--output {output} is a folder: name the results file (e.g. {output}/scores.jsonl)"
        )
    if _in_place(output):
        if not os.access(output, os.W_OK):
            usage_error(f"--output {output} cannot be written: permission denied")
        return
    existing = output.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        usage_error(f"--output {output} cannot be written: {existing} is not a folder")
    try:
        _partial(output).parent.mkdir(parents=True, exist_ok=True)
        _partial(output).open("x", encoding="utf-8").close()
        _partial(output).unlink()
    except OSError as exc:
        usage_error(f"--output {output} cannot be written: {exc.strerror or exc}")


def _in_place(output: Path) -> bool:
    """A pipe, a device or a path under /dev or /proc (`--output /dev/stdout`, whatever fd 1
    is) is written to as it is: a file renamed over it would replace it (as root) or be
    refused beside it, in /dev."""
    absolute = os.path.abspath(output)
    return output.exists() and (not output.is_file() or absolute.startswith(("/dev/", "/proc/")))


def _partial(output: Path) -> Path:
    """The file written before it is renamed over `output`'s target (a link is kept)."""
    target = Path(os.path.realpath(output))
    return target.with_name(f".{target.name}.{os.getpid()}.partial")


def write_results(results: Sequence[InstanceResult], output: Path) -> None:
    """Written beside `output`, then renamed over it: Ctrl-C or a full disk leaves the old file
    (or none), never half of the new one."""
    if _in_place(output):
        with output.open("w", encoding="utf-8") as f:
            f.writelines(json.dumps(r.to_json()) + "\n" for r in results)
        return
    partial = _partial(output)
    try:
        partial.parent.mkdir(parents=True, exist_ok=True)
        with partial.open("w", encoding="utf-8") as f:
            f.writelines(json.dumps(r.to_json()) + "\n" for r in results)
        os.replace(partial, os.path.realpath(output))
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Scored:
    """An eval's results and the call that scored them (what its manifest records)."""

    results: list[InstanceResult]
    benchmark: str
    predictions: Path
    options: dict[str, Any]
    machine: Machine

    def manifest(self) -> Manifest:
        from querybench.runs import manifest
        from querybench.runs.evaluate import resolved_options

        resolved = resolved_options(self.benchmark, self.options)
        ids = [r.instance_id for r in self.results]
        return manifest.build(
            "eval",
            self.benchmark,
            self.predictions,
            self.options,
            resolved,
            ids,
            self.machine,
            decided=manifest.deciding_ids(self.results),
        )


def finish(scored: Scored, output: Path | None, title: str) -> None:
    """The results file and its manifest beside it (`<output>.manifest.json`), then the
    summary."""
    results = scored.results
    failed: OSError | None = None
    if output is not None:
        try:
            write_results(results, output)
            console.print(f"wrote {len(results)} lines to {output}")
            if not _in_place(output):
                from querybench.runs.manifest import manifest_path

                target = Path(os.path.realpath(output))
                scored.manifest().write(manifest_path(target))
        except OSError as exc:
            failed = exc
    print_summary(summarise(results), out_console, title)
    if failed is not None:  # the summary above is all that is left of the scores
        usage_error(f"--output {output} could not be written: {failed.strerror or failed}")


def runnable_tasks(
    benchmark: str, data_dir: Path | None = None, *, with_gold: bool = False
) -> list[Task]:
    """`--runnable`: the data's tasks that can run here (`tasks/runnable.py`), the one rule
    `data status` and `run` apply, said in one line; exit 2 when the task file cannot be read."""
    from querybench.tasks import load_tasks
    from querybench.tasks.runnable import runnability

    try:
        tasks = load_tasks(benchmark, data_dir=data_dir, with_gold=with_gold)
    except QuerybenchError as exc:
        usage_error(f"--runnable reads the data's {benchmark} tasks: {exc}")
    split = runnability(tasks, data_dir)
    console.print(f"--runnable: {benchmark}: {split.line()}", soft_wrap=True)
    return split.runnable


def runnable_ids(benchmark: str, data_dir: Path | None = None) -> list[str]:
    """The ids of `runnable_tasks`, for the evaluators that take `instance_ids`."""
    return [t.instance_id for t in runnable_tasks(benchmark, data_dir)]


def evaluate_under_progress(
    title: str,
    benchmark: str,
    predictions: Path,
    *,
    executor: str = EXECUTOR,
    address: str | None = None,
    per_query: bool = False,
    **options: Any,
) -> Scored:
    """`querybench.evaluate` under a progress bar that advances per result (per query with
    `per_query`, Spider 1.0 and BIRD run here); library errors (an unknown executor, Ray
    missing for `--executor ray`) become a clean exit 2, submission warnings are printed."""
    import warnings

    from querybench.errors import SubmissionWarning
    from querybench.evaluation.record import EvalEvents
    from querybench.runs.evaluate import evaluate

    machine = Machine.now()
    recorded = dict(options)
    try:
        if executor != "local" or address is not None:  # the Ray modules import the models'
            from querybench.runs.ray_executor import check_executor  # stack: only when asked

            check_executor(executor, address)
        with console.progress(title) as bar, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SubmissionWarning)
            local = executor == "local"
            events = EvalEvents(
                on_total=bar.set_total if local and not per_query else None,  # known up front
                on_query=bar.advance if local and per_query else None,
                on_result=None if local and per_query else (lambda _result: bar.advance()),
            )
            # names read from the command line: `evaluate` checks them at run time
            results = evaluate(
                benchmark, predictions, options, events, executor=executor, address=address
            )
    except QuerybenchError as exc:
        usage_error(str(exc))
    except KeyboardInterrupt:  # the query children are killed already (`QueryPool.close`)
        runs_queries = per_query or options.get("mode") == "sql"
        kept = (
            "the queries that finished are kept in the result cache, so the same command "
            "resumes from them"
            if runs_queries
            else "run the same command again to score"
        )
        console.print(f"interrupted: no results written; {kept}", soft_wrap=True)
        raise SystemExit(130) from None
    for warning in caught:
        if issubclass(warning.category, SubmissionWarning):
            warn(str(warning.message))
        else:
            warnings.showwarning(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return Scored(results, benchmark, predictions, recorded, machine)
