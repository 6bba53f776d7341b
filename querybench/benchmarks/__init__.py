"""The benchmark registry: every benchmark declared once, in a module of its own here.

    >>> from querybench.benchmarks import Benchmark, spec
    >>> spec("spider-dk").task_files
    ('spider-dk/Spider-DK.json',)

Each module of this package (one per benchmark or family of benchmarks) holds `SPECS`, its
`BenchmarkSpec`s: pure data naming its loader, evaluator, eval command, run scorer and release
parts by `"module:attr"`. The registry finds the modules by scanning the package, so adding a
benchmark is its module (and a `Benchmark` member); the layers that dispatch on a benchmark ask
`spec(name)` and `resolve` what it names, importing only the one they use.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from functools import cache
from typing import Any

from querybench.benchmarks.spec import (
    Benchmark,
    BenchmarkSpec,
    Family,
    QuestionFormat,
    ReportGroup,
)
from querybench.errors import DataError

__all__ = [
    "Benchmark",
    "BenchmarkSpec",
    "Family",
    "QuestionFormat",
    "ReportGroup",
    "family",
    "is_agentic",
    "lookup",
    "names",
    "resolve",
    "spec",
    "specs",
]


@cache
def _table() -> dict[Benchmark, BenchmarkSpec]:
    found: dict[Benchmark, BenchmarkSpec] = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name in ("spec", "eval_options"):
            continue
        for entry in importlib.import_module(f"{__name__}.{module.name}").SPECS:
            if entry.name in found:
                raise AssertionError(f"benchmark {entry.name} is declared twice")
            found[entry.name] = entry
    missing = [b for b in Benchmark if b not in found]
    if missing:
        raise AssertionError(f"no module declares {', '.join(missing)}")
    return {b: found[b] for b in Benchmark}  # the enum's order


def specs() -> Iterator[BenchmarkSpec]:
    """Every benchmark's spec, in `Benchmark`'s order."""
    return iter(_table().values())


def names(*, evaluable: bool = False) -> tuple[str, ...]:
    """Every benchmark's name (only those `eval` scores, with `evaluable`)."""
    return tuple(s.name.value for s in specs() if s.evaluable or not evaluable)


def spec(name: str) -> BenchmarkSpec:
    """The spec of `name`; an unknown one is a `DataError` naming every known one."""
    try:
        return _table()[Benchmark(name)]
    except ValueError:
        known = ", ".join(b.value for b in Benchmark)
        raise DataError(f"unknown benchmark {name!r}; choose one of {known}") from None


def lookup(name: str) -> BenchmarkSpec | None:
    """The spec of `name`, or None for a name that is not a benchmark."""
    try:
        return spec(name)
    except DataError:
        return None


def family(name: str | None) -> Family | None:
    """The family of `name` (which shared machinery it uses), None for no benchmark."""
    found = lookup(name) if name else None
    return found.family if found is not None else None


def is_agentic(name: str | None) -> bool:
    """Whether `name` is the agentic setting (its own task folders and submission layout)."""
    found = lookup(name) if name else None
    return found is not None and found.agentic


def resolve(reference: str) -> Any:
    """The object a spec names as `"module:attr"`, its module imported now."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)
