"""`querybench.evaluate`: one entry to every benchmark's evaluator, run here or on Ray.

Every evaluator has one shape, `evaluate_<benchmark>(predictions, *, <gold and database
locations>, <options>, on_result=None)`; its keyword parameters are the options `evaluate`
accepts for that benchmark (an unknown one is a `TypeError` naming the valid ones), plus the
few the data layout reads (`data_dir`, mini-dev's `dialect`). Locations left out are found in
the data layout as the `eval` command finds them, so `evaluate("spider2-lite", folder)` just
works. `executor="ray"` scores the same evaluator in shards on a Ray cluster (`ray_eval`),
imported only then.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args, overload

from querybench.benchmarks import Benchmark, BenchmarkSpec, lookup, names, resolve, spec, specs
from querybench.benchmarks.eval_options import COMMAND_ONLY, EXECUTOR
from querybench.declared import Declared, declared_fields
from querybench.errors import SubmissionWarning
from querybench.evaluation.record import EvalEvents, InstanceResult, OnResult

if TYPE_CHECKING:
    from querybench.benchmarks.bird import BirdEvalOptions, MiniDevEvalOptions
    from querybench.benchmarks.spider1 import Spider1EvalOptions
    from querybench.benchmarks.spider2 import (
        AgenticEvalOptions,
        DbtEvalOptions,
        Spider2EvalOptions,
    )

Executor = Literal["local", "ray"]
BENCHMARKS: tuple[str, ...] = names(evaluable=True)  # what `evaluate` scores
EXECUTORS: tuple[str, ...] = get_args(Executor)

Arguments = dict[str, Any]
# Keywords the benchmark's name fixes, or `evaluate` sets itself.
_FIXED = frozenset({"benchmark", "on_result"})


@overload
def evaluate(
    benchmark: Literal["spider2-lite", "spider2-snow"],
    predictions: str | Path,
    options: Spider2EvalOptions | Mapping[str, Any] | None = ...,
    events: EvalEvents | None = ...,
    *,
    on_result: OnResult | None = ...,
    executor: Executor | str = ...,
    address: str | None = ...,
    **keywords: Any,
) -> list[InstanceResult]: ...


@overload
def evaluate(
    benchmark: Literal["spider1", "spider-syn", "spider-dk"],
    predictions: str | Path,
    options: Spider1EvalOptions | Mapping[str, Any] | None = ...,
    events: EvalEvents | None = ...,
    *,
    on_result: OnResult | None = ...,
    executor: Executor | str = ...,
    address: str | None = ...,
    **keywords: Any,
) -> list[InstanceResult]: ...


@overload
def evaluate(
    benchmark: Literal["bird"],
    predictions: str | Path,
    options: BirdEvalOptions | Mapping[str, Any] | None = ...,
    events: EvalEvents | None = ...,
    *,
    on_result: OnResult | None = ...,
    executor: Executor | str = ...,
    address: str | None = ...,
    **keywords: Any,
) -> list[InstanceResult]: ...


@overload
def evaluate(
    benchmark: Literal["bird-mini-dev"],
    predictions: str | Path,
    options: MiniDevEvalOptions | Mapping[str, Any] | None = ...,
    events: EvalEvents | None = ...,
    *,
    on_result: OnResult | None = ...,
    executor: Executor | str = ...,
    address: str | None = ...,
    **keywords: Any,
) -> list[InstanceResult]: ...


@overload
def evaluate(
    benchmark: Literal["spider2-dbt"],
    predictions: str | Path,
    options: DbtEvalOptions | Mapping[str, Any] | None = ...,
    events: EvalEvents | None = ...,
    *,
    on_result: OnResult | None = ...,
    executor: Executor | str = ...,
    address: str | None = ...,
    **keywords: Any,
) -> list[InstanceResult]: ...


@overload
def evaluate(
    benchmark: Literal["spider2"],
    predictions: str | Path,
    options: AgenticEvalOptions | Mapping[str, Any] | None = ...,
    events: EvalEvents | None = ...,
    *,
    on_result: OnResult | None = ...,
    executor: Executor | str = ...,
    address: str | None = ...,
    **keywords: Any,
) -> list[InstanceResult]: ...


@overload
def evaluate(
    benchmark: str,
    predictions: str | Path,
    options: Mapping[str, Any] | None = ...,
    events: EvalEvents | None = ...,
    *,
    on_result: OnResult | None = ...,
    executor: Executor | str = ...,
    address: str | None = ...,
) -> list[InstanceResult]: ...


def evaluate(
    benchmark: Benchmark | str,
    predictions: str | Path,
    options: Declared | Mapping[str, Any] | None = None,
    events: EvalEvents | None = None,
    *,
    on_result: OnResult | None = None,
    executor: Executor | str | None = None,
    address: str | None = None,
    **keywords: Any,
) -> list[InstanceResult]:
    """Score `predictions` (the benchmark's official file or folder) against its gold; one
    result per instance, in the evaluator's order.

    `options` are the benchmark's: its eval options object (`BirdEvalOptions(workers=4)`, the
    class its spec declares, whose defaults are the evaluator's: only the fields set away from
    them are passed on, `executor` and `address` to this call) or a mapping, and they may also
    be given as keywords (the evaluator's options an object does not hold: `instance_ids`,
    `cache_dir`, ...), never both for one name; `events` what it says while scoring
    (`EvalEvents`; `on_result` alone may also be a keyword). `executor="ray"` runs shards on
    the Ray cluster at `address` (a local Ray without one); `workers` then caps the shards of
    one engine kind in flight, and only `on_result` is told."""
    evaluator = _evaluator(benchmark)
    if isinstance(options, Declared):
        options, own = options_of(benchmark, options)
        executor = executor if executor is not None else own.get("executor")
        address = address if address is not None else own.get("address")
    executor = executor if executor is not None else EXECUTOR
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, not {executor!r}")
    given = dict(options or {})
    twice = sorted(set(given) & set(keywords))
    if twice:
        raise TypeError(
            f"evaluate({benchmark!r}) got {', '.join(twice)} in options and as keywords"
        )
    if on_result is not None:
        if events is not None and events.on_result is not None:
            raise TypeError("on_result given twice: as a keyword and in events")
        events = replace(events or EvalEvents(), on_result=on_result)
    events = events or EvalEvents()
    checked = _checked(benchmark, evaluator, given | keywords)
    pred = Path(predictions)
    if executor == "local":
        return score(benchmark, pred, _resolved(benchmark, checked), events=events)
    from querybench.runs.ray_eval import evaluate_on_ray

    if not spec(benchmark).on_ray:
        sharded = ", ".join(s.name for s in specs() if s.on_ray)
        raise ValueError(f"executor='ray' scores {sharded}; {benchmark} runs locally")
    arguments = _resolved(benchmark, checked)
    workers = arguments.get("workers", _parameters(evaluator)["workers"].default)
    return evaluate_on_ray(
        benchmark,
        pred,
        arguments,
        score,
        workers=workers,
        address=address,
        on_result=events.on_result,
    )


# The fields of an eval options object a prediction file's read limits are made of.
_READ_LIMITS = {
    "max_bytes": "max_bytes",
    "max_columns": "max_columns",
    "max_cells": "max_cells",
    "max_line_bytes": "max_line_bytes",
    "read_timeout": "seconds",
}
# Fields of the command line's own, which `evaluate` has no use for.
_COMMAND_LINE = COMMAND_ONLY - {"executor", "address"}


def options_of(benchmark: str, declared: Declared) -> tuple[Arguments, Arguments]:
    """The evaluator's options an eval options object sets (the fields away from their declared
    default, which the evaluator's own defaults are), and `evaluate`'s own (`executor`,
    `address`); a field only the command line reads, set, is a `TypeError`."""
    expected = spec(benchmark).eval_options
    if expected is None or not isinstance(declared, expected):
        wanted = expected.__name__ if expected is not None else "a mapping"
        raise TypeError(f"evaluate({benchmark!r}) takes {wanted}, not {type(declared).__name__}")
    changed = {
        f.name: getattr(declared, f.name)
        for f, _, _ in declared_fields(type(declared))
        if getattr(declared, f.name) != f.default
    }
    refused = sorted(set(changed) & _COMMAND_LINE)
    if refused:
        raise TypeError(
            f"evaluate({benchmark!r}): {', '.join(refused)} is the command line's "
            "(the predictions are evaluate's second argument)"
        )
    own: Arguments = {k: changed.pop(k) for k in ("executor", "address") if k in changed}
    if set(changed) & set(_READ_LIMITS):
        from querybench.evaluation.prediction_file import ReadLimits

        changed = {k: v for k, v in changed.items() if k not in _READ_LIMITS}
        limits = {name: getattr(declared, field) for field, name in _READ_LIMITS.items()}
        changed["limits"] = ReadLimits(**limits)
    if isinstance(changed.get("metrics"), str):  # the command line's text: the API's names
        changed["metrics"] = [m.strip() for m in changed["metrics"].split(",") if m.strip()]
    return changed, own


def score(
    benchmark: str,
    predictions: Path,
    arguments: Arguments,
    instance_ids: Collection[str] | None = None,
    *,
    on_result: OnResult | None = None,
    events: EvalEvents | None = None,
) -> list[InstanceResult]:
    """The benchmark's evaluator on checked, resolved `arguments` (only `instance_ids`, a
    shard, when given): what `evaluate` runs here and each Ray worker runs on its shard.
    `events` reach the evaluator as the callbacks it takes (each evaluator's own keywords)."""
    evaluator = _evaluator(benchmark)
    if instance_ids is not None:
        arguments = arguments | {"instance_ids": instance_ids}
    events = events or EvalEvents(on_result=on_result)
    accepted = _parameters(evaluator)
    callbacks = {
        name: callback
        for name, callback in (
            ("on_result", events.on_result),
            ("_on_total", events.on_total),
            ("_on_query", events.on_query),
        )
        if callback is not None and name in accepted
    }
    out = evaluator(predictions, **arguments, **callbacks)
    if isinstance(out, list):
        return out
    for message in out.warnings:  # an AgenticEvaluation: results and the submission's warnings
        warnings.warn(message, SubmissionWarning, stacklevel=3)
    return list(out.results)


def resolved_options(benchmark: str, options: Arguments) -> Arguments:
    """The arguments `evaluate(benchmark, ..., **options)` gives its evaluator: the options
    checked and the locations they leave out filled from the data layout (what a manifest
    hashes)."""
    public = {k: v for k, v in options.items() if not k.startswith("_") and k != "on_result"}
    return _resolved(benchmark, _checked(benchmark, _evaluator(benchmark), public))


def _evaluator(benchmark: str) -> Callable[..., Any]:
    """The benchmark's evaluator (its module imported now: each pulls a different stack)."""
    found = lookup(benchmark)
    if found is None or found.evaluator is None:
        raise ValueError(f"unknown benchmark {benchmark!r}: one of {', '.join(BENCHMARKS)}")
    evaluator: Callable[..., Any] = resolve(found.evaluator)
    fixed = dict(found.evaluator_keywords)
    return partial(evaluator, **fixed) if fixed else evaluator


def _layout_options(benchmark: str) -> dict[str, Any]:
    """Options that only say where the data is: read here, never passed to the evaluator."""
    return dict(spec(benchmark).layout_options)


def _parameters(evaluator: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """The evaluator's keyword-only parameters: its options."""
    return {
        name: p
        for name, p in inspect.signature(evaluator).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }


def valid_options(benchmark: str) -> list[str]:
    """The options `evaluate(benchmark, ...)` accepts: its evaluator's keyword parameters and
    the data-layout options read here."""
    parameters = _parameters(_evaluator(benchmark))
    public = {n for n in parameters if n not in _FIXED and not n.startswith("_")}
    return sorted(
        public - set(dict(spec(benchmark).evaluator_keywords)) | set(_layout_options(benchmark))
    )


def _checked(benchmark: str, evaluator: Callable[..., Any], options: Arguments) -> Arguments:
    """`options` when every one is the benchmark's (the evaluator's own callbacks, such as the
    per-query progress tick, come from `EvalEvents`, never from options); else a `TypeError`."""
    parameters = _parameters(evaluator)
    valid = valid_options(benchmark)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise TypeError(
            f"evaluate({benchmark!r}) got unknown option(s) {', '.join(unknown)}; "
            f"valid options: {', '.join(valid)}"
        )
    resolvable = {"gold_dir", "db_dir", "tasks_file", "tasks", "questions", "gold"}
    missing = [
        n
        for n, p in parameters.items()
        if p.default is inspect.Parameter.empty
        and n not in _FIXED
        and n not in options
        and not (n in resolvable and spec(benchmark).resolver is not None)
    ]
    if missing:
        needed = " and ".join(f"{n}=" for n in missing)
        raise TypeError(f"evaluate({benchmark!r}) needs {needed} (no default in the data layout)")
    if isinstance(options.get("instance_ids"), str):  # a Collection[str] of its characters
        raise TypeError(
            f"instance_ids must be a collection of ids, not {options['instance_ids']!r}"
        )
    for name, allowed in _CHOICES.items():
        if name in options and options[name] not in allowed:
            raise ValueError(f"{name} must be {' or '.join(allowed)}, not {options[name]!r}")
    return dict(options)


# Options whose values are words, checked here: the evaluators read any other word as the last.
_CHOICES = {"mode": ("exec_result", "sql"), "scoring": ("official", "strict")}


def _resolved(benchmark: str, options: Arguments) -> Arguments:
    """The evaluator's arguments: the layout options read, the locations they leave out
    filled from the data layout exactly as `querybench eval <benchmark>` fills them (the
    spec's resolver, `runs/eval_locations.py`)."""
    found = spec(benchmark)
    defaults = _layout_options(benchmark)
    layout = {k: options.get(k, default) for k, default in defaults.items()}
    out = {k: v for k, v in options.items() if k not in layout}
    if found.resolver is None:
        return out
    resolver: Callable[[BenchmarkSpec, Arguments, Arguments], Arguments] = resolve(found.resolver)
    return resolver(found, out, layout)
