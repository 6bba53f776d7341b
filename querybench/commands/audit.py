"""`querybench audit spider2-lite|spider2-snow`: findings in a Spider 2.0 gold folder."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from querybench.benchmarks import specs
from querybench.errors import QuerybenchError

if TYPE_CHECKING:
    from querybench.report.audit import AuditReport


def audit(
    benchmark: Annotated[str, typer.Argument(help="spider2-lite or spider2-snow.")],
    gold_dir: Annotated[
        Path | None, typer.Option(help="Gold folder (default: the benchmark's in the data root).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option(help="Write the findings here, one JSON object a line.")
    ] = None,
    run_gold_sql: Annotated[
        bool,
        typer.Option(
            help="Run the gold SQL of local (SQLite) instances whose database is in --db-dir "
            "and score it against the gold CSVs. On by default: the eight rebuilt databases "
            "take seconds. Skipped without a database folder."
        ),
    ] = True,
    db_dir: Annotated[
        Path | None,
        typer.Option(
            help="Local databases as DB.sqlite (default: the Spider 2.0 database folders of "
            "the data roots, as `eval --mode sql` finds them)."
        ),
    ] = None,
    tasks_file: Annotated[
        Path | None,
        typer.Option(help="Tasks JSONL naming each task's database (default: beside the gold)."),
    ] = None,
    workers: Annotated[int, typer.Option(help="Gold SQL queries run at once.")] = 2,
    timeout: Annotated[float, typer.Option(help="Seconds per gold SQL query.")] = 60.0,
) -> None:
    """Check a gold folder: instances without gold, gaps in the alternative letters (lost
    files), gold alternatives that do not score 1
    against themselves (official scoring, the whole loop, and strict), gold SQL that does not
    reproduce its gold CSVs on the local databases, condition columns that do not fit a gold
    file, identical alternatives, duplicate header names, header-only files, eval-config entries
    of an unexpected shape, gold files without an eval-config entry.

    Prints a table of the findings and their counts per kind (on stderr when the findings go to
    stdout as JSON lines). Findings are not failures: the exit status is 0 with or without
    them, 2 when the arguments cannot be used.

    Example: `querybench audit spider2-lite --output audit-lite.jsonl`, or, without running
    gold SQL and keeping only one kind: `querybench audit spider2-snow --no-run-gold-sql |
    grep never_passes_official`
    """
    from querybench.evaluation.spider2.gold import default_gold_dir
    from querybench.report.audit import audit_gold
    from querybench.report.audit_scoring import GoldSqlRun
    from querybench.tasks.databases import spider2_database_dirs

    err = Console(stderr=True)
    audited = [s.name.value for s in specs() if s.official_variant]
    if benchmark not in audited:
        err.print(f"[red]error:[/red] unknown benchmark {benchmark!r} ({', '.join(audited)})")
        raise typer.Exit(2)
    name = benchmark
    folder = gold_dir or default_gold_dir(name)
    databases = [db_dir] if db_dir is not None else spider2_database_dirs()
    tasks = tasks_file or folder.parent.parent / f"{name}.jsonl"
    run = None
    if run_gold_sql and databases and all(d.is_dir() for d in databases):
        folders = databases[0] if len(databases) == 1 else tuple(databases)
        run = GoldSqlRun(folders, tasks if tasks.is_file() else None, workers, timeout)
    try:
        report = audit_gold(folder, name, run)
    except QuerybenchError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    lines = "".join(f.to_json() + "\n" for f in report.findings)
    if output is None:
        typer.echo(lines, nl=False)
        _print_tables(err, report, folder)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(lines, encoding="utf-8")
        console = Console()
        _print_tables(console, report, folder)
        console.print(f"wrote {output}")
    if run is None:
        why = "--no-run-gold-sql" if not run_gold_sql else "no database folder (data status)"
        err.print(f"gold SQL not run ({why})")


def _print_tables(console: Console, report: AuditReport, folder: Path) -> None:
    from querybench.report.audit import KINDS

    findings = Table("instance", "kind", "detail", title=f"gold audit: {folder}")
    for f in report.findings:
        findings.add_row(f.instance_id, f.kind, f.detail)
    console.print(findings)
    counts = Counter(f.kind for f in report.findings)
    per_kind = Table("kind", "findings", "instances", title="findings per kind")
    for kind in KINDS:
        instances = len({f.instance_id for f in report.findings if f.kind == kind})
        per_kind.add_row(kind, str(counts[kind]), str(instances))
    console.print(per_kind)
    console.print(report.gold_sql.line())
