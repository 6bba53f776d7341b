"""`querybench tasks list|show|stats`: the tasks of a benchmark, as a table or one JSON line
each, and its dataset statistics beside the paper's."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from querybench.errors import QuerybenchError
from querybench.tasks import BENCHMARKS, Task, find_task, load_tasks, task_to_json

tasks_app = typer.Typer(
    help=(
        "List and inspect benchmark tasks.\n\n"
        "Examples:\n\n"
        "    querybench tasks list spider2-lite\n\n"
        "    querybench tasks list bird --format jsonl > bird.jsonl\n\n"
        "    querybench tasks show spider2-lite bq011\n\n"
        "    querybench tasks stats spider2 --json\n\n"
        "    querybench tasks list custom --path my_questions.yaml"
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

Benchmark = Annotated[str, typer.Argument(help=f"One of: {', '.join(BENCHMARKS)}.")]
TaskFile = Annotated[
    Path | None,
    typer.Option(help="Task file to read instead of the benchmark's own (required for custom)."),
]
DataDir = Annotated[
    Path | None, typer.Option(help="Data root (default: see `querybench data path`).")
]


def _fail(message: str) -> NoReturn:
    Console(stderr=True).print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _load(benchmark: str, path: Path | None, data_dir: Path | None) -> list[Task]:
    try:
        return load_tasks(benchmark, data_dir=data_dir, path=path)
    except QuerybenchError as exc:
        _fail(str(exc))


@tasks_app.command("list")
def list_tasks(
    benchmark: Benchmark,
    format: Annotated[str, typer.Option(help="table, or jsonl (one task per line).")] = "table",
    path: TaskFile = None,
    data_dir: DataDir = None,
    runnable: Annotated[
        bool,
        typer.Option(
            "--runnable", help="Only the tasks that can run here (`querybench data status`)."
        ),
    ] = False,
) -> None:
    """List every task of a benchmark, and how many can run here.

    Example: `querybench tasks list spider2-lite --runnable --format jsonl`
    """
    from querybench.tasks.runnable import runnability

    if format not in ("table", "jsonl"):
        _fail(f"--format must be table or jsonl, not {format!r}")
    tasks = _load(benchmark, path, data_dir)
    split = runnability(tasks, data_dir)
    if runnable:
        tasks = split.runnable
    if format == "jsonl":
        for task in tasks:
            typer.echo(json.dumps(task_to_json(task), ensure_ascii=False))
        return
    table = Table(title=f"{benchmark}: {len(tasks)} tasks")
    # The agentic setting also names each task's type and answer type (see tasks/spider2_agentic).
    typed = any("answer_type" in t.extra for t in tasks)
    columns = ("id", "db", "engine", *(("type", "answer") if typed else ()), "difficulty")
    for column in (*columns, "features", "question"):
        table.add_column(column, overflow="fold" if column == "question" else "ellipsis")
    for task in tasks:
        question = task.question if len(task.question) <= 80 else task.question[:77] + "..."
        kinds = (str(task.extra.get("type", "")), str(task.extra.get("answer_type", "")))
        table.add_row(
            task.instance_id,
            task.db,
            task.engine,
            *(kinds if typed else ()),
            task.difficulty or "",
            ",".join(task.features),
            question,
        )
    console = Console()
    console.print(table)
    console.print(f"{benchmark}: {split.line()}", highlight=False, soft_wrap=True)
    by_difficulty = Counter(t.difficulty or "unknown" for t in tasks)
    console.print(", ".join(f"{k}: {v}" for k, v in sorted(by_difficulty.items())))
    if typed:
        for field in ("type", "answer_type"):
            counts = Counter(str(t.extra.get(field, "unknown")) for t in tasks)
            console.print(f"{field}: " + ", ".join(f"{k}: {v}" for k, v in counts.most_common()))


@tasks_app.command("show")
def show_task(
    benchmark: Benchmark,
    instance_id: Annotated[str, typer.Argument(help="Task id, e.g. bq011 or local002.")],
    path: TaskFile = None,
    data_dir: DataDir = None,
) -> None:
    """Print one task as JSON (every field of the task model).

    Example: `querybench tasks show spider2-lite bq011`
    """
    tasks = _load(benchmark, path, data_dir)
    try:
        task = find_task(tasks, instance_id)
    except QuerybenchError as exc:
        _fail(str(exc))
    typer.echo(json.dumps(task_to_json(task), ensure_ascii=False, indent=2))


@tasks_app.command("stats")
def task_stats(
    benchmark: Benchmark,
    json_output: Annotated[
        bool, typer.Option("--json", help="One JSON object instead of the tables.")
    ] = False,
    html: Annotated[
        Path | None, typer.Option(help="Also write the tables and their plots to this HTML file.")
    ] = None,
    path: TaskFile = None,
    data_dir: DataDir = None,
) -> None:
    """The dataset statistics of the Spider 2.0 paper, from the task files, metadata and gold
    here: tasks by type and difficulty, gold SQL tokens and functions, databases, tables and
    columns per database, nested columns, answer types, external knowledge; each beside the
    paper's (or the official README's) figure, the difference said.

    Example: `querybench tasks stats spider2 --html stats.html`
    """
    from querybench.report import dataset_stats, render

    tasks = _load(benchmark, path, data_dir)
    try:
        result = dataset_stats.dataset_stats(benchmark, tasks)
    except QuerybenchError as exc:
        _fail(str(exc))
    tables = dataset_stats.sections(result)
    if json_output:
        typer.echo(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        render.print_sections(tables, Console())
    if html is not None:
        page = render.tables_html(tables, dataset_stats.plots(result), f"{benchmark} statistics")
        html.write_text(page, encoding="utf-8")
