"""`querybench data fetch|status|emulate|path`: get the official data, see what is here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from querybench.benchmarks import specs
from querybench.errors import QuerybenchError
from querybench.report.terminal import stacked, table_width

if TYPE_CHECKING:
    from querybench.data.releases import Archive

data_app = typer.Typer(
    help=(
        "Benchmark data: download the official public releases, see what is here and what is "
        "missing, build the offline emulation.\n\n"
        "Data is read from, in order: $QUERYBENCH_DATA, ../shared/data beside the checkout, "
        "the user data dir (`querybench data path`); each file is looked up on its own.\n\n"
        "Examples:\n\n"
        "    querybench data fetch spider2-lite\n\n"
        "    querybench data fetch bird --from ~/Downloads\n\n"
        "    querybench data status\n\n"
        "    querybench data emulate spider2-lite"
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

_BENCHMARKS = ", ".join(s.name for s in specs() if s.releases is not None)


@data_app.command("fetch")
def fetch_command(
    benchmark: Annotated[str, typer.Argument(help=_BENCHMARKS + ".")],
    to: Annotated[
        Path | None,
        typer.Option(help="Data root to fill (default: $QUERYBENCH_DATA, else the user data dir)."),
    ] = None,
    from_dir: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Take the archives from this folder, by their official names (dev.zip, "
            "train.zip, minidev.zip, spider_data.zip, local_sqlite.zip, DBT_start_db.zip, "
            "dbt_gold.zip, Spider2-COMMIT.zip: the repository at its pinned commit), instead of "
            "downloading them.",
        ),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(help="Check pinned checksums and the Spider2 commit (--no-verify: skip)."),
    ] = True,
    force: Annotated[
        bool, typer.Option(help="Redo parts already in place (by default they are kept).")
    ] = False,
) -> None:
    """Download and unpack a benchmark's official archives into the layout its readers use.

    Resumable (run again after a cut), checksum-verified, and parts already in place are kept.
    When Google Drive refuses a scripted download, download the file by hand and use `--from`.

    Example: `querybench data fetch spider2-dbt --from ~/Downloads`
    """
    from querybench.data.fetch import fetch_benchmark
    from querybench.data.layout import TASK_FILES
    from querybench.data.roots import data_roots, fetch_target, find_data

    target = (to or fetch_target()).expanduser()
    console = Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:

        def on_start(archive: Archive) -> Callable[[int, int | None], None]:
            task = progress.add_task(archive.file_name, total=None)

            def update(done: int, total: int | None) -> None:
                progress.update(task, completed=done, total=total)

            return update

        try:
            outcomes = fetch_benchmark(
                benchmark,
                target,
                from_dir=from_dir.expanduser() if from_dir else None,
                verify=verify,
                force=force,
                on_start=on_start,
            )
        except QuerybenchError as exc:
            progress.stop()
            console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None
    for outcome in outcomes:
        if not outcome.fetched:
            typer.echo(f"in place: {outcome.part.name} ({outcome.folder}; --force redoes it)")
            continue
        typer.echo(f"unpacked: {outcome.part.name} into {outcome.folder} ({outcome.check})")
    if not verify:
        typer.echo("checksums and the Spider2 commit were NOT verified (--no-verify)")
    roots = [p.resolve() for p in data_roots()]
    if target.resolve() not in roots:
        typer.echo(f"data root {target} is not searched: set QUERYBENCH_DATA={target} to read it")
        return
    typer.echo(f"data root {target}: read from there (querybench data status {benchmark})")
    earlier = roots[: roots.index(target.resolve())]
    shadow = find_data(*TASK_FILES.get(benchmark, ()), roots=earlier)
    if shadow is not None:
        typer.echo(f"note: {shadow} comes first (an earlier data root) and is read instead")


@data_app.command("status")
def status_command(
    benchmark: Annotated[
        str | None, typer.Argument(help=f"One of {_BENCHMARKS}; default: every one.")
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="Look only in this data root (default: every root).")
    ] = None,
) -> None:
    """Per benchmark: what is here (task file, gold, databases N of M, emulation files,
    credentials), how many tasks can run here, why the rest cannot, and the fixing command.

    Example: `querybench data status spider2-lite`
    """
    from querybench.data.status import benchmark_status, status_benchmarks

    names = status_benchmarks()
    if benchmark is not None and benchmark not in names:
        typer.echo(
            f"error: no status for {benchmark!r}; choose one of {', '.join(names)}", err=True
        )
        raise typer.Exit(2)
    console = Console()
    for name in [benchmark] if benchmark else names:
        status = benchmark_status(name, data_dir)
        headers, rows = ["", "here", "fix"], [[i.what, i.state, i.fix or ""] for i in status.items]
        if table_width(headers, [rows]) > console.width:  # rich would cut paths and commands
            text = stacked(name, headers, [rows], console.width)
            console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)
        else:
            table = Table(*headers, title=name, title_justify="left")
            for row in rows:
                table.add_row(*row)
            console.print(table)
        console.print(status.line(), highlight=False, markup=False)


@data_app.command("emulate")
def emulate_command(
    benchmark: Annotated[str, typer.Argument(help="spider2-lite, spider2-snow or spider2.")],
    to: Annotated[
        Path | None,
        typer.Option(help="Data root to write into (default: $QUERYBENCH_DATA, else user dir)."),
    ] = None,
) -> None:
    """Build the offline emulation of every BigQuery / Snowflake database a benchmark's tasks
    use, from the Spider 2.0 metadata (DDL and sample rows): `<db>.duckdb` files that `run`,
    `eval --mode sql` and the agent then use without credentials. Existing files are kept.

    Example: `querybench data emulate spider2-lite`
    """
    from querybench.data.layout import EMULATION_DIR
    from querybench.data.roots import fetch_target
    from querybench.engines.spider2_metadata_load import build_emulation
    from querybench.tasks import load_tasks
    from querybench.tasks.databases import emulation_file

    try:
        tasks = load_tasks(benchmark, with_gold=False)
    except QuerybenchError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    wanted: dict[str, tuple[str, str]] = {}
    missing_metadata = set()
    for task in tasks:
        if task.engine not in ("bigquery", "snowflake") or emulation_file(task) is not None:
            continue
        metadata = task.extra.get("metadata_dir")
        if metadata:
            wanted.setdefault(task.db, (str(metadata), task.engine))
        else:
            missing_metadata.add(task.db)
    folder = (to or fetch_target()).expanduser() / EMULATION_DIR
    folder.mkdir(parents=True, exist_ok=True)
    built, failed = 0, []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        bar = progress.add_task("building emulation files", total=len(wanted))
        for db, (metadata, engine) in sorted(wanted.items()):
            try:
                build_emulation(metadata, folder / f"{db}.duckdb", engine)  # type: ignore[arg-type]
                built += 1
            except QuerybenchError as exc:
                (folder / f"{db}.duckdb").unlink(missing_ok=True)
                failed.append(f"{db}: {exc}")
            progress.advance(bar)
    typer.echo(f"built {built} emulation files in {folder}")
    for line in failed:
        typer.echo(f"failed: {line}")
    if missing_metadata:
        typer.echo(f"no metadata here for {len(missing_metadata)} databases (not built)")


@data_app.command("path")
def path_command() -> None:
    """Print where benchmark data is looked up, in order (`*` marks folders that exist)."""
    from querybench.data.roots import fetch_target, labelled_roots

    for label, folder in labelled_roots():
        mark = "*" if folder.is_dir() else " "
        typer.echo(f"{mark} {folder}  [{label}]")
    typer.echo(f"data fetch writes to {fetch_target()}")
