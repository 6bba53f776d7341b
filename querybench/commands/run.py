"""`querybench run <benchmark> --method M --model NAME`: a method, a model, official scores."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

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

from querybench.errors import QuerybenchError

console = Console(stderr=True)
AGENT_METHODS = ("spider-agent", "tool-agent")


def run(
    benchmark: Annotated[str, typer.Argument(help="spider1, bird, spider2-lite, spider2-snow, …")],
    method: Annotated[
        str,
        typer.Option(help="zero-shot, dail-sql, din-sql, chess, spider-agent or tool-agent."),
    ] = "zero-shot",
    model: Annotated[
        str, typer.Option(help="Model name at the endpoint, or the labelled oracle / constant.")
    ] = "oracle",
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL).")
    ] = None,
    api_key_env: Annotated[str, typer.Option(help="Variable holding the API key.")] = (
        "OPENAI_API_KEY"
    ),
    n: Annotated[int, typer.Option(min=1, help="Candidates per task (majority vote).")] = 1,
    temperature: Annotated[float | None, typer.Option()] = None,
    top_p: Annotated[float | None, typer.Option()] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1)] = None,
    seed: Annotated[int | None, typer.Option()] = None,
    stop: Annotated[list[str] | None, typer.Option(help="Stop sequence (repeatable).")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="First K tasks only.")] = None,
    ids: Annotated[
        list[str] | None, typer.Option(help="Only these instance ids (repeatable or a,b,c).")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="Tasks in progress at once.")] = 2,
    concurrency: Annotated[int, typer.Option(min=1, help="HTTP requests in flight.")] = 8,
    max_requests: Annotated[
        int | None, typer.Option(min=1, help="Request budget for this invocation.")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per HTTP request.")] = 120.0,
    max_retries: Annotated[int, typer.Option(min=0)] = 5,
    context_budget: Annotated[
        int | None, typer.Option(min=1, help="Tokens of schema + documents in the prompt.")
    ] = 16000,
    context_window: Annotated[
        int | None, typer.Option(min=1, help="Model context (tokens); longer prompts are cut.")
    ] = None,
    constant_sql: Annotated[str | None, typer.Option(help="The reply of --model constant.")] = None,
    prices: Annotated[
        Path | None, typer.Option(help="Price table JSON {model: {prompt, completion}} USD/1M.")
    ] = None,
    cache: Annotated[
        bool, typer.Option("--cache/--no-cache", help="Reuse cached model replies.")
    ] = True,
    path: Annotated[
        Path | None, typer.Option(help="Task file to read instead of the benchmark's own.")
    ] = None,
    examples: Annotated[
        str | None,
        typer.Option(
            help="Few-shot pool for dail-sql: a benchmark with gold SQL (spider1, bird, "
            "bird-train) or a JSON/JSONL file of {question, sql}."
        ),
    ] = None,
    retry_failed: Annotated[
        bool,
        typer.Option(
            help="Also rerun instances whose reply came back unusable (transport failures, "
            "no reply at all, are retried anyway)."
        ),
    ] = False,
    max_consecutive_failures: Annotated[
        int,
        typer.Option(
            min=0,
            help="Stop the run when this many tasks in a row get no reply from the endpoint "
            "(0: never).",
        ),
    ] = 5,
    reference_plan: Annotated[
        bool,
        typer.Option(
            help="Oracle setting (Spider 2.0): add the task's reference plan from the gold "
            "folder's reference_plan.jsonl to the prompt."
        ),
    ] = False,
    oracle_functions: Annotated[
        bool,
        typer.Option(
            help="Oracle setting: add the docs of the functions the gold SQL uses to the prompt."
        ),
    ] = False,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="Agent: model replies per task at most (30).")
    ] = None,
    action_timeout: Annotated[
        float | None, typer.Option(min=0.1, help="Agent: seconds per action at most (120).")
    ] = None,
    max_observation_chars: Annotated[
        int | None,
        typer.Option(min=1, help="Agent: observations are cut at this many characters (5000)."),
    ] = None,
    unsafe_bash: Annotated[
        bool,
        typer.Option(
            help="Agent: run Bash actions unsandboxed on this machine where bubblewrap cannot "
            "sandbox them (otherwise the agent refuses Bash)."
        ),
    ] = False,
    out: Annotated[
        Path | None, typer.Option(help="Run folder (default `runs/<bench>-<method>-<model>`).")
    ] = None,
    executor: Annotated[
        str,
        typer.Option(
            help="local (this process) or ray (a Ray cluster; pip install 'querybench[ray]')."
        ),
    ] = "local",
    address: Annotated[
        str | None,
        typer.Option(help="Ray cluster to join (auto, ray://host:10001); default a local Ray."),
    ] = None,
) -> None:
    """Run a text-to-SQL method with a model on a benchmark, then score it officially.

    Resumable: the same command again skips finished instances. Writes config.json,
    records.jsonl, the official predictions, results.jsonl and summary.json under --out.

    Example: `querybench run spider1 --method zero-shot --model oracle --out runs/oracle`
    """
    from querybench.report.summary import print_summary, summarise
    from querybench.runs.config import RunConfig
    from querybench.runs.runner import run as run_benchmark
    from querybench.runs.store import InstanceRecord

    agent_options = {
        "max_steps": max_steps,
        "action_timeout": action_timeout,
        "max_observation_chars": max_observation_chars,
        "unsafe_bash": unsafe_bash or None,
    }
    extra = {k: v for k, v in agent_options.items() if v is not None}
    if extra and method not in AGENT_METHODS:
        flags = ", ".join("--" + k.replace("_", "-") for k in extra)
        console.print(f"[red]error:[/red] {flags}: options of {' and '.join(AGENT_METHODS)} only")
        raise typer.Exit(2)
    safe_model = model.replace("/", "_")
    config = RunConfig(
        benchmark=benchmark,
        method=method,
        model=model,
        out=out or Path("runs") / f"{benchmark}-{method}-{safe_model}",
        base_url=base_url,
        api_key_env=api_key_env,
        constant_sql=constant_sql,
        n=n,
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        seed=seed,
        stop=tuple(stop or ()),
        limit=limit,
        ids=tuple(i for item in ids or () for i in item.split(",") if i),
        workers=workers,
        concurrency=concurrency,
        max_requests=max_requests,
        timeout=timeout,
        max_retries=max_retries,
        context_budget=context_budget,
        context_window=context_window,
        prices_file=prices,
        use_cache=cache,
        task_file=path,
        examples=examples,
        retry_failed=retry_failed,
        max_consecutive_failures=max_consecutive_failures,
        reference_plan=reference_plan,
        oracle_functions=oracle_functions,
        extra=extra,
        executor=executor,
        address=address,
    )
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

    if path is None:
        _print_data_gaps(benchmark, config.data_dir)
    started = time.perf_counter()
    try:
        with progress:
            outcome = run_benchmark(config, on_start=on_start, on_record=on_record)
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
    print_summary(summarise(outcome.results), Console(), f"{benchmark} {method} {model}")
    runnable = ""
    if summary.get("unavailable"):
        runnable = (
            f" ({100 * summary['score_runnable']:.2f}% over the {summary['runnable']} "
            "runnable here)"
        )
    console.print(
        f"score {summary.get('correct', 0)}/{summary.get('n', 0)}"
        f" = {100 * summary.get('score', 0.0):.2f}%{runnable}  tokens {summary['tokens']['total']}"
        f"  cost ${summary['cost']:.4f}  {time.perf_counter() - started:.1f}s  -> "
        f"{escape(str(config.out))}"
    )


def _print_data_gaps(benchmark: str, data_dir: Path | None) -> None:
    """When some tasks cannot run here, say so up front: `data status`'s line, with the fixes."""
    from querybench.data_status import benchmark_status, status_benchmarks

    if benchmark in status_benchmarks():
        status = benchmark_status(benchmark, data_dir)
        if status.runnable < status.total:
            console.print(f"[yellow]data[/yellow]: {escape(status.line())}")
