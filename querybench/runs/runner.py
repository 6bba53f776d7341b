"""Run a method with a model over a benchmark's tasks, resumably, then score the predictions.

    outcome = run(RunConfig("spider1", "zero-shot", "oracle", out=Path("runs/oracle")))
    outcome.summary.score

Instances run on `workers` coroutines here, or on a Ray cluster with `executor="ray"`
(`ray_executor.py`); either way each finished instance is one record appended to the store at
once, so stopping at any moment (Ctrl-C, a crash, a spent request budget) loses only the
instances in flight, and running the same command again does only what is left: the instances
never recorded and those whose model call failed in transport (`InstanceRecord.transient`).

The endpoint is checked with one cheap request before the first task, and
`max_consecutive_failures` transport failures in a row stop the run: an endpoint that is down
fails the run at once with its reason (`EndpointUnavailable`) instead of recording every task as
a failure. One run at a time writes a run folder (`RunLock`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from querybench.errors import BudgetExhausted, EndpointUnavailable, QuerybenchError
from querybench.evaluation.record import InstanceResult
from querybench.methods import Method, get_method
from querybench.models import ChatModel
from querybench.models.openai_compat import OpenAICompatibleModel
from querybench.runs.config import RunConfig, check_resume
from querybench.runs.layout import select_tasks
from querybench.runs.manifest import Machine
from querybench.runs.ray_executor import check_executor
from querybench.runs.solve import build_model, method_settings, solve_instance
from querybench.runs.store import InstanceRecord, RecordStore, RunLock
from querybench.runs.summary import RunSummary, write_summary
from querybench.tasks.model import Task

log = logging.getLogger(__name__)

OnRecord = Callable[[InstanceRecord], None]


@dataclass
class RunOutcome:
    tasks: list[Task]  # the tasks of this run (the denominator)
    unavailable: dict[str, str]  # instance id -> why it cannot run here (tasks/runnable.py)
    records: dict[str, InstanceRecord]
    complete: bool  # every task has a record
    stopped: str | None = None  # why the run stopped early (request budget)
    results: list[InstanceResult] = field(default_factory=list)
    summary: RunSummary = field(default_factory=RunSummary)


def run(
    config: RunConfig,
    *,
    model: ChatModel | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_record: OnRecord | None = None,
    evaluate: bool = True,
    tasks: Sequence[Task] | None = None,
) -> RunOutcome:
    """Run (or resume) `config`; `on_start(total, already_done)` then `on_record` per instance.
    An exception raised by `on_record` (or Ctrl-C) stops the run, records intact. `tasks`:
    the task file as `layout.load_run_tasks` read it, when the caller already has it."""
    return asyncio.run(
        run_async(
            config,
            model=model,
            on_start=on_start,
            on_record=on_record,
            evaluate=evaluate,
            tasks=tasks,
        )
    )


async def run_async(
    config: RunConfig,
    *,
    model: ChatModel | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_record: OnRecord | None = None,
    evaluate: bool = True,
    tasks: Sequence[Task] | None = None,
) -> RunOutcome:
    check_executor(config.execution.executor, config.execution.address)
    if config.execution.executor == "ray" and model is not None:
        raise QuerybenchError("the ray executor builds the model from the config on each worker")
    method = get_method(config.method)
    selected, unavailable = select_tasks(config, tasks)
    if selected and len(unavailable) == len(selected):
        raise QuerybenchError(
            f"none of the {len(selected)} selected {config.benchmark} tasks can run here: "
            f"{next(iter(unavailable.values()))} (querybench data status says what is missing)"
        )
    checked = False
    if not (config.out / "config.json").exists() and len(unavailable) < len(selected):
        # a new run folder: the endpoint is checked before anything is written, so a run that
        # fails its check leaves nothing behind (no config.json, run.lock, sessions.jsonl)
        await _preflight(config, model)
        checked = True
    with RunLock(config.out):
        return await _locked_run(
            config, method, selected, unavailable, model, on_start, on_record, evaluate, checked
        )


async def _locked_run(
    config: RunConfig,
    method: Method,
    tasks: list[Task],
    unavailable: dict[str, str],
    model: ChatModel | None,
    on_start: Callable[[int, int], None] | None,
    on_record: OnRecord | None,
    evaluate: bool,
    checked: bool = False,
) -> RunOutcome:
    started = time.perf_counter()
    machine = Machine.now()
    check_resume(config)
    store = RecordStore(config.out)
    records = store.load()
    runnable = [t for t in tasks if t.instance_id not in unavailable]
    todo = [
        t for t in runnable if _needs_run(records.get(t.instance_id), config.selection.retry_failed)
    ]
    if on_start is not None:
        on_start(len(runnable), len(runnable) - len(todo))
    outcome = RunOutcome(tasks, unavailable, records, complete=False)
    failures = _FailureStreak(config.execution.max_consecutive_failures)

    def finished(record: InstanceRecord) -> None:
        store.append(record)
        records[record.instance_id] = record
        if on_record is not None:
            on_record(record)
        failures.add(record)

    if todo and config.execution.executor == "local":
        model = model or build_model(config)
    try:
        if todo and not checked:
            await _preflight(config, model)
        if config.execution.executor == "ray":
            from querybench.runs.ray_executor import solve_on_ray

            # the driver only waits on the cluster here: no other coroutine shares this loop
            outcome.stopped = solve_on_ray(_for_workers(config), todo, finished)
        elif model is not None:
            outcome.stopped = await _run_all(config, method, model, todo, finished)
    finally:
        if model is not None:
            await model.aclose()
        _log_session(config, time.perf_counter() - started, len(todo))
    outcome.complete = all(t.instance_id in records for t in runnable)
    if evaluate:
        from querybench.runs.outputs import finish_run

        eval_start = time.perf_counter()
        outcome.results, summary = finish_run(config, tasks, unavailable, records, machine)
        eval_s = time.perf_counter() - eval_start
        _log_session(config, eval_s, 0)
        outcome.summary = replace(summary, wall_s=round((summary.wall_s or 0.0) + eval_s, 3))
        write_summary(config.out, outcome.summary)
    return outcome


async def _preflight(config: RunConfig, model: ChatModel | None) -> None:
    """One cheap request to the endpoint before the first task (labelled models need none)."""
    probe = model if model is not None else build_model(config)
    if not isinstance(probe, OpenAICompatibleModel):
        return
    try:
        await probe.preflight()
    except EndpointUnavailable as exc:
        raise EndpointUnavailable(f"{exc}; nothing was run", status=exc.status) from None
    finally:
        if probe is not model:
            await probe.aclose()


class _FailureStreak:
    """Counts transport failures in a row; at `limit` the endpoint is taken to be down."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    def add(self, record: InstanceRecord) -> None:
        self.count = self.count + 1 if record.transient else 0
        if self.limit > 0 and self.count >= self.limit:
            raise EndpointUnavailable(
                f"stopped after {self.count} tasks in a row got no reply from the endpoint; "
                f"last: {record.message}. Finished instances are kept: run the same command "
                "again to resume (the failed ones are retried)",
                transient=True,
            )


def _needs_run(record: InstanceRecord | None, retry_failed: bool) -> bool:
    """Never recorded, failed in transport (no answer came back), or failed at all when
    `retry_failed`."""
    return record is None or (not record.ok and (record.transient or retry_failed))


def _for_workers(config: RunConfig) -> RunConfig:
    """The config a worker gets: folders made absolute here, where the tasks were read (a
    worker's own working directory is Ray's, not ours)."""
    data_dir = config.selection.data_dir
    selection = replace(config.selection, data_dir=data_dir.resolve() if data_dir else None)
    return replace(config, out=config.out.resolve(), selection=selection)  # None: the data roots


async def _run_all(
    config: RunConfig, method: Method, model: ChatModel, todo: list[Task], finished: OnRecord
) -> str | None:
    settings = method_settings(config)
    queue: asyncio.Queue[Task] = asyncio.Queue()
    for task in todo:
        queue.put_nowait(task)
    stopped: list[str] = []

    async def worker() -> None:
        while not stopped:
            try:
                task = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            try:
                record = await solve_instance(config, method, model, settings, task)
            except BudgetExhausted as exc:
                stopped.append(str(exc))  # the instance stays unfinished: a resume does it
                return
            finished(record)

    workers = [asyncio.create_task(worker()) for _ in range(max(config.execution.workers, 1))]
    try:
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return stopped[0] if stopped else None


def _log_session(config: RunConfig, wall_s: float, attempted: int) -> None:
    """One line per invocation, so `wall_s` in the summary adds up across resumes."""
    line = json.dumps({"wall_s": round(wall_s, 3), "attempted": attempted, "at": time.time()})
    try:
        with (config.out / "sessions.jsonl").open("a", encoding="utf-8") as f:
            f.write(line + "\n")
    except OSError as exc:  # the summary's wall time then misses this session
        log.warning("session not logged in %s: %s", config.out / "sessions.jsonl", exc)
