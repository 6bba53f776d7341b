"""`querybench data fetch|path`: download the official releases; where data is looked up."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from querybench.errors import QuerybenchError
from querybench.tasks.input_files import data_search_path, user_data_dir

data_app = typer.Typer(
    help=(
        "Benchmark data: download the official public releases, or show where data is read.\n\n"
        "Examples:\n\n"
        "    querybench data fetch spider2-lite\n\n"
        "    querybench data fetch bird --to /data/benchmarks\n\n"
        "    querybench data path"
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
)


@data_app.command("fetch")
def fetch_command(
    benchmark: Annotated[
        str,
        typer.Argument(
            help="spider2-lite, spider2-snow, spider2-dbt, spider2, bird, bird-mini-dev, spider1."
        ),
    ],
    to: Annotated[
        Path | None, typer.Option(help="Data folder to fill (default: the user data dir).")
    ] = None,
) -> None:
    """Download and unpack a benchmark's official archives (resumable, checksum-verified).

    Example: `querybench data fetch spider1 --to ~/benchmarks`
    """
    from querybench.fetch import Source, fetch

    target = (to or user_data_dir()).expanduser()
    console = Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console) as progress:

        def on_start(source: Source) -> Callable[[int, int | None], None]:
            task = progress.add_task(source.file_name, total=None)

            def update(done: int, total: int | None) -> None:
                progress.update(task, completed=done, total=total)

            return update

        try:
            folders = fetch(benchmark, target, on_start=on_start)
        except QuerybenchError as exc:
            progress.stop()
            console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None
    for folder in folders:
        typer.echo(f"unpacked into {folder}")
    if target.resolve() not in {p.resolve() for p in data_search_path()}:
        typer.echo(f"set QUERYBENCH_DATA={target} to read this data")


@data_app.command("path")
def path_command() -> None:
    """Print where benchmark data is looked up, in order (`*` marks folders that exist)."""
    env = os.environ.get("QUERYBENCH_DATA")
    sources = ("$QUERYBENCH_DATA" if env else "default (../shared/data)", "user data dir")
    for label, folder in zip(sources, data_search_path(), strict=True):
        mark = "*" if folder.is_dir() else " "
        typer.echo(f"{mark} {folder}  [{label}]")
