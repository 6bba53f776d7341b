"""The options `querybench eval <name>` shares between benchmarks, each declared once.

A benchmark module declares its eval options as one `Declared` dataclass (its spec's
`eval_options`), its fields in the order `--help` lists them; the options several benchmarks
take are made here so their flag, default and help are spelled once. `cli.py` builds each eval
command's flags from the class, the evaluator reads its defaults from it (`workers: int =
BirdEvalOptions.workers`), and `querybench.evaluate` takes an instance as its typed options;
`tests/test_eval_options.py` fails on a default spelled again and holds docs/eval_options.md
to the class.
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING
from typing import Any

from querybench.declared import SPEC, Spec, option

# Where the command line alone reads the option (the API has its own keyword or none).
COMMAND_ONLY = frozenset({"predictions", "output", "executor", "address", "runnable"})


# What reading one prediction file may cost, unless told: the defaults of the readers' bounds
# (`evaluation.prediction_file.ReadLimits`) and of the Spider 2.0 evals' flags that set them.
MAX_BYTES = 1 << 30
MAX_COLUMNS = 4_096
MAX_CELLS = 25_000_000
MAX_LINE_BYTES = 16 << 20
READ_SECONDS = 60.0


def predictions(help: str) -> Any:
    """The prediction file or folder, its shape said by each benchmark: required on the command
    line; `evaluate` takes it as its second argument, so an options object is made without it."""
    return dataclasses.field(default=None, metadata={SPEC: Spec(help=help, cli_default=MISSING)})


def location(help: str) -> Any:
    """A file or folder left out to be found in the data layout."""
    return option(None, help=help)


def workers() -> Any:
    return option(2, help="Queries run in parallel.", min=1)


def timeout(default: float, help: str) -> Any:
    return option(default, help=help, min=0.001)


def output() -> Any:
    return option(None, help="Write one JSON line per instance to this file.")


EXECUTOR = "local"  # where scoring runs unless told: the command line's and `evaluate`'s


def executor() -> Any:
    return option(
        EXECUTOR,
        help="local (this process) or ray (shards on a Ray cluster; "
        "pip install 'querybench[ray]'); --workers then caps each engine cluster-wide.",
    )


def address() -> Any:
    return option(None, help="Ray cluster to join (auto, ray://host:10001); default a local Ray.")


def runnable() -> Any:
    return option(
        False,
        help="Only the data's tasks that can run here (`querybench data status`): the others "
        "are left out instead of scored engine_unavailable.",
        flag="--runnable",
    )


def scoring() -> Any:
    return option("official", help="Which score is `score`: official or strict (both reported).")
