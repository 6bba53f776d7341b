"""`vf-run`: verifiers' own `vf-eval` with the same arguments, `--no-push` unless `--push`.

No verifiers release ships a `vf-run` command (0.4.0 has `vf-eval`), and `vf-eval` pushes
results to the platform by default, which needs a cloud login; the environment READMEs' run
line needs neither. `--push` is passed on to `vf-eval` as it is.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from querybench.errors import QuerybenchError


def eval_arguments(argv: Sequence[str]) -> list[str]:
    """`argv` as `vf-eval` gets it: `--no-push` added unless `--push` or `--no-push` is there."""
    arguments = list(argv)
    if "--push" not in arguments and "--no-push" not in arguments:
        arguments.append("--no-push")
    return arguments


def main(argv: Sequence[str] | None = None) -> None:
    """Run `vf-eval`; a querybench data error (no question file, a missing database) ends it
    with that one line and exit status 2 instead of a traceback."""
    from verifiers.v1.cli.eval.main import main as vf_eval

    arguments = eval_arguments(sys.argv[1:] if argv is None else argv)
    if arguments == ["--no-push"] or any(a in ("-h", "--help") for a in arguments):
        arguments = [a for a in arguments if a != "--no-push"]
        print("vf-run: verifiers' vf-eval, with --no-push unless --push is given.")
    try:
        vf_eval(arguments)
    except QuerybenchError as exc:
        print(f"vf-run: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
