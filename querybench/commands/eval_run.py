"""The eval commands' bodies, free of typer and rich: the typer commands of `cli.py` and the
fast path of `commands/eval_fast.py` both call them, with the same values.

`cli.py` declares each command's options (typer is the one source of truth for the flags, the
defaults and the help) and hands the parsed values to the function of `COMMANDS` here, the
body its benchmark's spec names: the Spider 2.0 commands below, Spider 1.0 (and its variants)
and BIRD in `eval_execution.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from querybench.benchmarks import resolve, specs
from querybench.commands.eval_common import (
    check_db_dir,
    check_dbt_predictions,
    check_gold_dir,
    check_output,
    check_prediction_names,
    check_predictions_kind,
    check_sql_mode_only,
    evaluate_under_progress,
    finish,
    out_console,
    runnable_ids,
    runnable_tasks,
    usage_error,
)
from querybench.evaluation.prediction_file import ReadLimits


def spider2(
    benchmark: str,
    predictions: Path,
    mode: str,
    gold_dir: Path | None,
    db_dir: Path | None,
    scoring: str,
    workers: int,
    timeout: float,
    output: Path | None,
    tasks_file: Path | None,
    executor: str,
    address: str | None,
    max_bytes: int,
    max_columns: int,
    max_cells: int,
    max_line_bytes: int,
    read_timeout: float,
    runnable: bool,
) -> None:
    """`eval spider2-lite` / `eval spider2-snow`."""
    check_output(output)
    limits = ReadLimits(max_bytes, max_columns, max_cells, max_line_bytes, read_timeout)
    if mode not in ("exec_result", "sql"):
        usage_error(f"--mode must be exec_result or sql, not {mode!r}")
    if scoring not in ("official", "strict"):
        usage_error(f"--scoring must be official or strict, not {scoring!r}")
    check_predictions_kind(predictions, mode)
    if mode == "sql":
        check_db_dir(db_dir, "*.sqlite", "<db>.sqlite files for the local tasks")
    else:
        check_sql_mode_only(db_dir=db_dir, tasks_file=tasks_file)
    scored = evaluate_under_progress(
        f"scoring {benchmark}",
        benchmark,
        predictions,
        executor=executor,
        address=address,
        gold_dir=gold_dir,  # these three default to the data's (`querybench data status`)
        db_dir=[db_dir] if db_dir is not None else None,
        tasks_file=tasks_file,
        mode=mode,
        scoring=scoring,
        workers=workers,
        timeout=timeout,
        limits=limits,
        instance_ids=runnable_ids(benchmark) if runnable else None,
    )
    check_prediction_names(predictions, mode, benchmark, scored.results)
    finish(scored, output, f"{benchmark} ({mode}, score = {scoring})")


def _runnable_tasks(benchmark: str, data_dir: Path | None, runnable: bool) -> dict[str, Any]:
    """`--runnable` for the evaluators that take their tasks: only those that can run here."""
    return {"tasks": runnable_tasks(benchmark, data_dir, with_gold=True)} if runnable else {}


def spider2_dbt(
    benchmark: str,
    predictions: Path,
    data_dir: Path | None,
    gold_dir: Path | None,
    workers: int,
    output: Path | None,
    timeout: float,
    runnable: bool,
) -> None:
    """`eval spider2-dbt`."""
    check_output(output)
    from querybench.evaluation.spider2.agentic.dbt import with_gold_summary

    if not predictions.is_dir():
        usage_error(f"--predictions {predictions} is not a folder (<instance_id>/<db>.duckdb)")
    check_gold_dir(gold_dir, "<instance_id>/<db>.duckdb and spider2_eval.jsonl")
    check_dbt_predictions(predictions)
    scored = evaluate_under_progress(
        f"scoring {benchmark}",
        benchmark,
        predictions,
        data_dir=data_dir,  # the tasks and, without --gold-dir, the gold are the data's
        gold_dir=gold_dir,
        workers=workers,
        timeout=timeout,
        **_runnable_tasks(benchmark, data_dir, runnable),
    )
    finish(scored, output, f"{benchmark} (duckdb_match, score = official)")
    kept = with_gold_summary(scored.results)
    results = scored.results
    out_console.print(
        f"with gold present: {kept['correct']}/{kept['n']} "
        f"(official {kept['official_score']:.4f}, strict {kept['strict_score']:.4f}); "
        f"every task: {sum(r.score == 1.0 for r in results)}/{len(results)}"
    )


def spider2_agentic(
    benchmark: str,
    predictions: Path,
    gold_dir: Path | None,
    scoring: str,
    data_dir: Path | None,
    workers: int,
    timeout: float,
    output: Path | None,
    runnable: bool,
) -> None:
    """`eval spider2`."""
    check_output(output)
    from querybench.evaluation.spider2.agentic.evaluate import denominators
    from querybench.tasks.spider2_agentic import gold_dir_config

    if scoring not in ("official", "strict"):
        usage_error(f"--scoring must be official or strict, not {scoring!r}")
    if not predictions.is_dir():
        usage_error(f"--predictions {predictions} is not a folder (the official submission layout)")
    check_gold_dir(gold_dir, "<instance_id>/ with each instance's gold files")
    scored = evaluate_under_progress(
        f"scoring {benchmark}",
        benchmark,
        predictions,
        data_dir=data_dir,  # the tasks (with --gold-dir's eval config) and the databases
        gold_dir=gold_dir,
        scoring=scoring,
        timeout=timeout,
        workers=workers,
        **_runnable_tasks(benchmark, data_dir, runnable),
    )
    finish(scored, output, f"{benchmark} (agentic, score = {scoring})")
    for part in denominators(scored.results, gold_dir_config(gold_dir)):
        out_console.print(
            f"{part.name}: {part.correct}/{part.n} (official {part.official:.4f}, "
            f"strict {part.strict:.4f})"
        )


# Each eval command's body by the command's name (the name typer registers it under), as the
# benchmark's spec names it (`BenchmarkSpec.command`), called with the benchmark's name first.
COMMANDS: dict[str, Callable[..., None]] = {
    s.name: partial(resolve(s.command), s.name.value) for s in specs() if s.command is not None
}


def verbose() -> None:
    """`querybench --verbose`: also log what the library skips and why."""
    import logging  # only then: the start-up stays as fast without it

    logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
