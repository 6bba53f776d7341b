"""The `querybench` command line: a thin layer over the library functions."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Annotated, Any

import typer

from querybench.benchmarks import BenchmarkSpec, spec, specs
from querybench.commands import eval_run
from querybench.commands.declared_flags import signature
from querybench.commands.plain_options import PlainGroup

# The root command; `app` (below, PEP 562) is it with every command group registered.
_root = typer.Typer(
    help="Benchmark, evaluate and train text-to-SQL systems (Spider 2.0, BIRD, Spider 1.0).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
    cls=PlainGroup,
)
eval_app = typer.Typer(
    help=(
        "Score predictions against a benchmark's gold.\n\n"
        "Examples:\n\n"
        "    querybench eval spider2-lite --predictions my_csvs/\n\n"
        "    querybench eval spider2-lite --predictions my_sqls/ --mode sql --db-dir dbs/\n\n"
        "    querybench eval spider1 --predictions pred.txt\n\n"
        "    querybench eval bird --predictions predict_dev.json --db-dir dev_databases/\n\n"
        "    querybench eval spider2-dbt --predictions RUNDIR/predictions\n\n"
        "    querybench eval spider2 --predictions RUNDIR/submission"
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    cls=PlainGroup,
)
_root.add_typer(eval_app, name="eval")


@_root.callback()
def _options(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also log what the library skips and why.")
    ] = False,
) -> None:
    if verbose:
        eval_run.verbose()


# The commands beside `eval`, in the order `querybench --help` lists them: (name, module,
# attribute, a group or a command). Each module is imported only when its command is named on
# the command line (or for help and completion): `querybench eval bird` imports none of them.
_COMMANDS = (
    ("context", "querybench.commands.context", "context", False),
    ("tasks", "querybench.commands.tasks", "tasks_app", True),
    ("data", "querybench.commands.data", "data_app", True),
    ("db", "querybench.commands.db", "app", True),
    ("run", "querybench.commands.run", "run", False),
    ("report", "querybench.commands.report", "report", False),
    ("audit", "querybench.commands.audit", "audit", False),
    ("verify", "querybench.commands.verify", "verify", False),
)
_registered: set[str] = set()


def _register(names: Collection[str]) -> None:
    """Register the named commands of `_COMMANDS` (once each, in their listed order)."""
    import importlib

    for name, module, attribute, group in _COMMANDS:
        if name in names and name not in _registered:
            _registered.add(name)
            target = getattr(importlib.import_module(module), attribute)
            if group:
                _root.add_typer(target, name=name)
            else:
                _root.command(name)(target)


def _named(argv: Sequence[str]) -> Collection[str]:
    """The commands a command line needs: the one it names, or every one (help, completion,
    an unknown name: typer's listing and suggestions then see them all)."""
    every = [name for name, *_ in _COMMANDS]
    if _completing():
        return every
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    if first == "eval":
        return ()
    return [first] if first in every else every


def _completing() -> bool:
    """Shell completion is asking (typer's `_<PROG>_COMPLETE`): it needs every command."""
    return any(key.startswith("_") and key.endswith("_COMPLETE") for key in os.environ)


def _only_the_named_eval(argv: Sequence[str]) -> None:
    """`querybench eval <name> …` builds that one eval command: typer builds the options of
    every command of a group before it runs one (an unknown name keeps them all)."""
    if _completing():
        return
    words = [arg for arg in argv if not arg.startswith("-")]
    if len(words) >= 2 and words[0] == "eval":
        named = [c for c in eval_app.registered_commands if c.name == words[1]]
        if named:
            eval_app.registered_commands = named


def __getattr__(name: str) -> Any:
    """`app`: the root command with every command registered (for tests and library users;
    the console script registers only what its command line names)."""
    if name == "app":
        _register([name for name, *_ in _COMMANDS])
        return _root
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _spider2_doc(benchmark: str) -> str:
    return (
        f"Score {benchmark} predictions; both official and strict scores are reported.\n\n"
        f"Example: `querybench eval {benchmark} --predictions "
        f"$QUERYBENCH_DATA/spider2/{benchmark}/evaluation_suite/example_submission_folder_csv`"
        "\n\nVerdicts are kept by the content of each prediction and gold file under "
        "$QUERYBENCH_CACHE: QUERYBENCH_VERDICT_CACHE=0 scores every instance again."
    )


def _spider1_doc(benchmark: str) -> str:
    return (
        f"{spec(benchmark).title}: Spider 1.0 execution match (official test-suite semantics, "
        "and strict), and exact match.\n\n"
        f"Example: `querybench eval {benchmark} --predictions pred.txt --metrics ex,em` (gold "
        "and databases: the data's; `--gold FILE --db-dir DIR` name others)"
    )


_BIRD_DOC = """
BIRD execution match (set semantics) with error / trivial / gold_error metrics, and
optionally the official Soft-F1 and R-VES; tables by difficulty as the official scripts.

Example: `querybench eval bird --questions dev.json --predictions predict_dev.json
--db-dir dev_databases/ --metrics ex,soft_f1`
"""
_MINI_DEV_DOC = """
BIRD mini-dev (500 questions) on SQLite, MySQL/MariaDB or PostgreSQL: EX, and Soft-F1 /
R-VES with --metrics, in the official by-difficulty tables.

Examples:

`querybench eval bird-mini-dev --predictions predict_mini_dev_sqlite.json --metrics
ex,soft_f1,r_ves`

`querybench eval bird-mini-dev --dialect mysql --db-url mysql://root@127.0.0.1:3306/BIRD
--predictions predict_mini_dev_mysql.json --questions mini_dev_mysql.json`
"""
_DBT_DOC = """
Score Spider 2.0-DBT outputs with `duckdb_match` (official and strict), over every task
(a missing gold file counts 0) and over the tasks whose gold is present.

Example: `querybench eval spider2-dbt --predictions RUNDIR/predictions`
"""
_AGENTIC_DOC = """
Score an agentic Spider 2.0 submission (the official layout), official and strict, over
all 632 tasks, the DBT part and the tasks whose gold is here.

Example: `querybench eval spider2 --predictions
$QUERYBENCH_DATA/spider2/spider2/evaluation_suite/example_submission_folder`
"""

# Each eval command's help, by the command body its benchmark's spec names.
_HELP: dict[str, Callable[[str], str]] = {
    "querybench.commands.eval_run:spider2": _spider2_doc,
    "querybench.commands.eval_run:spider2_dbt": lambda _: _DBT_DOC,
    "querybench.commands.eval_run:spider2_agentic": lambda _: _AGENTIC_DOC,
    "querybench.commands.eval_execution:bird": lambda _: _BIRD_DOC,
    "querybench.commands.eval_execution:bird_mini_dev": lambda _: _MINI_DEV_DOC,
    "querybench.commands.eval_execution:spider1": _spider1_doc,
}


def _eval_command(found: BenchmarkSpec) -> Callable[..., None]:
    """`querybench eval <name>`: its flags from the spec's declared eval options, its body the
    spec's command."""
    benchmark = found.name.value
    if found.command is None or found.eval_options is None:
        raise AssertionError(f"{benchmark}: an eval command needs its eval_options")

    def command(**values: Any) -> None:
        eval_run.COMMANDS[benchmark](**values)

    command.__signature__ = signature(found.eval_options)  # type: ignore[attr-defined]
    command.__doc__ = _HELP[found.command](benchmark)
    command.__name__ = "eval_" + benchmark.replace("-", "_")
    return command


for _spec in specs():
    if _spec.command is not None:
        eval_app.command(_spec.name.value)(_eval_command(_spec))


def main() -> None:
    _register(_named(sys.argv[1:]))
    _only_the_named_eval(sys.argv[1:])
    _root()
