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
from collections.abc import Callable, Collection
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Unpack, get_args, overload

from querybench.evaluation.record import InstanceResult, OnResult

if TYPE_CHECKING:
    from querybench.runs.evaluate_options import (
        AgenticOptions,
        BirdOptions,
        DbtOptions,
        MiniDevOptions,
        Spider1Options,
        Spider2Options,
    )

Benchmark = Literal[
    "spider2-lite", "spider2-snow", "spider2-dbt", "spider2", "spider1", "bird", "bird-mini-dev"
]
Executor = Literal["local", "ray"]
BENCHMARKS: tuple[str, ...] = get_args(Benchmark)
EXECUTORS: tuple[str, ...] = get_args(Executor)

Arguments = dict[str, Any]
# Options that only say where the data is: read here, never passed to the evaluator.
_LAYOUT_OPTIONS: dict[str, dict[str, Any]] = {
    "spider2-lite": {"data_dir": None},
    "spider2-snow": {"data_dir": None},
    "spider2-dbt": {"data_dir": None},
    "spider2": {"data_dir": None, "timeout": 120.0},  # seconds per query of a .sql answer
    "bird-mini-dev": {"dialect": "sqlite"},
    "spider1": {"data_dir": None},
    "bird": {"data_dir": None},
}
# Keywords the benchmark's name fixes, or `evaluate` sets itself.
_FIXED = frozenset({"benchmark", "on_result"})


class SubmissionWarning(UserWarning):
    """A submission line `eval spider2` ignores or reads differently from what it says."""


@overload
def evaluate(
    benchmark: Literal["spider2-lite", "spider2-snow"],
    predictions: str | Path,
    *,
    on_result: OnResult | None = ...,
    executor: Executor = ...,
    address: str | None = ...,
    **options: Unpack[Spider2Options],
) -> list[InstanceResult]: ...


@overload
def evaluate(
    benchmark: Literal["spider1"],
    predictions: str | Path,
    *,
    on_result: OnResult | None = ...,
    executor: Executor = ...,
    address: str | None = ...,
    **options: Unpack[Spider1Options],
) -> list[InstanceResult]: ...


@overload
def evaluate(
    benchmark: Literal["bird"],
    predictions: str | Path,
    *,
    on_result: OnResult | None = ...,
    executor: Executor = ...,
    address: str | None = ...,
    **options: Unpack[BirdOptions],
) -> list[InstanceResult]: ...


@overload
def evaluate(
    benchmark: Literal["bird-mini-dev"],
    predictions: str | Path,
    *,
    on_result: OnResult | None = ...,
    executor: Executor = ...,
    address: str | None = ...,
    **options: Unpack[MiniDevOptions],
) -> list[InstanceResult]: ...


@overload
def evaluate(
    benchmark: Literal["spider2-dbt"],
    predictions: str | Path,
    *,
    on_result: OnResult | None = ...,
    executor: Executor = ...,
    address: str | None = ...,
    **options: Unpack[DbtOptions],
) -> list[InstanceResult]: ...


@overload
def evaluate(
    benchmark: Literal["spider2"],
    predictions: str | Path,
    *,
    on_result: OnResult | None = ...,
    executor: Executor = ...,
    address: str | None = ...,
    **options: Unpack[AgenticOptions],
) -> list[InstanceResult]: ...


def evaluate(
    benchmark: Benchmark | str,
    predictions: str | Path,
    *,
    on_result: OnResult | None = None,
    executor: Executor | str = "local",
    address: str | None = None,
    **options: Any,
) -> list[InstanceResult]:
    """Score `predictions` (the benchmark's official file or folder) against its gold; one
    result per instance, in the evaluator's order. `on_result` is called once per result as
    it is scored. `executor="ray"` runs shards on the Ray cluster at `address` (a local Ray
    without one); `workers` then caps the shards of one engine kind in flight."""
    evaluator = _evaluator(benchmark)
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, not {executor!r}")
    checked = _checked(benchmark, evaluator, options)
    pred = Path(predictions)
    if executor == "local":
        return score(benchmark, pred, _resolved(benchmark, checked), on_result=on_result)
    from querybench.runs.ray_eval import ON_RAY, evaluate_on_ray

    if benchmark not in ON_RAY:
        raise ValueError(f"executor='ray' scores {', '.join(ON_RAY)}; {benchmark} runs locally")
    arguments = _resolved(benchmark, {k: v for k, v in checked.items() if not k.startswith("_")})
    workers = arguments.get("workers", _parameters(evaluator)["workers"].default)
    return evaluate_on_ray(
        benchmark, pred, arguments, score, workers=workers, address=address, on_result=on_result
    )


def score(
    benchmark: str,
    predictions: Path,
    arguments: Arguments,
    instance_ids: Collection[str] | None = None,
    *,
    on_result: OnResult | None = None,
) -> list[InstanceResult]:
    """The benchmark's evaluator on checked, resolved `arguments` (only `instance_ids`, a
    shard, when given): what `evaluate` runs here and each Ray worker runs on its shard."""
    evaluator = _evaluator(benchmark)
    if instance_ids is not None:
        arguments = arguments | {"instance_ids": instance_ids}
    out = evaluator(predictions, **arguments, on_result=on_result)
    if benchmark != "spider2":
        return list(out)
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
    if benchmark in ("spider2-lite", "spider2-snow"):
        from querybench.evaluation.spider2_eval import evaluate_spider2

        return partial(evaluate_spider2, benchmark=benchmark)  # type: ignore[arg-type]
    if benchmark == "spider1":
        from querybench.evaluation.spider1 import evaluate_spider1

        return evaluate_spider1
    if benchmark in ("bird", "bird-mini-dev"):
        from querybench.evaluation.bird import evaluate_bird

        return evaluate_bird
    if benchmark == "spider2-dbt":
        from querybench.evaluation.spider2_dbt import evaluate_spider2_dbt

        return evaluate_spider2_dbt
    if benchmark == "spider2":
        from querybench.evaluation.spider2_agentic_eval import evaluate_spider2_agentic

        return evaluate_spider2_agentic
    raise ValueError(f"unknown benchmark {benchmark!r}: one of {', '.join(BENCHMARKS)}")


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
    return sorted(public | set(_LAYOUT_OPTIONS.get(benchmark, {})))


def _checked(benchmark: str, evaluator: Callable[..., Any], options: Arguments) -> Arguments:
    """`options` when every one is the benchmark's (a leading `_` marks a private one, such as
    the per-query progress tick, accepted but not advertised); else a `TypeError`."""
    parameters = _parameters(evaluator)
    valid = valid_options(benchmark)
    unknown = sorted(set(options) - set(valid) - {n for n in parameters if n.startswith("_")})
    if unknown:
        raise TypeError(
            f"evaluate({benchmark!r}) got unknown option(s) {', '.join(unknown)}; "
            f"valid options: {', '.join(valid)}"
        )
    resolvable = {"gold", "gold_dir", "db_dir", "tasks_file", "tasks", "questions"}
    missing = [
        n
        for n, p in parameters.items()
        if p.default is inspect.Parameter.empty
        and n not in _FIXED
        and n not in options
        and not (n in resolvable and benchmark in _LAYOUT_OPTIONS)
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
    filled from the data layout exactly as `querybench eval <benchmark>` fills them."""
    defaults = _LAYOUT_OPTIONS.get(benchmark, {})
    layout = {k: options.get(k, default) for k, default in defaults.items()}
    out = {k: v for k, v in options.items() if k not in layout}
    data_dir = Path(layout["data_dir"]) if layout.get("data_dir") is not None else None
    if benchmark in ("spider2-lite", "spider2-snow"):
        return _spider2(benchmark, out, data_dir)
    if benchmark in ("spider1", "bird"):
        return dev_files(benchmark, out, data_dir)
    if benchmark == "bird-mini-dev":
        from querybench.tasks.bird import mini_dev_dir, mini_dev_file

        if out.get("questions") is None:
            out["questions"] = mini_dev_file(str(layout["dialect"]))
        if out.get("db_dir") is None:  # with a server (`db_url`) no folder is read
            out["db_dir"] = mini_dev_dir() if out.get("db_url") is None else Path()
    elif benchmark == "spider2-dbt":
        from querybench.evaluation.spider2_dbt import dbt_gold_dir
        from querybench.layout import benchmark_root

        root = benchmark_root("spider2-dbt", data_dir)
        if out.get("tasks") is None:
            from querybench.tasks import load_tasks

            out["tasks"] = load_tasks("spider2-dbt", data_dir=root)
        out["gold_dir"] = Path(out.get("gold_dir") or dbt_gold_dir(root))
    elif benchmark == "spider2":
        out |= _agentic(out, data_dir, float(layout["timeout"]))
        out["timeout"] = float(layout["timeout"])  # a .duckdb answer's reading bound too
    return out


def _spider2(benchmark: str, options: Arguments, data_dir: Path | None) -> Arguments:
    """Lite/snow: the gold folder, the task file beside it, the local database folders."""
    from querybench.evaluation.spider2_gold import default_gold_dir
    from querybench.tasks.databases import spider2_database_dirs

    out = dict(options)
    given = out.get("gold_dir")
    gold = Path(given or default_gold_dir(benchmark, data_dir))  # type: ignore[arg-type]
    if given is None and not gold.is_dir():  # no data root holds it: say how to get one
        from querybench.layout import GOLD_DIRS

        raise no_data_error(
            benchmark, f"{benchmark} gold folder", GOLD_DIRS[benchmark], "--gold-dir"
        )
    out["gold_dir"] = gold
    if out.get("tasks_file") is None:
        candidate = gold.parent.parent / f"{benchmark}.jsonl"
        out["tasks_file"] = candidate if candidate.is_file() else None
    if out.get("db_dir") is None:
        out["db_dir"] = spider2_database_dirs(data_dir) or None
    return out


def dev_files(benchmark: str, options: Arguments, data_dir: Path | None) -> Arguments:
    """Spider 1.0 / BIRD dev: the gold (Spider 1.0's gold file, BIRD's questions with their
    gold SQL) and the database folder, from the data roots when not given."""
    from querybench.data import data_roots, find_data
    from querybench.layout import SPIDER1_GOLD, TASK_FILES, database_folder

    out = dict(options)
    key, candidates = (
        ("gold", (SPIDER1_GOLD,)) if benchmark == "spider1" else ("questions", TASK_FILES["bird"])
    )
    if out.get(key) is None:
        found = find_data(*candidates, roots=data_roots(data_dir))
        if found is None:
            raise no_data_error(benchmark, f"{benchmark} gold file", candidates[0], "--" + key)
        out[key] = found
        if benchmark == "spider1" and out.get("questions") is None:
            out["questions"] = _parsed_questions(found.parent / "dev.json")
    if out.get("db_dir") is None:
        out["db_dir"] = database_folder(benchmark, data_dir)
    return out


def _parsed_questions(path: Path) -> Path | None:
    """The data's Spider 1.0 dev.json for the gold's hardness, when it carries the official
    parse (`sql`) hardness is read from; else None (no hardness, as without --questions)."""
    import json

    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    parsed = isinstance(entries, list) and bool(entries) and isinstance(entries[0], dict)
    return path if parsed and "sql" in entries[0] else None


def no_data_error(benchmark: str, what: str, relative: str, flag: str) -> Exception:
    """The error of a part no data root holds: every root searched, and the three fixes."""
    from querybench.data import labelled_roots
    from querybench.errors import DataError

    searched = ", ".join(f"{label} {folder}" for label, folder in labelled_roots())
    return DataError(
        f"no {what} in the data roots (looked for {relative} in {searched}): set "
        f"QUERYBENCH_DATA to your data folder, `querybench data fetch {benchmark}` fetches "
        f"it, or pass {flag} (`querybench data status` says what is where)"
    )


def _agentic(options: Arguments, data_dir: Path | None, timeout: float) -> Arguments:
    """`eval spider2`'s tasks (with a `gold_dir`'s own eval config), gold and SQL runner."""
    from querybench.layout import benchmark_root
    from querybench.tasks.spider2_agentic import gold_dir as default_gold
    from querybench.tasks.spider2_agentic import gold_dir_config, with_eval_config

    gold_dir = options.get("gold_dir")
    out: Arguments = {}
    if options.get("tasks") is None:
        from querybench.data import data_roots, find_data
        from querybench.layout import task_file_candidates
        from querybench.tasks import load_tasks

        config = gold_dir_config(Path(gold_dir) if gold_dir is not None else None)
        here = find_data(*task_file_candidates("spider2"), roots=data_roots(data_dir))
        # With a gold folder's config, that config is the task set: the built-in tasks only
        # lend their questions and databases to the ids they share, and need not be here.
        tasks = (
            [] if config is not None and here is None else load_tasks("spider2", data_dir=data_dir)
        )
        out["tasks"] = with_eval_config(tasks, config) if config is not None else tasks
    out["gold_dir"] = Path(
        gold_dir or default_gold(benchmark_root("spider2", data_dir) / "spider2")
    )
    if options.get("run_sql") is None:
        from querybench.evaluation.spider2_agentic import engine_runner

        out["run_sql"] = engine_runner(data_dir, timeout)
    return out
