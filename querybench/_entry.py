"""The `querybench` console script's entry point: it imports the CLI only when it runs.

multiprocessing's forkserver imports the console script's main module before it forks the
query children; through this module that costs nothing, where importing `querybench.cli`
(typer, rich) would cost every run that executes a query 0.05 s more before its first one.
A plain `querybench eval ...` line runs without typer at all (`commands/eval_fast.py`).
"""

from __future__ import annotations

import sys


def main() -> None:
    from querybench.commands.eval_fast import main as fast_main

    if fast_main(sys.argv[1:]):
        return
    from querybench.cli import main as cli_main

    cli_main()


if __name__ == "__main__":  # `python -m querybench._entry ...`, as the console script
    main()
