"""What a report reads: a run folder (`querybench run --out`) or a results JSONL (`eval --output`).

A run folder holds `config.json`, `records.jsonl` (one record per instance: SQL, tokens, cost,
timings), `results.jsonl` (the scores), `summary.json` and, for agent runs,
`trajectories/<instance_id>.json`; Spider 2.0 runs keep `predictions/<instance_id>.sql` and, where
the query ran, `.csv`. A bare results file has scores only (plus the predictions folder it scored,
when given); the sections that need the rest are left empty for it.

An unfinished run is shown as far as it went, labelled partial: a run stopped before it was
scored has records but no results, and each record stands for its instance (a failure with its
code, an answer as `not_scored`); a run that never recorded anything says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from querybench import json_input
from querybench.errors import DataError, ErrorCode
from querybench.evaluation.record import InstanceResult
from querybench.file_digests import open_regular
from querybench.runs.store import InstanceRecord, RecordStore
from querybench.runs.summary import SUMMARY, RunSummary
from querybench.tasks.input_files import MAX_INPUT_BYTES, read_text, text_lines
from querybench.tasks.model import Task

log = logging.getLogger(__name__)

RESULTS = "results.jsonl"


@dataclass(frozen=True)
class RunData:
    name: str
    path: Path
    results: list[InstanceResult]
    config: dict[str, Any] = field(default_factory=dict)
    summary: RunSummary = field(default_factory=RunSummary)
    records: dict[str, InstanceRecord] = field(default_factory=dict)
    # instance id -> feature tags (from the benchmark's tasks, when they could be loaded)
    features: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # instance id -> task (question, gold SQL and result files), when the tasks could be loaded
    tasks: dict[str, Task] = field(default_factory=dict)
    # folder of `<instance_id>.sql` / `.csv` predictions, when there is one
    predictions: Path | None = None
    # why the run is unfinished ("" when it is not): the report labels it partial
    partial: str = ""
    # the ids of its results that can run here by `tasks/runnable.py`'s rule (None: its tasks
    # could not be loaded, and `engine_unavailable` verdicts say which could not)
    runnable: frozenset[str] | None = None

    @property
    def benchmark(self) -> str | None:
        value = self.config.get("benchmark") or self.summary.benchmark
        return str(value) if value else None

    @property
    def label(self) -> str:
        """What the run is, for titles: `name (method, model)` when the config says."""
        parts = [str(self.config[k]) for k in ("method", "model") if self.config.get(k)]
        return f"{self.name} ({', '.join(parts)})" if parts else self.name

    @property
    def trajectory_dir(self) -> Path:
        return self.path / "trajectories"

    def trajectory_ids(self) -> list[str]:
        folder = self.trajectory_dir
        if not folder.is_dir():
            return []
        return sorted(p.stem for p in folder.glob("*.json"))

    @cached_property
    def trajectories(self) -> list[dict[str, object]]:
        """The readable trajectories, read once (a broken file is logged and left out)."""
        out = []
        for instance_id in self.trajectory_ids():
            try:
                # a run's files are what an agent or a model made: read as every input is
                # (a regular file, bounded; a FIFO here held the report for ever)
                data = json_input.loads(
                    read_text(self.trajectory_dir / f"{instance_id}.json", "trajectory")
                )
            except (DataError, ValueError) as exc:
                log.warning("trajectory of %s left out of the tables: %s", instance_id, exc)
                continue
            if isinstance(data, dict):
                out.append(data)
        return out

    def predicted_sql(self, instance_id: str) -> str | None:
        """The SQL the run submitted: its record's, else `<predictions>/<instance_id>.sql`."""
        record = self.records.get(instance_id)
        if record is not None and record.sql:
            return record.sql
        if self.predictions is not None:
            path = self.predictions / f"{instance_id}.sql"
            try:
                fd, _ = open_regular(path)  # a FIFO here would never answer
            except OSError:
                return None
            with open(fd, encoding="utf-8", errors="replace") as f:
                return f.read(MAX_INPUT_BYTES)
        return None

    def predicted_csv(self, instance_id: str) -> Path | None:
        """The prediction's result CSV, where the run (or the scored folder) has one."""
        if self.predictions is None:
            return None
        path = self.predictions / f"{instance_id}.csv"
        return path if path.is_file() else None


def result_from_json(data: dict[str, Any]) -> InstanceResult:
    """The inverse of `InstanceResult.to_json`."""
    return InstanceResult.from_json(data)


def read_results(path: Path) -> list[InstanceResult]:
    results: list[InstanceResult] = []
    try:
        lines = text_lines(read_text(path, "results"))
    except DataError as exc:
        raise DataError(f"cannot read {path}: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            results.append(result_from_json(json_input.loads(line)))
        except (ValueError, DataError) as exc:
            raise DataError(f"{path}:{number}: {exc}") from exc
    return results


def _json_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json_input.loads(read_text(path, "run file"))
    except (DataError, ValueError) as exc:
        raise DataError(f"{path} is unreadable ({exc})") from exc
    return data if isinstance(data, dict) else {}


def load_run(
    path: str | Path,
    *,
    name: str | None = None,
    with_features: bool = True,
    benchmark: str | None = None,
    predictions: Path | None = None,
) -> RunData:
    """A run folder or a results JSONL; `with_features` reads the benchmark's tasks (feature
    tags, questions, gold) and is skipped quietly when the benchmark's data is not here.
    `benchmark` and `predictions` describe a results file, which carries neither."""
    path = Path(path)
    if path.is_file():
        config = {"benchmark": benchmark} if benchmark else {}
        run = RunData(
            name or path.stem, path, read_results(path), config=config, predictions=predictions
        )
    elif (path / RESULTS).is_file() or (path / "config.json").is_file():
        run = _run_folder(path, name or path.name, predictions)
    elif not path.exists():
        raise DataError(f"{path}: no such run folder or results file")
    else:
        raise DataError(f"{path} is neither a run folder with {RESULTS} nor a results file")
    if with_features and run.benchmark:
        tasks = benchmark_tasks(run.benchmark, run.config)
        features = {iid: t.features for iid, t in tasks.items()}
        runnable = _runnable_ids(run, tasks)
        return RunData(**{**vars(run), "features": features, "tasks": tasks, "runnable": runnable})
    return run


def _runnable_ids(run: RunData, tasks: dict[str, Task]) -> frozenset[str] | None:
    """The run's instances that can run here, by the one rule `data status`, `run` and `eval`
    apply (a cloud task with no prediction is not runnable here for being unsubmitted)."""
    if not tasks:
        return None
    from querybench.tasks.runnable import runnability

    scored = [tasks[r.instance_id] for r in run.results if r.instance_id in tasks]
    data_dir = run.config.get("data_dir")
    split = runnability(scored, Path(str(data_dir)) if data_dir else None)
    unknown = {r.instance_id for r in run.results if r.instance_id not in tasks}
    return frozenset(t.instance_id for t in split.runnable) | unknown


def _run_folder(path: Path, name: str, predictions: Path | None) -> RunData:
    records = RecordStore(path).load()
    summary = RunSummary.from_json(_json_file(path / SUMMARY))
    if (path / RESULTS).is_file():
        results = read_results(path / RESULTS)
        finished = summary.finished
        runnable = summary.runnable if summary.runnable is not None else summary.n
        partial = ""
        if isinstance(finished, int) and isinstance(runnable, int) and finished < runnable:
            partial = (
                f"partial: {finished} of {runnable} runnable tasks finished, the rest "
                "missing_prediction; run the same command again to resume"
            )
        if isinstance(finished, int) and len(records) > finished:
            partial = (
                f"partial: {len(records) - finished} instances recorded after these results "
                "were scored (the run was stopped); run the same command again to score them"
            )
    elif records:
        results = [_unscored(record) for record in records.values()]
        partial = (
            f"partial: the run stopped before scoring; {len(records)} instances recorded, "
            f"answers shown as {ErrorCode.NOT_SCORED}; "
            "run the same command again to finish and score it"
        )
    else:
        raise DataError(
            f"{path}: the run did not start: nothing was recorded (config.json only; the "
            "command's own output said why, e.g. an endpoint that could not be reached); "
            "run it again"
        )
    return RunData(
        name,
        path,
        results,
        config=_json_file(path / "config.json"),
        summary=summary,
        records=records,
        predictions=predictions or _folder(path / "predictions"),
        partial=partial,
    )


def _unscored(record: InstanceRecord) -> InstanceResult:
    if record.ok:
        return InstanceResult(
            record.instance_id, 0.0, ErrorCode.NOT_SCORED, "answered; not scored yet"
        )
    return InstanceResult(record.instance_id, 0.0, record.error, record.message)


def _folder(path: Path) -> Path | None:
    return path if path.is_dir() else None


def benchmark_tasks(benchmark: str, config: dict[str, Any] | None = None) -> dict[str, Task]:
    """The benchmark's tasks with their gold, by instance id; empty when they cannot be loaded
    here."""
    from querybench.errors import QuerybenchError
    from querybench.tasks import load_tasks

    config = config or {}
    try:
        tasks = load_tasks(
            benchmark,
            data_dir=config.get("data_dir"),
            path=config.get("task_file"),
            with_gold=True,
        )
    except (QuerybenchError, OSError):
        return {}
    return {t.instance_id: t for t in tasks}


def task_features(
    benchmark: str, config: dict[str, Any] | None = None
) -> dict[str, tuple[str, ...]]:
    """Feature tags by instance id; empty when the tasks cannot be loaded here."""
    return {iid: t.features for iid, t in benchmark_tasks(benchmark, config).items()}


def unique_names(runs: list[RunData]) -> list[RunData]:
    """Runs renamed `name`, `name#2`, ... where two share a name (columns must differ)."""
    seen: dict[str, int] = {}
    out = []
    for run in runs:
        seen[run.name] = seen.get(run.name, 0) + 1
        if seen[run.name] > 1:
            run = RunData(**{**vars(run), "name": f"{run.name}#{seen[run.name]}"})
        out.append(run)
    return out
