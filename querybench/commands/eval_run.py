"""The eval commands' bodies, free of typer and rich: the typer commands of `cli.py` and the
fast path of `commands/eval_fast.py` both call these, with the same values.

`cli.py` declares each command's options (typer is the one source of truth for the flags, the
defaults and the help) and hands the parsed values to the function of `COMMANDS` here. A usage
error prints `error: ...` and exits 2 (`SystemExit`, which typer lets through as its `Exit`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

from querybench.errors import QuerybenchError
from querybench.evaluation.prediction_file import ReadLimits
from querybench.evaluation.record import InstanceResult
from querybench.report.summary import print_summary, summarise
from querybench.report.terminal import Terminal

console = Terminal(stderr=True)
out_console = Terminal()


def _fail(message: str) -> NoReturn:
    console.error(message)
    raise SystemExit(2)


def _warn(message: str) -> None:
    console.warning(message)


def _check_predictions_kind(predictions: Path, mode: str) -> None:
    """A folder of the other mode's files scores 0 everywhere: say so before scoring it."""
    if not predictions.is_dir():
        return
    found = {kind: sum(1 for _ in predictions.glob(f"*.{kind}")) for kind in ("csv", "sql")}
    wanted, other = ("csv", "sql") if mode == "exec_result" else ("sql", "csv")
    if not found[wanted] and found[other]:
        hint = "--mode sql" if mode == "exec_result" else "--mode exec_result"
        _warn(
            f"--mode {mode} reads <instance_id>.{wanted} files, but {predictions} holds "
            f"{found[other]} .{other} files and no .{wanted}: every instance will be "
            f"missing_prediction; did you mean {hint}?"
        )


def _check_prediction_names(
    predictions: Path, mode: str, benchmark: str, results: Sequence[InstanceResult]
) -> None:
    """Files of the right kind, none named after a task: another benchmark's folder?"""
    from querybench.evaluation.verdict import MISSING_PREDICTION

    if not all(r.error == MISSING_PREDICTION for r in results):
        return  # some were found: no need to list the folder
    suffix = "csv" if mode == "exec_result" else "sql"
    files = sorted(predictions.glob(f"*.{suffix}")) if predictions.is_dir() else []
    if files:
        _warn(
            f"{predictions} holds {len(files)} .{suffix} files but none is named after a "
            f"{benchmark} instance id (found e.g. {files[0].name}, expected e.g. "
            f"{results[0].instance_id}.{suffix}): another benchmark's predictions?"
        )


def _check_db_dir(db_dir: Path | None, pattern: str, expected: str) -> None:
    """An explicit --db-dir without a single database can only be a mistake: exit 2."""
    if db_dir is None:
        return
    if not db_dir.is_dir():
        _fail(f"--db-dir {db_dir} is not a folder (expected {expected})")
    if next(db_dir.glob(pattern), None) is None:
        _fail(f"--db-dir {db_dir} holds no database: expected {expected}, found none")


def _finish(results: Sequence[InstanceResult], output: Path | None, title: str) -> None:
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        with output.open("w", encoding="utf-8") as f:
            for r in results:
                f.write(json.dumps(r.to_json()) + "\n")
        console.print(f"wrote {len(results)} lines to {output}")
    print_summary(summarise(results), out_console, title)


def _evaluate(
    title: str,
    benchmark: str,
    predictions: Path,
    *,
    executor: str = "local",
    address: str | None = None,
    per_query: bool = False,
    **options: Any,
) -> list[InstanceResult]:
    """`querybench.evaluate` under a progress bar that advances per result (per query with
    `per_query`, Spider 1.0 and BIRD run here); library errors (an unknown executor, Ray
    missing for `--executor ray`) become a clean exit 2, submission warnings are printed."""
    import warnings

    from querybench.runs.evaluate import SubmissionWarning, evaluate

    try:
        if executor != "local":  # the Ray modules import the models' stack: only when asked
            from querybench.runs.ray_executor import check_executor

            check_executor(executor)
        with console.progress(title) as advance, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SubmissionWarning)
            if per_query and executor == "local":
                options["_on_query"] = advance
            else:
                options["on_result"] = lambda _result: advance()
            # names read from the command line: `evaluate` checks them at run time
            untyped: Callable[..., list[InstanceResult]] = evaluate
            results = untyped(benchmark, predictions, executor=executor, address=address, **options)
    except QuerybenchError as exc:
        _fail(str(exc))
    for warning in caught:
        if issubclass(warning.category, SubmissionWarning):
            _warn(str(warning.message))
        else:
            warnings.showwarning(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return results


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
) -> None:
    """`eval spider2-lite` / `eval spider2-snow`."""
    limits = ReadLimits(max_bytes, max_columns, max_cells, max_line_bytes, read_timeout)
    if mode not in ("exec_result", "sql"):
        _fail(f"--mode must be exec_result or sql, not {mode!r}")
    if scoring not in ("official", "strict"):
        _fail(f"--scoring must be official or strict, not {scoring!r}")
    _check_predictions_kind(predictions, mode)
    if mode == "sql":
        _check_db_dir(db_dir, "*.sqlite", "<db>.sqlite files for the local tasks")
    results = _evaluate(
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
    )
    _check_prediction_names(predictions, mode, benchmark, results)
    _finish(results, output, f"{benchmark} ({mode}, score = {scoring})")


def spider1(
    gold: Path,
    predictions: Path,
    db_dir: Path,
    questions: Path | None,
    timeout: float,
    workers: int,
    output: Path | None,
    executor: str,
    address: str | None,
) -> None:
    """`eval spider1`."""
    from querybench.evaluation.spider1 import read_spider1_instances

    _check_db_dir(db_dir, "*/*.sqlite", "<db_id>/<db_id>.sqlite")
    try:
        instances = read_spider1_instances(gold, predictions)
    except QuerybenchError as exc:
        _fail(str(exc))
    named = sorted({i.db_id for i in instances})
    if named and not any((db_dir / d / f"{d}.sqlite").is_file() for d in named):
        _fail(
            f"--db-dir {db_dir} holds none of the {len(named)} databases {gold} names "
            f"(expected e.g. {named[0]}/{named[0]}.sqlite)"
        )
    past_end = sum(i.past_end for i in instances)
    if past_end:
        _warn(
            f"{predictions} has {len(instances) - past_end} prediction lines for "
            f"{len(instances)} gold queries in {gold}: the last {past_end} are "
            "missing_prediction"
        )
    results = _evaluate(
        "running queries" if executor == "local" else "scoring shards",
        "spider1",
        predictions,
        executor=executor,
        address=address,
        per_query=True,
        gold=gold,
        db_dir=db_dir,
        questions=questions,
        timeout=timeout,
        workers=workers,
    )
    _finish(results, output, "Spider 1.0 execution match")


def _bird(
    title: str,
    benchmark: str,
    questions: Path | None,
    predictions: Path,
    db_dir: Path | None,
    metrics: str,
    *,
    layout: dict[str, Any] | None = None,
    db_url: str | None = None,
    ves_repeats: int = 100,
    timeout: float = 30.0,
    workers: int = 2,
    output: Path | None = None,
    executor: str = "local",
    address: str | None = None,
) -> None:
    """Score one BIRD questions file; the summary, then the official by-difficulty tables."""
    from querybench.evaluation.bird_metrics import BirdMetric, parse_metrics
    from querybench.report.summary import print_bird_tables

    try:
        chosen = parse_metrics(metrics)
    except ValueError as exc:
        _fail(f"--metrics: {exc}")
        return
    if executor == "ray" and (db_url is not None or set(chosen) - {BirdMetric.EX}):
        _fail("--executor ray scores EX on SQLite files only; drop --metrics/--db-url or use local")
    extra: dict[str, Any] = dict(layout or {})
    if executor == "local":
        extra |= {"metrics": chosen, "db_url": db_url, "ves_repeats": ves_repeats}
    if BirdMetric.R_VES in chosen:
        console.print(
            f"r_ves: timing every matched pair {ves_repeats} times; slow, and the figures "
            "depend on the machine's load"
        )
    results = _evaluate(
        "running queries" if executor == "local" else "scoring shards",
        benchmark,
        predictions,
        executor=executor,
        address=address,
        per_query=True,
        questions=questions,
        db_dir=db_dir,
        timeout=timeout,
        workers=workers,
        **extra,
    )
    _finish(results, output, title)
    print_bird_tables(results, chosen, out_console)


def bird(
    questions: Path,
    predictions: Path,
    db_dir: Path,
    metrics: str,
    ves_repeats: int,
    timeout: float,
    workers: int,
    output: Path | None,
    executor: str,
    address: str | None,
) -> None:
    """`eval bird`."""
    _check_db_dir(db_dir, "*/*.sqlite", "<db_id>/<db_id>.sqlite")
    _bird(
        "BIRD execution match",
        "bird",
        questions,
        predictions,
        db_dir,
        metrics,
        ves_repeats=ves_repeats,
        timeout=timeout,
        workers=workers,
        output=output,
        executor=executor,
        address=address,
    )


def bird_mini_dev(
    predictions: Path,
    dialect: str,
    questions: Path | None,
    db_dir: Path | None,
    db_url: str | None,
    metrics: str,
    ves_repeats: int,
    timeout: float,
    workers: int,
    output: Path | None,
    executor: str,
    address: str | None,
) -> None:
    """`eval bird-mini-dev`."""
    from querybench.evaluation.bird import BIRD_DIALECTS, bird_dialect

    if dialect not in BIRD_DIALECTS:
        _fail(f"--dialect must be sqlite, mysql or postgresql, not {dialect!r}")
    if dialect != "sqlite":
        scheme = (db_url or "").partition("://")[0].lower()
        if db_url is None or "://" not in db_url:
            _fail(
                f"--dialect {dialect} needs --db-url, e.g. "
                + (
                    "mysql://root@127.0.0.1:3306/BIRD"
                    if dialect == "mysql"
                    else "postgresql://postgres@127.0.0.1:5432/bird"
                )
                + " (load it with `querybench db load`)"
            )
        elif bird_dialect(db_url) != dialect:
            _fail(f"--db-url {scheme}:// does not match --dialect {dialect}")
    if dialect == "sqlite":
        _check_db_dir(db_dir, "*/*.sqlite", "<db_id>/<db_id>.sqlite")
    _bird(
        f"BIRD mini-dev ({dialect}) execution match",
        "bird-mini-dev",
        questions,  # these two default to the data's mini-dev files
        predictions,
        db_dir,
        metrics,
        layout={"dialect": dialect},
        db_url=db_url,
        ves_repeats=ves_repeats,
        timeout=timeout,
        workers=workers,
        output=output,
        executor=executor,
        address=address,
    )


def spider2_dbt(
    predictions: Path,
    data_dir: Path | None,
    gold_dir: Path | None,
    workers: int,
    output: Path | None,
) -> None:
    """`eval spider2-dbt`."""
    from querybench.evaluation.spider2_dbt import with_gold_summary

    if not predictions.is_dir():
        _fail(f"--predictions {predictions} is not a folder (<instance_id>/<db>.duckdb)")
    results = _evaluate(
        "scoring spider2-dbt",
        "spider2-dbt",
        predictions,
        data_dir=data_dir,  # the tasks and, without --gold-dir, the gold are the data's
        gold_dir=gold_dir,
        workers=workers,
    )
    _finish(results, output, "spider2-dbt (duckdb_match, score = official)")
    kept = with_gold_summary(results)
    out_console.print(
        f"with gold present: {kept['correct']}/{kept['n']} "
        f"(official {kept['official_score']:.4f}, strict {kept['strict_score']:.4f}); "
        f"every task: {sum(r.score == 1.0 for r in results)}/{len(results)}"
    )


def spider2_agentic(
    predictions: Path,
    gold_dir: Path | None,
    scoring: str,
    data_dir: Path | None,
    workers: int,
    timeout: float,
    output: Path | None,
) -> None:
    """`eval spider2`."""
    from querybench.evaluation.spider2_agentic_eval import denominators

    if scoring not in ("official", "strict"):
        _fail(f"--scoring must be official or strict, not {scoring!r}")
    if not predictions.is_dir():
        _fail(f"--predictions {predictions} is not a folder (the official submission layout)")
    results = _evaluate(
        "scoring spider2",
        "spider2",
        predictions,
        data_dir=data_dir,  # the tasks (with --gold-dir's eval config) and the databases
        gold_dir=gold_dir,
        scoring=scoring,
        timeout=timeout,
        workers=workers,
    )
    _finish(results, output, f"spider2 (agentic, score = {scoring})")
    for part in denominators(results):
        out_console.print(
            f"{part.name}: {part.correct}/{part.n} (official {part.official:.4f}, "
            f"strict {part.strict:.4f})"
        )


# Each eval command's body by the command's name (the name typer registers it under).
COMMANDS: dict[str, Callable[..., None]] = {
    "spider2-lite": partial(spider2, "spider2-lite"),
    "spider2-snow": partial(spider2, "spider2-snow"),
    "spider1": spider1,
    "bird": bird,
    "bird-mini-dev": bird_mini_dev,
    "spider2-dbt": spider2_dbt,
    "spider2": spider2_agentic,
}


def verbose() -> None:
    """`querybench --verbose`: also log what the library skips and why."""
    import logging  # only then: the start-up stays as fast without it

    logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
