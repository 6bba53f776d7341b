"""The eval commands that run SQL against their gold: `spider1`, `bird`, `bird-mini-dev`
(their typer declarations are in `cli.py`; `eval_run.COMMANDS` names them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from querybench.benchmarks import spec
from querybench.commands.eval_common import (
    Scored,
    check_db_dir,
    check_output,
    console,
    evaluate_under_progress,
    finish,
    out_console,
    runnable_ids,
    usage_error,
    warn,
)
from querybench.errors import QuerybenchError


def _located(benchmark: str, given: dict[str, Path | None]) -> dict[str, Any]:
    """The gold and database locations not given, found by the data-location rule (the one
    `querybench.evaluate` applies: the benchmark's resolver); a part no data root holds exits
    2 with the fixes."""
    from querybench.benchmarks import resolve

    found = spec(benchmark)
    if found.resolver is None:
        return given
    try:
        located: dict[str, Any] = resolve(found.resolver)(found, given, dict(found.layout_options))
    except QuerybenchError as exc:
        usage_error(str(exc))
    return located


def _run_queries(
    benchmark: str, predictions: Path, executor: str, address: str | None, **options: Any
) -> Scored:
    """`querybench.evaluate` of a benchmark scored by running its queries (Spider 1.0, BIRD),
    here or in shards on Ray, under a bar that advances per query."""
    title = "running queries" if executor == "local" else "scoring shards"
    return evaluate_under_progress(
        title, benchmark, predictions, executor=executor, address=address, per_query=True, **options
    )


def spider1(
    benchmark: str,
    gold: Path | None,
    predictions: Path,
    db_dir: Path | None,
    questions: Path | None,
    timeout: float,
    workers: int,
    output: Path | None,
    executor: str,
    address: str | None,
    metrics: str,
    tables: Path | None,
    runnable: bool,
    plug_value: bool,
    keep_distinct: bool,
) -> None:
    """`eval spider1` and its variants (`eval spider-syn`, `eval spider-dk`: the gold is the
    benchmark's tasks unless a gold file is given)."""
    check_output(output)
    from querybench.evaluation.spider1.evaluate import read_spider1_instances

    chosen = tuple(dict.fromkeys(m.strip().lower() for m in metrics.split(",") if m.strip()))
    if not chosen or set(chosen) - {"ex", "em"}:
        usage_error(f"--metrics: choose from ex, em (got {metrics!r})")
    em = "em" in chosen
    check_db_dir(db_dir, "*/*.sqlite", "<db_id>/<db_id>.sqlite")
    given = {"gold": gold, "db_dir": db_dir, "questions": questions}
    located = _located(benchmark, given)
    gold, db_dir, questions = located["gold"], located["db_dir"], located.get("questions")
    named_by = gold if isinstance(gold, Path) else benchmark  # a file, or a variant's tasks
    folders = db_dir if isinstance(db_dir, list) else [db_dir]
    if em and executor != "local":
        usage_error("--metrics em runs with --executor local only")
    if em:
        from querybench.evaluation.spider1.exact_eval import default_tables_json

        tables = tables or default_tables_json(Path(named_by), folders[0])
        if tables is None or not tables.is_file():
            usage_error(
                "--metrics em needs Spider's tables.json (foreign keys): pass --tables "
                f"(none found beside {named_by} or in {folders[0]})"
            )

    try:
        instances = read_spider1_instances(gold, predictions)
    except QuerybenchError as exc:
        usage_error(str(exc))
    named = sorted({i.db_id for i in instances})
    if named and not any((f / d / f"{d}.sqlite").is_file() for f in folders for d in named):
        usage_error(
            f"--db-dir {db_dir} holds none of the {len(named)} databases {named_by} names "
            f"(expected e.g. {named[0]}/{named[0]}.sqlite)"
        )
    past_end = sum(i.past_end for i in instances)
    if past_end:
        warn(
            f"{predictions} has {len(instances) - past_end} prediction lines for "
            f"{len(instances)} gold queries in {named_by}: the last {past_end} are "
            "missing_prediction"
        )
    scored = _run_queries(
        benchmark,
        predictions,
        executor,
        address,
        gold=gold,
        db_dir=db_dir,
        questions=questions,
        timeout=timeout,
        workers=workers,
        instance_ids=runnable_ids(benchmark) if runnable else None,
        # the official execution flags, recorded only when set (the results' keys stay as they were)
        **{
            k: True
            for k, on in (("plug_value", plug_value), ("keep_distinct", keep_distinct))
            if on
        },
        **({"metrics": ("ex", "em"), "tables": tables} if em else {}),
    )
    finish(scored, output, f"{spec(benchmark).title.partition(' (')[0]} execution match")
    if em:
        from querybench.report.spider1_tables import print_spider1_tables

        print_spider1_tables(scored.results, "ex" in chosen, out_console)


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
    runnable: bool = False,
) -> None:
    """Score one BIRD questions file; the summary, then the official by-difficulty tables."""
    check_output(output)
    from querybench.evaluation.bird.metrics import BirdMetric, parse_metrics
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
    if runnable:
        extra["instance_ids"] = runnable_ids(benchmark)
    if executor == "local":
        extra |= {"metrics": chosen, "db_url": db_url, "ves_repeats": ves_repeats}
    if BirdMetric.R_VES in chosen:
        console.print(
            f"r_ves: timing every matched pair {ves_repeats} times; slow, and the figures "
            "depend on the machine's load"
        )
    scored = _run_queries(
        benchmark,
        predictions,
        executor,
        address,
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
    questions: Path | None,
    predictions: Path,
    db_dir: Path | None,
    metrics: str,
    ves_repeats: int,
    timeout: float,
    workers: int,
    output: Path | None,
    executor: str,
    address: str | None,
    runnable: bool,
) -> None:
    """`eval bird`."""
    check_db_dir(db_dir, "*/*.sqlite", "<db_id>/<db_id>.sqlite")
    located = _located(benchmark, {"questions": questions, "db_dir": db_dir})
    questions, db_dir = located["questions"], located["db_dir"]
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
        runnable=runnable,
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
    from querybench.evaluation.bird.evaluate import BIRD_DIALECTS, bird_dialect

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
