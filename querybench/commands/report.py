"""`querybench report RUNDIR [RUNDIR ...]`: runs side by side, in the terminal, Markdown or HTML."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from querybench.errors import QuerybenchError


def report(
    runs: Annotated[
        list[Path],
        typer.Argument(help="Run folders (`querybench run --out`) or results JSONL files."),
    ],
    html: Annotated[
        Path | None, typer.Option(help="Also write one self-contained HTML report here.")
    ] = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print Markdown instead of terminal tables.")
    ] = False,
    benchmark: Annotated[
        str | None,
        typer.Option(help="Benchmark of results files without a config (tags task features)."),
    ] = None,
    features: Annotated[
        bool,
        typer.Option(help="Read the benchmark's tasks: feature tags, questions and gold."),
    ] = True,
    predictions: Annotated[
        Path | None,
        typer.Option(
            help="Predictions folder a results file scored (`<id>.sql` / `<id>.csv`), for the "
            "per-instance SQL and result diffs."
        ),
    ] = None,
) -> None:
    """Compare runs: overall (all tasks and submitted only; official / strict for Spider 2.0),
    by difficulty, engine and task feature, errors, pass@k, tokens, cost and time, and the
    instances that flip between runs or between the two scorings; for Spider 2.0 runs the
    paper's tables (Table 3 by difficulty, Table 8 by database type, by answer type, Tables 5-7
    with / without DBT, documentation and nested columns, actions per turn, steps per task and
    Table 19 cost per instance). With `--html`: plots
    (matplotlib), and per instance the question, SQL and result diffs against the gold and the
    error category; agent runs also get a trajectory viewer, `<run>.trajectories.html`.

    Example: `querybench report runs/oracle runs/zero-shot --html report.html`
    """
    from querybench.report import compare, paper_tables, render
    from querybench.report.runs import load_run, unique_names
    from querybench.report.trajectories import trajectory_page

    err = Console(stderr=True)
    try:
        loaded = [
            load_run(path, with_features=features, benchmark=benchmark, predictions=predictions)
            if path.is_file()
            else load_run(path, with_features=features)
            for path in runs
        ]
    except QuerybenchError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    loaded = unique_names(loaded)
    sections = compare.sections(loaded) + paper_tables.sections(loaded)
    title = "querybench report: " + ", ".join(run.label for run in loaded)
    if markdown:
        typer.echo(render.markdown(sections, title))
    else:
        render.print_sections(sections, Console())
    if html is not None:
        try:
            html.parent.mkdir(parents=True, exist_ok=True)
            html.write_text(render.html(sections, loaded, title), encoding="utf-8")
            err.print(f"wrote {html}")
            for run in loaded:  # agent runs: the trajectory viewer beside the report
                if run.trajectory_ids():
                    page = html.parent / f"{run.name}.trajectories.html"
                    page.write_text(trajectory_page(run), encoding="utf-8")
                    err.print(f"wrote {page}")
        except OSError as exc:
            said = f"--html {html} cannot be written: {exc.strerror or exc}"
            err.print(f"[red]error:[/red] {escape(said)}")
            raise typer.Exit(2) from None
