"""`querybench context <benchmark> <id>`: the schema and knowledge context a model is given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from querybench.errors import QuerybenchError


def context(
    benchmark: Annotated[str, typer.Argument(help="spider2-lite, spider2-snow, spider1, bird, …")],
    instance_id: Annotated[str, typer.Argument(help="Task id, e.g. bq011 or local002.")],
    budget: Annotated[
        int | None, typer.Option(min=1, help="Token budget (o200k_base); default: no limit.")
    ] = None,
    format: Annotated[str, typer.Option(help="text (the prompt) or json.")] = "text",
    path: Annotated[
        Path | None, typer.Option(help="Task file to read instead of the benchmark's own.")
    ] = None,
) -> None:
    """Print the context for one task: ranked schema (families collapsed), its external
    knowledge document and relevant dialect functions, within `--budget` tokens.

    Example: `querybench context spider2-lite bq011 --budget 8000 --format json`
    """
    if format not in ("text", "json"):
        _fail(f"--format must be text or json, not {format!r}")
    try:
        from querybench.context import build_context
        from querybench.tasks import find_task, load_tasks

        # with_gold=False: the context never needs (and must never read) gold files.
        task = find_task(load_tasks(benchmark, path=path, with_gold=False), instance_id)
        ctx = build_context(task, budget=budget)
    except QuerybenchError as exc:
        _fail(str(exc))
    if format == "json":
        typer.echo(json.dumps(ctx.to_json(), ensure_ascii=False, indent=2))
    else:
        typer.echo(ctx.prompt)
        typer.echo(f"\n[{ctx.tokens} tokens, {len(ctx.tables)} tables]", err=True)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)
