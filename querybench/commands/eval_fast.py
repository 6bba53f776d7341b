"""`querybench eval <benchmark> ...` without typer, click or rich, for plain command lines.

typer builds its command tree and parses with click (0.03-0.04 CPU seconds of a small eval,
with the imports). A command line made only of the eval command's own `--flag value` pairs
(`--flag=value` too; an on/off flag such as `--runnable` alone), each flag once and its value
plain (`plain_values.plain_value`), every required flag given, is parsed here from
`eval_flags.COMMANDS`, a table generated from the typer declarations in `cli.py` (`python -m
tests.test_eval_fast` rewrites it; a test fails when it is stale), and the command body of
`eval_run` runs as typer would run it, with typer's exit codes. Anything else (help,
completion, a typo, a value typer must check or reject) is left to typer, which then parses
the whole line itself, so its messages stay its own.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from querybench.commands.plain_values import _UNSET, plain_value

_KINDS: dict[str, type] = {"str": str, "int": int, "float": float, "path": Path, "flag": bool}
_VERBOSE = ("--verbose", "-v")  # the root command's one option (`cli._options`)


@dataclass(frozen=True)
class EvalCall:
    """A parsed command line: the eval command, the root's --verbose, the values by name."""

    command: str
    verbose: bool
    values: dict[str, Any]


def parse(argv: Sequence[str]) -> EvalCall | None:
    """The call typer would make for `argv`, or None where typer must parse it."""
    from querybench.commands.eval_flags import COMMANDS

    args = list(argv)
    verbose = False
    while args and args[0] in _VERBOSE:
        verbose, args = True, args[1:]
    if len(args) < 2 or args[0] != "eval" or args[1] not in COMMANDS:
        return None
    flags = {flag.option: flag for flag in COMMANDS[args[1]]}
    values: dict[str, Any] = {}
    rest = args[2:]
    while rest:
        switch = flags.get(rest[0])
        if switch is not None and switch.kind == "flag":  # `--runnable`: no value
            if switch.name in values:
                return None
            values[switch.name], rest = True, rest[1:]
            continue
        option, has_value, value = rest[0].partition("=")
        if has_value and option.startswith("--"):
            rest = rest[1:]
        elif len(rest) >= 2 and not rest[1].startswith("-"):
            option, value, rest = rest[0], rest[1], rest[2:]
        else:
            return None
        flag = flags.get(option)
        if flag is None or flag.name in values or flag.kind == "flag":
            return None
        coerced = plain_value(_KINDS[flag.kind], flag, value)
        if coerced is _UNSET:
            return None
        values[flag.name] = coerced
    for flag in flags.values():
        if flag.name not in values:
            if flag.required:
                return None
            values[flag.name] = flag.default
    return EvalCall(args[1], verbose, values)


def run(call: EvalCall) -> None:
    """Run the command as typer's `main` does: exit 0 after it, 130 on Ctrl-C; on a closed pipe
    141, as other command-line tools (typer's 1 is overridden in `_entry`); any other error is
    raised with typer's traceback hook in place."""
    from querybench.commands import eval_run

    try:
        if call.verbose:
            eval_run.verbose()
        eval_run.COMMANDS[call.command](**call.values)
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            _typer_traceback(exc)
            raise
        exit_closed_pipe()
    except EOFError:  # typer prints its "Aborted!" (rich, red): let it
        _typer_abort()
    except Exception as exc:
        _typer_traceback(exc)
        raise
    sys.exit(0)


CLOSED_PIPE_EXIT = 128 + 13  # what a shell reports for a tool SIGPIPE ended (`... | head -1`)


def exit_closed_pipe() -> NoReturn:
    """The reader of stdout went away (`| head -1`): exit as other command-line tools do on a
    closed pipe, 141 and no traceback; what is left to write goes to /dev/null, so the flush
    at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout already closed or replaced
        pass
    sys.exit(CLOSED_PIPE_EXIT)


def main(argv: Sequence[str]) -> bool:
    """Run `argv` here if it is a plain eval command line (exits); False: typer's to run."""
    if os.name == "nt" or any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return False  # typer expands Windows wildcards and answers shell completion
    call = parse(argv)
    if call is None:
        return False
    run(call)
    return True


def _typer_traceback(exc: BaseException) -> None:
    """What typer's `Typer.__call__` does with an error: its hook shows it (with the
    defaults `cli._root` keeps, as a test checks)."""
    import typer.main
    from typer.models import DeveloperExceptionConfig

    defaults = typer.Typer()
    sys.excepthook = typer.main.except_hook
    config = DeveloperExceptionConfig(
        pretty_exceptions_enable=defaults.pretty_exceptions_enable,
        pretty_exceptions_show_locals=defaults.pretty_exceptions_show_locals,
        pretty_exceptions_short=defaults.pretty_exceptions_short,
    )
    setattr(exc, typer.main._typer_developer_exception_attr_name, config)


def _typer_abort() -> None:
    from typer import _click, rich_utils

    _click.echo(file=sys.stderr)
    rich_utils.rich_abort_error()
    sys.exit(1)
