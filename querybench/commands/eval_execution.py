"""The eval commands that run SQL against their gold: Spider 1.0 and its variants, BIRD and
mini-dev (their typer declarations are in `cli.py`; each benchmark's spec names its body)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from querybench.benchmarks import spec
from querybench.commands.eval_common import (
    check_db_dir,
    check_output,
    console,
    evaluate_under_progress,
    finish,
    out_console,
    usage_error,
    warn,
)
from querybench.errors import QuerybenchError


def spider1(
    benchmark: str,
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
    _spider1_shaped(
        benchmark,
        gold,
        predictions,
        db_dir,
        timeout,
        workers,
        output,
        executor,
        address,
        questions=questions,
    )


def spider1_variant(
    benchmark: str,
    predictions: Path,
    gold: Path | None,
    db_dir: Path | None,
    timeout: float,
    workers: int,
    output: Path | None,
    executor: str,
    address: str | None,
) -> None:
    """`eval spider-syn`, `eval spider-dk`: Spider 1.0's formats and scoring, the gold and the
    databases the data's unless given."""
    _spider1_shaped(
        benchmark, gold, predictions, db_dir, timeout, workers, output, executor, address
    )


def _spider1_shaped(
    benchmark: str,
    gold: Path | None,
    predictions: Path,
    db_dir: Path | None,
    timeout: float,
    workers: int,
    output: Path | None,
    executor: str,
    address: str | None,
    **options: Any,
) -> None:
    """Score a Spider 1.0-shaped prediction file; its inputs checked before any query runs."""
    check_output(output)
    from querybench.evaluation.spider1 import read_spider1_instances

    check_db_dir(db_dir, "*/*.sqlite", "<db_id>/<db_id>.sqlite")
    try:
        source: Any = gold
        if gold is None:  # the benchmark's tasks, as `evaluate` reads them
            from querybench.tasks import load_tasks

            source = load_tasks(benchmark)
        instances = read_spider1_instances(source, predictions)
    except QuerybenchError as exc:
        usage_error(str(exc))
    named = sorted({i.db_id for i in instances})
    if (
        db_dir is not None
        and named
        and not any((db_dir / d / f"{d}.sqlite").is_file() for d in named)
    ):
        usage_error(
            f"--db-dir {db_dir} holds none of the {len(named)} databases "
            f"{gold or benchmark} names (expected e.g. {named[0]}/{named[0]}.sqlite)"
        )
    past_end = sum(i.past_end for i in instances)
    if past_end:
        warn(
            f"{predictions} has {len(instances) - past_end} prediction lines for "
            f"{len(instances)} gold queries in {gold or benchmark}: the last {past_end} are "
            "missing_prediction"
        )
    scored = evaluate_under_progress(
        "running queries" if executor == "local" else "scoring shards",
        benchmark,
        predictions,
        executor=executor,
        address=address,
        per_query=True,
        gold=source,
        db_dir=db_dir,
        timeout=timeout,
        workers=workers,
        **options,
    )
    title = spec(benchmark).title.partition(" (")[0]
    finish(scored, output, f"{title} execution match")


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
    check_output(output)
    from querybench.evaluation.bird_metrics import BirdMetric, parse_metrics
    from querybench.report.summary import print_bird_tables

    try:
        chosen = parse_metrics(metrics)
    except ValueError as exc:
        usage_error(f"--metrics: {exc}")
        return
    if executor == "ray" and (db_url is not None or set(chosen) - {BirdMetric.EX}):
        usage_error(
            "--executor ray scores EX on SQLite files only; drop --metrics/--db-url or use local"
        )
    extra: dict[str, Any] = dict(layout or {})
    if executor == "local":
        extra |= {"metrics": chosen, "db_url": db_url, "ves_repeats": ves_repeats}
    if BirdMetric.R_VES in chosen:
        console.print(
            f"r_ves: timing every matched pair {ves_repeats} times; slow, and the figures "
            "depend on the machine's load"
        )
    scored = evaluate_under_progress(
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
    finish(scored, output, title)
    print_bird_tables(scored.results, chosen, out_console)


def bird(
    benchmark: str,
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
    check_db_dir(db_dir, "*/*.sqlite", "<db_id>/<db_id>.sqlite")
    _bird(
        "BIRD execution match",
        benchmark,
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
    benchmark: str,
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
        usage_error(f"--dialect must be sqlite, mysql or postgresql, not {dialect!r}")
    if dialect != "sqlite":
        scheme = (db_url or "").partition("://")[0].lower()
        if db_url is None or "://" not in db_url:
            usage_error(
                f"--dialect {dialect} needs --db-url, e.g. "
                + (
                    "mysql://root@127.0.0.1:3306/BIRD"
                    if dialect == "mysql"
                    else "postgresql://postgres@127.0.0.1:5432/bird"
                )
                + " (load it with `querybench db load`)"
            )
        elif bird_dialect(db_url) != dialect:
            usage_error(f"--db-url {scheme}:// does not match --dialect {dialect}")
    if dialect == "sqlite":
        check_db_dir(db_dir, "*/*.sqlite", "<db_id>/<db_id>.sqlite")
    _bird(
        f"BIRD mini-dev ({dialect}) execution match",
        benchmark,
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
