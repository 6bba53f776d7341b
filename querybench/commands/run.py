"""`querybench run <benchmark> --method M --model NAME`: a method, a model, official scores.

The command's options are the run configuration's declarations (`runs/config.py`, one help
panel per concern, then the methods' own options): a field added there is a flag here.
"""

from __future__ import annotations

import inspect
import time
import tomllib
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from querybench import json_input
from querybench.commands.declared_flags import parameter
from querybench.declared import declared_fields
from querybench.errors import OptionError, QuerybenchError
from querybench.methods import METHODS, options_type
from querybench.runs.config import OPTIONS_KEY, RunConfig, concerns, declarations

if TYPE_CHECKING:
    from querybench.tasks.model import Task

console = Console(stderr=True)


def run(**values: Any) -> None:
    """Run a text-to-SQL method with a model on a benchmark, then score it officially.

    Resumable: the same command again skips finished instances. Writes config.json,
    records.jsonl, the official predictions, results.jsonl and summary.json under --out.

    Example: `querybench run spider1 --method zero-shot --model oracle --out runs/oracle`
    """
    from querybench.report.summary import print_summary, summarise
    from querybench.report.terminal import Terminal
    from querybench.runs.layout import load_run_tasks
    from querybench.runs.runner import run as run_benchmark
    from querybench.runs.store import InstanceRecord

    config = _config(values)
    benchmark, method, model = config.benchmark, config.method, config.model
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("failed {task.fields[failed]}  cost ${task.fields[cost]:.4f}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    bar = progress.add_task(f"{benchmark} {method} {model}", total=None, failed=0, cost=0.0)

    def on_start(total: int, done: int) -> None:
        progress.update(bar, total=total, completed=done)

    def on_record(record: InstanceRecord) -> None:
        fields = progress.tasks[0].fields
        progress.update(
            bar,
            advance=1,
            failed=fields["failed"] + (not record.ok),
            cost=fields["cost"] + record.cost,
        )

    started = time.perf_counter()
    try:
        tasks = load_run_tasks(config)  # once: for the data-gap line and the run
        _print_data_gaps(config, tasks)
        with progress:
            outcome = run_benchmark(config, on_start=on_start, on_record=on_record, tasks=tasks)
    except KeyboardInterrupt:
        done, total = progress.tasks[0].completed, progress.tasks[0].total
        kept = f"{int(done)} of {int(total)}" if total is not None else "the"
        console.print(
            f"[yellow]interrupted[/yellow]: {kept} finished instances are kept in "
            f"{escape(str(config.out))}; run the same command again to resume"
        )
        raise typer.Exit(130) from None
    except QuerybenchError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    summary = outcome.summary
    if config.oracle_settings:
        console.print(
            f"[yellow]oracle setting[/yellow] ({', '.join(config.oracle_settings)}): "
            "the prompts include gold-derived material; not a comparable score"
        )
    if outcome.stopped:
        console.print(f"[yellow]stopped early[/yellow]: {outcome.stopped}; re-run to resume")
    print_summary(summarise(outcome.results), Terminal(), f"{benchmark} {method} {model}")
    runnable = ""
    if summary.unavailable:
        runnable = (
            f" ({100 * summary.score_runnable:.2f}% over the {summary.runnable} runnable here)"
        )
    console.print(
        f"score {summary.correct}/{summary.n}"
        f" = {100 * summary.score:.2f}%{runnable}  tokens {summary.tokens.total}"
        f"  cost ${summary.cost:.4f}  {time.perf_counter() - started:.1f}s  -> "
        f"{escape(str(config.out))}"
    )


def _config(values: dict[str, Any]) -> RunConfig:
    """The command line's values, over those of the --config file, as a `RunConfig`; a
    method's own option is accepted for a method that has it, and one left out keeps the
    method's default."""
    ctx: typer.Context = values.pop("ctx")
    file = _read_config_file(values.pop("config_file"))
    given = {}
    for name in _method_option_names():
        value = values.pop(name)
        if value is not None and value is not False:  # left out (or at --no-...)
            given[name] = value
    for f, spec, _ in declarations():
        if spec.split and values.get(f.name) is not None:
            values[f.name] = [v for item in values[f.name] for v in item.split(spec.split) if v]
    if file.get("benchmark", values["benchmark"]) != values["benchmark"]:
        _fail(f"--config is a {file['benchmark']} run, not {values['benchmark']}")
    options = dict(file.pop(OPTIONS_KEY, None) or {})
    for name, value in file.items():
        source = ctx.get_parameter_source(name)
        if source is None or source.name != "COMMANDLINE":  # a flag typed wins
            values[name] = value
    method = values.pop("method")
    kind = options_type(method)
    foreign = [name for name in given if name not in _names(kind)]
    if foreign:
        flags = ", ".join("--" + k.replace("_", "-") for k in foreign)
        owners = [m for m, entry in METHODS.items() if set(foreign) <= _names(entry.options)]
        _fail(f"{flags}: options of {' and '.join(owners)} only")
    flat = {k: v for k, v in values.items() if v is not None or k in file or k == "out"}
    if flat["out"] is None:
        safe_model = flat["model"].replace("/", "_")
        flat["out"] = Path("runs") / f"{flat['benchmark']}-{method}-{safe_model}"
    try:
        return RunConfig.from_json(flat | {"method": method, OPTIONS_KEY: options | given})
    except OptionError as exc:
        _fail(str(exc))


def _read_config_file(path: Path | None) -> dict[str, Any]:
    """`--config FILE`: JSON (a run's config.json) or TOML, keyed by the flat field names."""
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json_input.loads(text)
    except (OSError, ValueError) as exc:  # TOMLDecodeError is a ValueError
        _fail(f"--config {path}: {exc}")
    if not isinstance(data, dict):
        _fail(f"--config {path}: not an object of options")
    return data


def _fail(message: str) -> typing.NoReturn:
    console.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(2)


def _names(kind: type) -> set[str]:
    return {f.name for f, _, _ in declared_fields(kind)}


def _method_option_names() -> list[str]:
    """The flags of every method's own options (a name two methods share, once)."""
    names: dict[str, None] = {}
    for entry in METHODS.values():
        for f, spec, _ in declared_fields(entry.options):
            if spec.flags(f.name):
                names[f.name] = None
    return list(names)


def _signature() -> inspect.Signature:
    """`run`'s parameters from the declarations: the core, each concern (one help panel
    each), then every method's own options (one panel per options type)."""
    panels: dict[str, str] = {}
    for kind in concerns().values():
        title = (kind.__doc__ or kind.__name__).split(":")[0].strip()
        panels |= {f.name: title for f, _, _ in declared_fields(kind)}
    params = [
        parameter(f, spec, kind, panels.get(f.name))
        for f, spec, kind in declarations()
        if spec.flags(f.name) or spec.argument
    ]
    seen: set[str] = set()
    for entry in METHODS.values():
        owners = [m for m, e in METHODS.items() if e.options is entry.options]
        for f, spec, kind in declared_fields(entry.options):
            if spec.flags(f.name) and f.name not in seen:
                seen.add(f.name)
                panel = f"Options of {' and '.join(owners)}"
                params.append(parameter(f, spec, kind, panel, optional=True))
    config_file = typer.Option(
        "--config",
        help="Options from a file: JSON (a run's config.json: the same experiment again) or "
        "TOML, keyed by the option names with underscores; a flag typed here wins.",
    )
    kw = inspect.Parameter.KEYWORD_ONLY
    params.append(
        inspect.Parameter(
            "config_file", kw, default=None, annotation=Annotated[Path | None, config_file]
        )
    )
    params.append(inspect.Parameter("ctx", kw, annotation=typer.Context))
    return inspect.Signature(params)


run.__signature__ = _signature()  # type: ignore[attr-defined]


def _print_data_gaps(config: RunConfig, tasks: list[Task]) -> None:
    """Before starting, how many selected tasks cannot run here and why: over the whole
    benchmark `data status`'s line, with the fixes; over a selection the same rule's line."""
    from querybench.data.status import benchmark_status, status_benchmarks
    from querybench.runs.layout import selected_tasks
    from querybench.tasks.runnable import runnability

    benchmark, selection = config.benchmark, config.selection
    chosen = selected_tasks(config, tasks)
    split = runnability(chosen, selection.data_dir)
    if not split.blocked:
        return
    whole = not (selection.ids or selection.limit or selection.runnable or selection.task_file)
    if whole and benchmark in status_benchmarks():
        line = benchmark_status(benchmark, selection.data_dir, tasks=tasks).line()
    else:
        line = f"{benchmark}: " + split.line().replace(" tasks can", " selected tasks can", 1)
    runnable = len(chosen) - len(split.blocked)
    hint = f"; --runnable runs only the {runnable} that can" if runnable else ""
    console.print(f"[yellow]data[/yellow]: {escape(line + hint)}")
