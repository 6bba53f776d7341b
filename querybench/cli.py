"""The `querybench` command line: a thin layer over the library functions."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from querybench.commands.plain_options import PlainGroup
from querybench.errors import QuerybenchError
from querybench.evaluation.prediction_file import ReadLimits
from querybench.evaluation.record import InstanceResult
from querybench.report.summary import print_summary, summarise

if TYPE_CHECKING:
    from rich.progress import Progress

# The root command; `app` (below, PEP 562) is it with every command group registered.
_root = typer.Typer(
    help="Benchmark, evaluate and train text-to-SQL systems (Spider 2.0, BIRD, Spider 1.0).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
    cls=PlainGroup,
)
eval_app = typer.Typer(
    help=(
        "Score predictions against a benchmark's gold.\n\n"
        "Examples:\n\n"
        "    querybench eval spider2-lite --predictions my_csvs/\n\n"
        "    querybench eval spider2-lite --predictions my_sqls/ --mode sql --db-dir dbs/\n\n"
        "    querybench eval spider1 --gold dev_gold.sql --predictions pred.txt "
        "--db-dir database/\n\n"
        "    querybench eval bird --questions dev.json --predictions predict_dev.json "
        "--db-dir dev_databases/\n\n"
        "    querybench eval spider2-dbt --predictions RUNDIR/predictions\n\n"
        "    querybench eval spider2 --predictions RUNDIR/submission"
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    cls=PlainGroup,
)
_root.add_typer(eval_app, name="eval")


@_root.callback()
def _options(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also log what the library skips and why.")
    ] = False,
) -> None:
    if verbose:  # imported only then: the CLI's start-up stays as fast without it
        import logging

        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")


console = Console(stderr=True)
out_console = Console()

Workers = Annotated[int, typer.Option(min=1, help="Queries run in parallel.")]
Output = Annotated[Path | None, typer.Option(help="Write one JSON line per instance to this file.")]
Executor = Annotated[
    str,
    typer.Option(
        help="local (this process) or ray (shards on a Ray cluster; "
        "pip install 'querybench[ray]'); --workers then caps each engine cluster-wide."
    ),
]
Address = Annotated[
    str | None,
    typer.Option(help="Ray cluster to join (auto, ray://host:10001); default a local Ray."),
]


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(2)


def _warn(message: str) -> None:
    console.print(f"[yellow]warning:[/yellow] {escape(message)}")


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


def _progress() -> Progress:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


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
        with _progress() as progress, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SubmissionWarning)
            task = progress.add_task(title, total=None)
            if benchmark in ("spider2", "spider2-dbt"):  # they know their count before scoring
                options["_on_total"] = lambda n: progress.update(task, total=n)
            if per_query and executor == "local":
                options["_on_query"] = lambda: progress.advance(task)
            else:
                options["on_result"] = lambda _result: progress.advance(task)
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


_LIMITS = ReadLimits()  # the defaults the eval flags show


def _spider2(
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
    executor: str = "local",
    address: str | None = None,
    limits: ReadLimits | None = None,
) -> None:
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


def _spider2_command(benchmark: str) -> Callable[..., None]:
    def command(
        predictions: Annotated[
            Path, typer.Option(help="Folder of `<instance_id>.csv` (or `.sql` in sql mode).")
        ],
        mode: Annotated[str, typer.Option(help="exec_result (CSV results) or sql.")] = (
            "exec_result"
        ),
        gold_dir: Annotated[
            Path | None,
            typer.Option(help="Gold folder (exec_result/, sql/, eval jsonl); default: the data."),
        ] = None,
        db_dir: Annotated[
            Path | None,
            typer.Option(
                help="sql mode: folder of `<db>.sqlite` for local tasks (default: the Spider "
                "2.0 database folders of the data roots; see `querybench data status`)."
            ),
        ] = None,
        scoring: Annotated[
            str, typer.Option(help="Which score is `score`: official or strict (both reported).")
        ] = "official",
        workers: Workers = 2,
        timeout: Annotated[float, typer.Option(help="Seconds per query (sql mode).")] = 60.0,
        output: Output = None,
        tasks_file: Annotated[
            Path | None, typer.Option(help="Task jsonl naming each task's database.")
        ] = None,
        executor: Executor = "local",
        address: Address = None,
        max_bytes: Annotated[
            int, typer.Option(help="Bytes one prediction file may have (else too_large).", min=1)
        ] = _LIMITS.max_bytes,
        max_columns: Annotated[
            int, typer.Option(help="Columns one prediction may have (else too_large).", min=1)
        ] = _LIMITS.max_columns,
        max_cells: Annotated[
            int, typer.Option(help="Cells (rows x columns) one prediction may have.", min=1)
        ] = _LIMITS.max_cells,
        max_line_bytes: Annotated[
            int, typer.Option(help="Bytes one line of a prediction file may have.", min=1)
        ] = _LIMITS.max_line_bytes,
        read_timeout: Annotated[
            float,
            typer.Option(
                help="Seconds reading one prediction file may take (on a network or FUSE mount; "
                "a local disk's read always returns).",
                min=0.001,
            ),
        ] = _LIMITS.seconds,
    ) -> None:
        limits = ReadLimits(max_bytes, max_columns, max_cells, max_line_bytes, read_timeout)
        _spider2(
            benchmark,
            predictions,
            mode,
            gold_dir,
            db_dir,
            scoring,
            workers,
            timeout,
            output,
            tasks_file,
            executor,
            address,
            limits,
        )

    command.__doc__ = (
        f"Score {benchmark} predictions; both official and strict scores are reported.\n\n"
        f"Example: `querybench eval {benchmark} --predictions "
        f"$QUERYBENCH_DATA/spider2/{benchmark}/evaluation_suite/example_submission_folder_csv`"
        "\n\nVerdicts are kept by the content of each prediction and gold file under "
        "$QUERYBENCH_CACHE: QUERYBENCH_VERDICT_CACHE=0 scores every instance again."
    )
    return command


eval_app.command("spider2-lite")(_spider2_command("spider2-lite"))
eval_app.command("spider2-snow")(_spider2_command("spider2-snow"))


@eval_app.command("spider1")
def eval_spider1(
    gold: Annotated[Path, typer.Option(help="Gold file: `SQL<TAB>db_id` per line.")],
    predictions: Annotated[Path, typer.Option(help="One predicted SQL per line.")],
    db_dir: Annotated[Path, typer.Option(help="Databases at `DIR/<db_id>/<db_id>.sqlite`.")],
    questions: Annotated[
        Path | None,
        typer.Option(help="dev.json matching the gold lines: adds each question's hardness."),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per query.")] = 30.0,
    workers: Workers = 2,
    output: Output = None,
    executor: Executor = "local",
    address: Address = None,
) -> None:
    """Spider 1.0 execution match (official test-suite semantics).

    Example:
    `querybench eval spider1 --gold dev_gold.sql --predictions pred.txt --db-dir database/`
    """
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


Metrics = Annotated[
    str,
    typer.Option(
        help="Comma-separated, as BIRD mini-dev's official scripts: ex (execution match, the "
        "score; always computed), soft_f1 (Soft-F1), r_ves (reward-based VES: each matched pair "
        "is timed --ves-repeats times, so it is SLOW and its figures depend on the machine's "
        "load; use --workers 1 on an idle host)."
    ),
]
BirdPredictions = Annotated[
    Path,
    typer.Option(
        help='Prediction JSON: {"<question_id>": "SQL\\t----- bird -----\\t<db_id>"}, keyed by '
        'question_id or, as the official mini-dev files, by position ("0", "1", ...).'
    ),
]
VesRepeats = Annotated[
    int, typer.Option(min=1, help="r_ves: timed runs of each matched pair (official: 100).")
]


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


@eval_app.command("bird")
def eval_bird(
    questions: Annotated[Path, typer.Option(help="BIRD question file (dev.json).")],
    predictions: BirdPredictions,
    db_dir: Annotated[Path, typer.Option(help="Databases at `DIR/<db_id>/<db_id>.sqlite`.")],
    metrics: Metrics = "ex",
    ves_repeats: VesRepeats = 100,
    timeout: Annotated[float, typer.Option(help="Seconds per query.")] = 30.0,
    workers: Workers = 2,
    output: Output = None,
    executor: Executor = "local",
    address: Address = None,
) -> None:
    """BIRD execution match (set semantics) with error / trivial / gold_error metrics, and
    optionally the official Soft-F1 and R-VES; tables by difficulty as the official scripts.

    Example: `querybench eval bird --questions dev.json --predictions predict_dev.json
    --db-dir dev_databases/ --metrics ex,soft_f1`
    """
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


@eval_app.command("bird-mini-dev")
def eval_bird_mini_dev(
    predictions: BirdPredictions,
    dialect: Annotated[
        str, typer.Option(help="sqlite, mysql or postgresql: which mini-dev file and engine.")
    ] = "sqlite",
    questions: Annotated[
        Path | None,
        typer.Option(help="Questions file; default the data's mini_dev_DIALECT.json."),
    ] = None,
    db_dir: Annotated[
        Path | None,
        typer.Option(help="sqlite: databases at `DIR/<db_id>/<db_id>.sqlite`; default the data."),
    ] = None,
    db_url: Annotated[
        str | None,
        typer.Option(
            help="mysql/postgresql: the server database, e.g. mysql://root@127.0.0.1:3306/BIRD "
            "(every table in one database, as the official dumps) or …/bird_{db_id} (one per "
            "db_id); load it from the SQLite files with `querybench db load`."
        ),
    ] = None,
    metrics: Metrics = "ex",
    ves_repeats: VesRepeats = 100,
    timeout: Annotated[float, typer.Option(help="Seconds per query.")] = 30.0,
    workers: Workers = 2,
    output: Output = None,
    executor: Executor = "local",
    address: Address = None,
) -> None:
    """BIRD mini-dev (500 questions) on SQLite, MySQL/MariaDB or PostgreSQL: EX, and Soft-F1 /
    R-VES with --metrics, in the official by-difficulty tables.

    Examples:

    `querybench eval bird-mini-dev --predictions predict_mini_dev_sqlite.json --metrics
    ex,soft_f1,r_ves`

    `querybench eval bird-mini-dev --dialect mysql --db-url mysql://root@127.0.0.1:3306/BIRD
    --predictions predict_mini_dev_mysql.json --questions mini_dev_mysql.json`
    """
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


# The commands beside `eval`, in the order `querybench --help` lists them: (name, module,
# attribute, a group or a command). Each module is imported only when its command is named on
# the command line (or for help and completion): `querybench eval bird` imports none of them.
_COMMANDS = (
    ("context", "querybench.commands.context", "context", False),
    ("tasks", "querybench.commands.tasks", "tasks_app", True),
    ("data", "querybench.commands.data", "data_app", True),
    ("db", "querybench.commands.db", "app", True),
    ("run", "querybench.commands.run", "run", False),
    ("report", "querybench.commands.report", "report", False),
    ("audit", "querybench.commands.audit", "audit", False),
)
_registered: set[str] = set()


def _register(names: Collection[str]) -> None:
    """Register the named commands of `_COMMANDS` (once each, in their listed order)."""
    import importlib

    for name, module, attribute, group in _COMMANDS:
        if name in names and name not in _registered:
            _registered.add(name)
            target = getattr(importlib.import_module(module), attribute)
            if group:
                _root.add_typer(target, name=name)
            else:
                _root.command(name)(target)


def _named(argv: Sequence[str]) -> Collection[str]:
    """The commands a command line needs: the one it names, or every one (help, completion,
    an unknown name: typer's listing and suggestions then see them all)."""
    every = [name for name, *_ in _COMMANDS]
    if _completing():
        return every
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    if first == "eval":
        return ()
    return [first] if first in every else every


def _completing() -> bool:
    """Shell completion is asking (typer's `_<PROG>_COMPLETE`): it needs every command."""
    return any(key.startswith("_") and key.endswith("_COMPLETE") for key in os.environ)


def _only_the_named_eval(argv: Sequence[str]) -> None:
    """`querybench eval <name> …` builds that one eval command: typer builds the options of
    every command of a group before it runs one (an unknown name keeps them all)."""
    if _completing():
        return
    words = [arg for arg in argv if not arg.startswith("-")]
    if len(words) >= 2 and words[0] == "eval":
        named = [c for c in eval_app.registered_commands if c.name == words[1]]
        if named:
            eval_app.registered_commands = named


def __getattr__(name: str) -> Any:
    """`app`: the root command with every command registered (for tests and library users;
    the console script registers only what its command line names)."""
    if name == "app":
        _register([name for name, *_ in _COMMANDS])
        return _root
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@eval_app.command("spider2-dbt")
def eval_spider2_dbt(
    predictions: Annotated[
        Path, typer.Option(help="Folder of `<instance_id>/<db>.duckdb`, the databases left.")
    ],
    data_dir: Annotated[
        Path | None, typer.Option(help="Data root holding spider2/spider2-dbt (tasks, gold).")
    ] = None,
    gold_dir: Annotated[
        Path | None, typer.Option(help="Gold folder `<instance_id>/<file>`; default: the data.")
    ] = None,
    workers: Workers = 2,
    output: Output = None,
) -> None:
    """Score Spider 2.0-DBT outputs with `duckdb_match` (official and strict), over every task
    (a missing gold file counts 0) and over the tasks whose gold is present.

    Example: `querybench eval spider2-dbt --predictions RUNDIR/predictions`
    """
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


@eval_app.command("spider2")
def eval_spider2(
    predictions: Annotated[
        Path,
        typer.Option(help="Submission folder: results_metadata.jsonl and one folder per instance."),
    ],
    gold_dir: Annotated[
        Path | None,
        typer.Option(help="Gold folder `<instance_id>/<file>` (with spider2_eval.jsonl)."),
    ] = None,
    scoring: Annotated[
        str, typer.Option(help="Which score is `score`: official or strict (both reported).")
    ] = "official",
    data_dir: Annotated[
        Path | None, typer.Option(help="Data root holding spider2/spider2 (tasks, gold).")
    ] = None,
    workers: Workers = 2,
    timeout: Annotated[float, typer.Option(help="Seconds per query of a .sql answer.")] = 120.0,
    output: Output = None,
) -> None:
    """Score an agentic Spider 2.0 submission (the official layout), official and strict, over
    all 632 tasks, the DBT part and the tasks whose gold is here.

    Example: `querybench eval spider2 --predictions
    $QUERYBENCH_DATA/spider2/spider2/evaluation_suite/example_submission_folder`
    """
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


def main() -> None:
    _register(_named(sys.argv[1:]))
    _only_the_named_eval(sys.argv[1:])
    _root()
