"""`querybench audit spider2-lite|spider2-snow`: findings in a Spider 2.0 gold folder."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from querybench.errors import QuerybenchError


def audit(
    benchmark: Annotated[str, typer.Argument(help="spider2-lite or spider2-snow.")],
    gold_dir: Annotated[
        Path | None, typer.Option(help="Gold folder (default: the benchmark's in the data root).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option(help="Write the findings here, one JSON object a line.")
    ] = None,
) -> None:
    """Check a gold folder: instances without gold, condition columns that do not fit a gold
    file, identical alternatives, duplicate header names, header-only files, eval-config entries
    of an unexpected shape, gold files without an eval-config entry. Findings are not failures:
    the exit status is 0 with or without them, 2 when the arguments cannot be used.

    Example: `querybench audit spider2-lite --output audit.jsonl`
    """
    from querybench.evaluation.spider2_gold import Benchmark, default_gold_dir
    from querybench.report.audit import KINDS, audit_gold

    err = Console(stderr=True)
    if benchmark not in ("spider2-lite", "spider2-snow"):
        err.print(f"[red]error:[/red] unknown benchmark {benchmark!r} (spider2-lite, spider2-snow)")
        raise typer.Exit(2)
    name: Benchmark = "spider2-lite" if benchmark == "spider2-lite" else "spider2-snow"
    folder = gold_dir or default_gold_dir(name)
    try:
        findings = audit_gold(folder, name)
    except QuerybenchError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    lines = "".join(f.to_json() + "\n" for f in findings)
    if output is None:
        typer.echo(lines, nl=False)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(lines, encoding="utf-8")
        table = Table("instance", "kind", "detail", title=f"gold audit: {folder}")
        for f in findings:
            table.add_row(f.instance_id, f.kind, f.detail)
        Console().print(table)
        err.print(f"wrote {output}")
    counts = Counter(f.kind for f in findings)
    err.print(", ".join(f"{kind} {counts[kind]}" for kind in KINDS))
