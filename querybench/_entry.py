"""The `querybench` console script's entry point: it imports the CLI only when it runs.

multiprocessing's forkserver imports the console script's main module before it forks the
query children; through this module that costs nothing, where importing `querybench.cli`
(typer, rich) would cost every run that executes a query 0.05 s more before its first one.
A plain `querybench eval ...` line runs without typer at all (`commands/eval_fast.py`).
"""

from __future__ import annotations

import sys
from typing import NoReturn


def run() -> NoReturn:
    """The console script: `main`, then `_exit` with its code."""
    try:
        main()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            _exit(exc.code or 0)
        raise
    _exit(0)


def main() -> None:
    from querybench.commands.eval_fast import exit_closed_pipe
    from querybench.commands.eval_fast import main as fast_main

    on_devnull = _is_devnull()
    try:
        if fast_main(sys.argv[1:]):
            return
        from querybench.cli import main as cli_main

        cli_main()
    except SystemExit as exc:
        # a closed stdout (`| head -1`) as click and rich answer it: click's flush-quiet
        # wrapper, rich's /dev/null put on fd 1, then exit 1 in silence; other tools exit 141
        pacified = type(sys.stdout).__name__ == "PacifyFlushWrapper"
        if exc.code == 1 and (pacified or (not on_devnull and _is_devnull())):
            exit_closed_pipe()
        raise


def _exit(code: int) -> NoReturn:
    """Exit with `code` without the interpreter's teardown of every module and object, 0.07 s
    once pandas is loaded: the output flushed and the exit handlers run first (worker pools and
    query children stopped, finalizers, logging), as a normal exit does. Only the last thread
    exits so: with another one still running, the normal exit, which waits for it."""
    import atexit
    import os
    import threading

    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if run_handlers is None or any(not t.daemon for t in others) or not _flushed():
        sys.exit(code)  # a closed or failing stream: the normal exit says so
    run_handlers()
    _flushed()  # what the handlers wrote
    os._exit(code)


def _flushed() -> bool:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return False
    return True


def _is_devnull() -> bool:
    """Whether fd 1 is /dev/null (rich puts it there when the reader of stdout is gone)."""
    import os

    try:
        return os.path.samestat(os.fstat(1), os.stat(os.devnull))
    except OSError:
        return False


if __name__ == "__main__":  # `python -m querybench._entry ...`, as the console script
    run()
