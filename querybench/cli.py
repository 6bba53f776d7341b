"""The `querybench` command line: a thin layer over the library functions."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from querybench.data import data_root
from querybench.errors import QuerybenchError
from querybench.evaluation.prediction_file import ReadLimits
from querybench.evaluation.record import InstanceResult
from querybench.report.summary import print_summary, summarise

app = typer.Typer(
    help="Benchmark, evaluate and train text-to-SQL systems (Spider 2.0, BIRD, Spider 1.0).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
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
        "    querybench eval spider2-dbt --predictions RUNDIR/predictions"
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
)
app.add_typer(eval_app, name="eval")

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


def _progress() -> Progress:
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


def _run(
    title: str,
    total: int | None,
    work: Callable[[Callable[[Any], None]], list[Any]],
    executor: str = "local",
) -> Any:
    """Run `work(advance)` under a progress bar; library errors (an unknown executor, Ray
    missing for `--executor ray`) become a clean exit 2."""
    from querybench.runs.ray_executor import check_executor

    try:
        check_executor(executor)
        with _progress() as progress:
            task = progress.add_task(title, total=total)
            return work(lambda _result: progress.advance(task))
    except QuerybenchError as exc:
        _fail(str(exc))


Scorer = Callable[..., list[InstanceResult]]
_LIMITS = ReadLimits()  # the defaults the eval flags show


def _scorer(
    executor: str, address: str | None, local: Scorer, on_ray: Scorer, progress: str = "on_result"
) -> Callable[..., list[InstanceResult]]:
    """`score(advance, *args, **kwargs)`: the local evaluator, or its Ray twin (same arguments,
    plus the cluster address); `progress` names the local one's callback (`on_query` is called
    per query with no argument)."""

    def score(advance: Callable[[Any], None], *args: Any, **kwargs: Any) -> list[InstanceResult]:
        if executor == "ray":
            return on_ray(*args, address=address, on_result=advance, **kwargs)
        callback = (lambda: advance(None)) if progress == "on_query" else advance
        return local(*args, **{progress: callback}, **kwargs)

    return score


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
    from querybench.evaluation.spider2_eval import evaluate_spider2
    from querybench.evaluation.spider2_gold import default_gold_dir
    from querybench.runs.ray_eval import evaluate_spider2_ray

    if mode not in ("exec_result", "sql"):
        _fail(f"--mode must be exec_result or sql, not {mode!r}")
    if scoring not in ("official", "strict"):
        _fail(f"--scoring must be official or strict, not {scoring!r}")
    gold = gold_dir or default_gold_dir(benchmark)  # type: ignore[arg-type]
    if tasks_file is None:
        candidate = gold.parent.parent / f"{benchmark}.jsonl"
        tasks_file = candidate if candidate.is_file() else None
    if mode == "sql" and db_dir is None:
        local = data_root() / "spider2-lite-local"
        db_dir = local if local.is_dir() else None
    score = _scorer(executor, address, evaluate_spider2, evaluate_spider2_ray)
    results = _run(
        f"scoring {benchmark}",
        None,
        lambda advance: score(
            advance,
            benchmark,
            predictions,
            gold,
            mode=mode,
            scoring=scoring,
            db_dir=db_dir,
            tasks_file=tasks_file,
            workers=workers,
            timeout=timeout,
            limits=limits,
        ),
        executor,
    )
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
            Path | None, typer.Option(help="sql mode: folder of `<db>.sqlite` for local tasks.")
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
            int, typer.Option(help="Bytes one prediction file may have (else too_large).")
        ] = _LIMITS.max_bytes,
        max_columns: Annotated[
            int, typer.Option(help="Columns one prediction may have (else too_large).")
        ] = _LIMITS.max_columns,
        max_cells: Annotated[
            int, typer.Option(help="Cells (rows x columns) one prediction may have.")
        ] = _LIMITS.max_cells,
        max_line_bytes: Annotated[
            int, typer.Option(help="Bytes one line of a prediction file may have.")
        ] = _LIMITS.max_line_bytes,
        read_timeout: Annotated[
            float, typer.Option(help="Seconds reading one prediction file may take.")
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
    from querybench.evaluation.spider1 import evaluate_spider1
    from querybench.runs.ray_eval import evaluate_spider1_ray

    score = _scorer(executor, address, evaluate_spider1, evaluate_spider1_ray, "on_query")
    results = _run(
        "running queries" if executor == "local" else "scoring shards",
        None,
        lambda advance: score(
            advance,
            gold,
            predictions,
            db_dir,
            timeout=timeout,
            workers=workers,
            questions_json=questions,
        ),
        executor,
    )
    _finish(results, output, "Spider 1.0 execution match")


@eval_app.command("bird")
def eval_bird(
    questions: Annotated[Path, typer.Option(help="BIRD question file (dev.json).")],
    predictions: Annotated[
        Path,
        typer.Option(
            help='Prediction JSON: {"<question_id>": "SQL\\t----- bird -----\\t<db_id>"}.'
        ),
    ],
    db_dir: Annotated[Path, typer.Option(help="Databases at `DIR/<db_id>/<db_id>.sqlite`.")],
    timeout: Annotated[float, typer.Option(help="Seconds per query.")] = 30.0,
    workers: Workers = 2,
    output: Output = None,
    executor: Executor = "local",
    address: Address = None,
) -> None:
    """BIRD execution match (set semantics) with error / trivial / gold_error metrics.

    Example: `querybench eval bird --questions dev.json --predictions predict_dev.json
    --db-dir dev_databases/`
    """
    from querybench.evaluation.bird import evaluate_bird
    from querybench.runs.ray_eval import evaluate_bird_ray

    score = _scorer(executor, address, evaluate_bird, evaluate_bird_ray, "on_query")
    results = _run(
        "running queries" if executor == "local" else "scoring shards",
        None,
        lambda advance: score(
            advance, questions, predictions, db_dir, timeout=timeout, workers=workers
        ),
        executor,
    )
    _finish(results, output, "BIRD execution match")


app.command("context")(__import__("querybench.commands.context", fromlist=["c"]).context)

from querybench.commands.data import data_app  # noqa: E402
from querybench.commands.tasks import tasks_app  # noqa: E402

app.add_typer(tasks_app, name="tasks")
app.add_typer(data_app, name="data")

app.add_typer(__import__("querybench.commands.db", fromlist=["app"]).app, name="db")

app.command("run")(__import__("querybench.commands.run", fromlist=["run"]).run)

app.command("report")(__import__("querybench.commands.report", fromlist=["r"]).report)

app.command("audit")(__import__("querybench.commands.audit", fromlist=["a"]).audit)


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
    from querybench.evaluation.spider2_dbt import (
        dbt_gold_dir,
        evaluate_spider2_dbt,
        with_gold_summary,
    )
    from querybench.tasks import load_tasks

    root = data_dir or data_root()
    gold = gold_dir or dbt_gold_dir(root)
    try:
        tasks = load_tasks("spider2-dbt", data_dir=root)
    except QuerybenchError as exc:
        _fail(str(exc))
    results = _run(
        "scoring spider2-dbt",
        len(tasks),
        lambda advance: evaluate_spider2_dbt(
            tasks, predictions, gold, workers=workers, on_result=advance
        ),
    )
    _finish(results, output, "spider2-dbt (duckdb_match, score = official)")
    kept = with_gold_summary(results)
    out_console.print(
        f"with gold present: {kept['correct']}/{kept['n']} "
        f"(official {kept['official_score']:.4f}, strict {kept['strict_score']:.4f}); "
        f"every task: {sum(r.score == 1.0 for r in results)}/{len(results)}"
    )


def main() -> None:
    app()
