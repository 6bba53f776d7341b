"""`querybench eval <benchmark> ...` without typer, click or rich, for plain command lines.

typer builds its command tree and parses with click (0.03-0.04 CPU seconds of a small eval,
with the imports). A command line made only of the eval command's own `--flag value` pairs
(`--flag=value` too), each flag once and its value plain (`plain_values.plain_value`), every
required flag given, is parsed here from `eval_flags.COMMANDS`, a table generated from the typer
declarations in `cli.py` (`python -m tests.test_eval_fast` rewrites it; a test fails when
it is stale), and the command body of `eval_run` runs as typer would run it, with typer's
exit codes. Anything else (help, completion, a typo, a value typer must check or reject) is
left to typer, which then parses the whole line itself, so its messages stay its own.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from querybench.commands.plain_values import _DEFAULT_PATH_FLAGS, _UNSET, plain_value

_KINDS: dict[str, type] = {"str": str, "int": int, "float": float, "path": Path}
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
        option, has_value, value = rest[0].partition("=")
        if has_value and option.startswith("--"):
            rest = rest[1:]
        elif len(rest) >= 2 and not rest[1].startswith("-"):
            option, value, rest = rest[0], rest[1], rest[2:]
        else:
            return None
        flag = flags.get(option)
        if flag is None or flag.name in values:
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
    """Run the command as typer's `main` does: exit 0 after it, 130 on Ctrl-C, 1 on a closed
    pipe; any other error is raised with typer's traceback hook in place."""
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
        from typer._click.utils import PacifyFlushWrapper

        sys.stdout = PacifyFlushWrapper(sys.stdout)
        sys.stderr = PacifyFlushWrapper(sys.stderr)
        sys.exit(1)
    except EOFError:  # typer prints its "Aborted!" (rich, red): let it
        _typer_abort()
    except Exception as exc:
        _typer_traceback(exc)
        raise
    sys.exit(0)


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


def flag_table(group: Any) -> str:
    """The source of `eval_flags.py` from `group`, typer's command of `cli.eval_app`; a command
    with an option this parser cannot read as typer does is left out (typer runs it)."""
    lines = [
        '"""Each eval command\'s options as `cli.py` declares them, for `eval_fast.py`.',
        "",
        "Generated by `python -m tests.test_eval_fast` from the typer commands: do not edit",
        "(tests/test_eval_fast.py fails when it differs from what the declarations give).",
        '"""',
        "",
        "from querybench.commands.plain_values import Flag",
        "",
        "COMMANDS: dict[str, tuple[Flag, ...]] = {",
    ]
    for name, command in group.commands.items():
        flags = [_flag(param) for param in command.params]
        plain = command.context_settings == {} and not command.allow_extra_args
        if plain and all(flags):
            lines += [f"    {_source(name)}: (", *(f"        {flag}," for flag in flags), "    ),"]
    return "\n".join([*lines, "}", ""])


def _flag(param: Any) -> str | None:
    """`Flag(...)` for a typer option this parser reads as typer does, else None."""
    descriptor = getattr(param, "type_descriptor", None)
    info = getattr(descriptor, "parameter_info", None)
    annotation: Any = getattr(descriptor, "annotation", None)
    kind = {v: k for k, v in _KINDS.items()}.get(annotation)
    if type(param).__name__ != "TyperOption" or kind is None or info is None:
        return None
    simple = (len(param.opts), param.secondary_opts, param.nargs, param.multiple) == (1, [], 1, 0)
    if not simple or param.is_flag or param.envvar or param.callback or param.is_eager:
        return None
    if not param.expose_value or getattr(info, "parser", None) or getattr(info, "clamp", False):
        return None
    if any(getattr(info, k, v) != v for k, v in _DEFAULT_PATH_FLAGS.items()):
        return None  # a path check (exists, writable, ...) only typer makes
    if type(param.default) not in (str, int, float, type(None)):
        return None
    fields = [_source(param.opts[0]), _source(param.name), _source(kind)]
    if param.required:
        fields.append("required=True")
    elif param.default is not None:
        fields.append(f"default={_source(param.default)}")
    fields += [f"{k}={getattr(info, k)!r}" for k in ("min", "max") if getattr(info, k) is not None]
    return f"Flag({', '.join(fields)})"


def _source(value: str | float | None) -> str:
    """A literal as ruff formats it (strings in double quotes)."""
    return json.dumps(value) if isinstance(value, str) else repr(value)
