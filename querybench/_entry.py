"""The `querybench` console script's entry point: it imports the CLI only when it runs.

multiprocessing's forkserver imports the console script's main module before it forks the
query children; through this module that costs nothing, where importing `querybench.cli`
(typer, rich) would cost every run that executes a query 0.05 s more before its first one.
"""

from __future__ import annotations


def main() -> None:
    from querybench.cli import main as cli_main

    cli_main()
