"""`querybench verify PATH`: are these the same verdicts here, and if not, why?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from querybench.errors import QuerybenchError


def verify(
    path: Annotated[
        Path,
        typer.Argument(
            help="A results file FILE with its FILE.manifest.json beside it "
            "(`eval --output FILE`), or a run folder (`run --out`)."
        ),
    ],
) -> None:
    """Check the inputs against the manifest, score again with empty caches, and print, for
    each verdict that differs, why: the input file that changed, the library version, the
    scorer's code or the timeout policy that differs, or none (a non-deterministic verdict).
    Exit 0 only when every verdict is reproduced, 1 when one is not, 2 for unusable input.

    Example: `querybench verify scores.jsonl`, `querybench verify runs/oracle`
    """
    from querybench.runs.verify import Differing
    from querybench.runs.verify import verify as run_verify

    try:
        outcome = run_verify(path)
    except (QuerybenchError, TypeError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    for change in outcome.changes:
        owners = f" ({', '.join(sorted(change.instances))})" if change.instances else ""
        typer.echo(f"differs from the manifest: {change.reason}{owners}")

    def said(verdict: tuple[object, ...] | None) -> str:
        if verdict is None:
            return "absent"
        score, error, *_ = verdict
        return f"score {score} ({error or 'pass'})"

    for d in outcome.differing:
        assert isinstance(d, Differing)
        typer.echo(f"{d.instance_id}: recorded {said(d.recorded)}, now {said(d.now)}")
        for reason in d.reasons:
            typer.echo(f"  because {reason}")
    total = outcome.reproduced + len(outcome.differing)
    if outcome.ok:
        typer.echo(f"reproduced: all {outcome.reproduced} verdicts are the same")
        return
    typer.echo(f"not reproduced: {len(outcome.differing)} of {total} verdicts differ")
    raise typer.Exit(1)
