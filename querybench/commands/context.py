"""`querybench context <benchmark> <id>`: the schema and knowledge context a model is given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from querybench.errors import QuerybenchError


def context(
    benchmark: Annotated[str, typer.Argument(help="spider2-lite, spider2-snow, spider1, bird, …")],
    instance_id: Annotated[
        str | None,
        typer.Argument(help="Task id, e.g. bq011 or local002; with --runnable, optional."),
    ] = None,
    budget: Annotated[
        int | None, typer.Option(min=1, help="Token budget (o200k_base); default: no limit.")
    ] = None,
    format: Annotated[str, typer.Option(help="text (the prompt) or json.")] = "text",
    path: Annotated[
        Path | None, typer.Option(help="Task file to read instead of the benchmark's own.")
    ] = None,
    runnable: Annotated[
        bool,
        typer.Option(
            "--runnable",
            help="Only tasks that can run here (`querybench data status`): without an id, the "
            "context of each as one JSON line; with one, refused when "
            "it cannot run here.",
        ),
    ] = False,
) -> None:
    """Print the context for one task: ranked schema (families collapsed), its external
    knowledge document and relevant dialect functions, within `--budget` tokens.

    Example: `querybench context spider2-lite bq011 --budget 8000 --format json`
    """
    if format not in ("text", "json"):
        _fail(f"--format must be text or json, not {format!r}")
    if instance_id is None and not runnable:
        _fail("name a task id, or pass --runnable for every task that can run here")
    from querybench.context import build_context
    from querybench.tasks import find_task, load_tasks
    from querybench.tasks.runnable import runnability

    try:
        # with_gold=False: the context never needs (and must never read) gold files.
        tasks = load_tasks(benchmark, path=path, with_gold=False)
        chosen = [find_task(tasks, instance_id)] if instance_id is not None else tasks
        if runnable:
            split = runnability(chosen)
            if instance_id is not None and split.blocked:
                _fail(f"{instance_id} cannot run here: {split.blocked[instance_id].message}")
            chosen = split.runnable
        for task in chosen:
            ctx = build_context(task, budget=budget)
            if instance_id is None:  # one per task: its id first
                typer.echo(json.dumps({"instance_id": task.instance_id} | ctx.to_json()))
            elif format == "json":
                typer.echo(json.dumps(ctx.to_json(), ensure_ascii=False, indent=2))
            else:
                typer.echo(ctx.prompt)
                typer.echo(f"\n[{ctx.tokens} tokens, {len(ctx.tables)} tables]", err=True)
    except QuerybenchError as exc:
        _fail(str(exc))


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)
