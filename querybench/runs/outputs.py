"""Predictions in each benchmark's official layout, scored by the existing evaluators, and the
run's results.jsonl and summary.json.

* Spider 1.0: `pred.txt`, one SQL per line in the order of `gold.sql` (the run's tasks);
* BIRD: `predict.json` (`{question_id: "SQL\\t----- bird -----\\tdb_id"}`) with `questions.json`;
* Spider 2.0-DBT: `predictions/<instance_id>/<db>.duckdb`, the database each agent left;
* agentic Spider 2.0 (`spider2`): `submission/`, the official `results_metadata.jsonl` and one
  folder per instance (see `agent/submission.py`), scored by `eval spider2`;
* Spider 2.0: `predictions/<instance_id>.sql`, scored in sql mode (both scorings), with the
  official result `<instance_id>.csv` beside it wherever the query ran (local SQLite, offline
  BigQuery/Snowflake emulations), so `querybench eval` scores the folder in either mode.

A task whose record is an error keeps that error code (e.g. `model_error`) in its result; a
task that cannot run here is `engine_unavailable` with the reason, and counts in the
denominator like every other task (the summary adds the score over the runnable ones).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from querybench import json_input
from querybench.benchmarks import Benchmark, resolve, spec
from querybench.data.layout import BIRD_PATHS, benchmark_root
from querybench.errors import DataError, ErrorCode
from querybench.evaluation.detail import VerdictDetail
from querybench.evaluation.record import InstanceResult
from querybench.evaluation.sampling import pass_at_k
from querybench.runs.config import RunConfig
from querybench.runs.manifest import MANIFEST_NAME, Machine, Manifest, build
from querybench.runs.store import RECORDS, InstanceRecord
from querybench.runs.summary import RunSummary, mean, summarise_run, write_summary
from querybench.tasks.databases import database_dirs, spider2_database_dirs, task_database
from querybench.tasks.input_files import one_line as one_line
from querybench.tasks.input_files import read_text, text_lines
from querybench.tasks.model import Task

Predict = Callable[[InstanceRecord | None], str | None]


@dataclass(frozen=True)
class ScoringCall:
    """What scored a run's predictions: `evaluate.score(benchmark, predictions, arguments)`
    (the manifest records it; `verify` makes it again)."""

    benchmark: str
    predictions: Path
    arguments: dict[str, Any]

    def score(self) -> list[InstanceResult]:
        from querybench.runs.evaluate import score

        return score(self.benchmark, self.predictions, self.arguments)


def _call(
    config: RunConfig, benchmark: str, predictions: Path, arguments: dict[str, Any]
) -> ScoringCall:
    """A run's scoring call: `arguments` and the run's scoring options (each query's timeout,
    the workers)."""
    scoring = {"timeout": config.scoring.eval_timeout, "workers": config.scoring.eval_workers}
    return ScoringCall(benchmark, predictions, arguments | scoring)


def _graded(config: RunConfig, tasks: list[Task], root: Path) -> list[Task]:
    """The run's tasks read again with their gold (a run reads it only for oracle models)."""
    from querybench.tasks import load_tasks

    found = load_tasks(
        config.benchmark, data_dir=root, path=config.selection.task_file, with_gold=True
    )
    graded = {t.instance_id: t for t in found}
    return [graded.get(t.instance_id, t) for t in tasks]


def spider1_ids(results: list[InstanceResult], tasks: list[Task]) -> list[InstanceResult]:
    """Spider 1.0's results (numbered by gold line) under the run's task ids."""
    return [
        replace(r, instance_id=t.instance_id, difficulty=t.difficulty or r.difficulty)
        for r, t in zip(results, tasks, strict=True)
    ]


def chosen_sql(record: InstanceRecord | None) -> str | None:
    return record.sql if record is not None and record.ok else None


def write_predictions_and_score(
    config: RunConfig,
    tasks: list[Task],
    records: dict[str, InstanceRecord],
    predict: Predict,
    tag: str = "",
) -> list[InstanceResult]:
    """Write the official layout for `predict(record)` under RUNDIR and score it."""
    return written_and_scored(config, tasks, records, predict, tag)[0]


def written_and_scored(
    config: RunConfig,
    tasks: list[Task],
    records: dict[str, InstanceRecord],
    predict: Predict,
    tag: str = "",
) -> tuple[list[InstanceResult], ScoringCall]:
    """`write_predictions_and_score`, with the call that scored them: the benchmark's run
    scorer, as its spec names it (`BenchmarkSpec.writer`)."""
    found = spec(config.benchmark)
    if found.writer is None:
        raise DataError(f"{config.benchmark}: no run scorer declared")
    root = benchmark_root(config.benchmark, config.selection.data_dir)
    writer: Writer = resolve(found.writer)
    return writer(config, tasks, records, predict, tag, root)


class Writer(Protocol):
    """A benchmark's run scorer: the run's predictions written in the benchmark's official
    layout under RUNDIR, then scored; the results and the call that scored them."""

    def __call__(
        self,
        config: RunConfig,
        tasks: list[Task],
        records: dict[str, InstanceRecord],
        predict: Predict,
        tag: str,
        root: Path,
    ) -> tuple[list[InstanceResult], ScoringCall]: ...


def _spider1_files(
    config: RunConfig,
    tasks: list[Task],
    records: dict[str, InstanceRecord],
    predict: Predict,
    tag: str,
) -> tuple[Path, Path]:
    """`gold.sql` and `pred<tag>.txt` in the official text formats, in task order."""
    gold = config.out / "gold.sql"
    gold.write_text(
        "".join(f"{one_line(t.gold.sql or 'SELECT 0')}\t{t.db}\n" for t in tasks), "utf-8"
    )
    pred = config.out / f"pred{tag}.txt"
    lines = [one_line(predict(records.get(t.instance_id)) or "") for t in tasks]
    pred.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return gold, pred


def score_spider1(
    config: RunConfig,
    tasks: list[Task],
    records: dict[str, InstanceRecord],
    predict: Predict,
    tag: str,
    root: Path,
) -> tuple[list[InstanceResult], ScoringCall]:
    """Spider 1.0 and its variants: `pred.txt` against `gold.sql`, on every folder that holds
    the benchmark's databases (a variant's own first, as its tasks look them up)."""
    gold, pred = _spider1_files(config, tasks, records, predict, tag)
    folders = database_dirs(config.benchmark, config.selection.data_dir)
    db_dir: Path | list[Path] = (
        folders[0] if len(folders) == 1 else folders or root / spec(config.benchmark).folder
    )
    return _spider1_call(config.benchmark, config, tasks, gold, pred, db_dir)


def score_custom(
    config: RunConfig,
    tasks: list[Task],
    records: dict[str, InstanceRecord],
    predict: Predict,
    tag: str,
    root: Path,
) -> tuple[list[InstanceResult], ScoringCall]:
    """Custom tasks: scored as Spider 1.0, over links to each task's own database."""
    gold, pred = _spider1_files(config, tasks, records, predict, tag)
    db_dir = _linked_databases(config, tasks, root)
    return _spider1_call(Benchmark.SPIDER1, config, tasks, gold, pred, db_dir)


def _spider1_call(
    benchmark: str,
    config: RunConfig,
    tasks: list[Task],
    gold: Path,
    pred: Path,
    db_dir: Path | list[Path],
) -> tuple[list[InstanceResult], ScoringCall]:
    call = _call(config, benchmark, pred, {"gold": gold, "db_dir": db_dir})
    return spider1_ids(call.score(), tasks), call


def _database_folder(config: RunConfig, tasks: list[Task], default: Path) -> Path:
    """The folder of `<db>/<db>.sqlite` the first database found is in (else `default`)."""
    first = next(filter(None, (task_database(t, config.selection.data_dir) for t in tasks)), None)
    return first.parent.parent if first is not None else default


def _linked_databases(config: RunConfig, tasks: list[Task], root: Path) -> Path:
    """Custom SQLite tasks: `<db>/<db>.sqlite` links so the Spider 1.0 evaluator finds them."""
    folder = config.out / "databases"
    for task in tasks:
        source = task_database(task, config.selection.data_dir)
        link = folder / task.db / f"{task.db}.sqlite"
        if source is not None and not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(source.resolve())
    return folder


def score_bird(
    config: RunConfig,
    tasks: list[Task],
    records: dict[str, InstanceRecord],
    predict: Predict,
    tag: str,
    root: Path,
) -> tuple[list[InstanceResult], ScoringCall]:
    from querybench.evaluation.bird.evaluate import BIRD_SEPARATOR

    questions = config.out / "questions.json"
    entries = [
        {"question_id": t.instance_id, "db_id": t.db, "SQL": t.gold.sql or "SELECT 0"}
        | ({"difficulty": t.difficulty} if t.difficulty else {})
        for t in tasks
    ]
    questions.write_text(json.dumps(entries, indent=1), encoding="utf-8")
    predictions: dict[str, object] = {}
    for t in tasks:
        sql = predict(records.get(t.instance_id))
        predictions[t.instance_id] = 0 if sql is None else f"{sql}{BIRD_SEPARATOR}{t.db}"
    pred = config.out / f"predict{tag}.json"
    pred.write_text(json.dumps(predictions, indent=1, ensure_ascii=False), encoding="utf-8")
    db_dir = _database_folder(config, tasks, root / BIRD_PATHS[config.benchmark].databases[0])
    # every BIRD split is scored as dev is
    call = _call(config, Benchmark.BIRD, pred, {"questions": questions, "db_dir": db_dir})
    return call.score(), call


def score_spider2(
    config: RunConfig,
    tasks: list[Task],
    records: dict[str, InstanceRecord],
    predict: Predict,
    tag: str,
    root: Path,
) -> tuple[list[InstanceResult], ScoringCall]:
    from querybench.evaluation.spider2.gold import default_gold_dir

    folder = config.out / f"predictions{tag}"
    folder.mkdir(parents=True, exist_ok=True)
    for t in tasks:
        sql = predict(records.get(t.instance_id))
        path = folder / f"{t.instance_id}.sql"
        (folder / f"{t.instance_id}.csv").unlink(missing_ok=True)  # rewritten if it runs
        if sql is not None:
            path.write_text(sql + "\n", encoding="utf-8")
        elif path.exists():
            path.unlink()
    benchmark = config.benchmark
    gold = default_gold_dir(benchmark, config.selection.data_dir)
    tasks_file = gold.parent.parent / f"{benchmark}.jsonl"
    call = _call(
        config,
        benchmark,
        folder,
        {
            "gold_dir": gold,
            "mode": "sql",
            "db_dir": spider2_database_dirs(config.selection.data_dir),
            "tasks_file": tasks_file if tasks_file.is_file() else None,
            "write_csv": True,
        },
    )
    wanted = {t.instance_id for t in tasks}
    return [r for r in call.score() if r.instance_id in wanted], call


def score_dbt(
    config: RunConfig,
    tasks: list[Task],
    records: dict[str, InstanceRecord],
    predict: Predict,
    tag: str,
    root: Path,
) -> tuple[list[InstanceResult], ScoringCall]:
    """The databases the agent left in `RUNDIR/predictions/<instance_id>/` against the gold
    (tasks are read again with their gold: a run reads it only for oracle models)."""
    from querybench.evaluation.spider2.agentic.dbt import dbt_gold_dir

    arguments = {"tasks": _graded(config, tasks, root), "gold_dir": dbt_gold_dir(root)}
    call = _call(config, config.benchmark, config.out / "predictions", arguments)
    return call.score(), call


def score_agentic(
    config: RunConfig,
    tasks: list[Task],
    records: dict[str, InstanceRecord],
    predict: Predict,
    tag: str,
    root: Path,
) -> tuple[list[InstanceResult], ScoringCall]:
    """Agentic Spider 2.0: `RUNDIR/submission/` in the official layout (the lines the agent
    runs left, in task order), scored by `eval spider2` over the run's tasks."""
    from querybench.evaluation.spider2.agentic.instance import engine_runner
    from querybench.tasks.spider2_agentic import gold_dir

    folder = config.out / "submission"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        record.extra["submission"]
        for t in tasks
        if (record := records.get(t.instance_id)) is not None
        and record.ok
        and isinstance(record.extra.get("submission"), dict)
    ]
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    (folder / "results_metadata.jsonl").write_text(text, encoding="utf-8")
    call = _call(
        config,
        config.benchmark,
        folder,
        {
            "tasks": _graded(config, tasks, root),
            "gold_dir": gold_dir(root / "spider2"),
            "run_sql": engine_runner(config.selection.data_dir, config.scoring.eval_timeout),
        },
    )
    return call.score(), call


def with_record_errors(
    results: list[InstanceResult],
    records: dict[str, InstanceRecord],
    unavailable: dict[str, str] | None = None,
) -> list[InstanceResult]:
    """An instance the model never answered keeps its own error code, not missing_prediction;
    one that cannot run here is `engine_unavailable` with the reason."""
    out = []
    for r in results:
        record = records.get(r.instance_id)
        failure: tuple[ErrorCode | None, str | None] | None = None
        if unavailable and r.instance_id in unavailable:
            failure = ErrorCode.ENGINE_UNAVAILABLE, unavailable[r.instance_id]
        elif record is not None and not record.ok:
            failure = record.error, record.message
        if failure is not None:
            r = replace(
                r,
                score=0.0,
                error=failure[0],
                message=failure[1],
                detail=VerdictDetail(),  # the scorer's reason is not this failure's
                official_score=0.0 if r.official_score is not None else None,
                strict_score=0.0 if r.strict_score is not None else None,
            )
        out.append(r)
    return out


def pass_at_k_scores(
    config: RunConfig, tasks: list[Task], records: dict[str, InstanceRecord]
) -> dict[str, float]:
    """Each sample scored as its own submission, then unbiased pass@k for k = 1..n."""
    n = config.sampling.n
    correct = {t.instance_id: 0 for t in tasks}
    for j in range(n):

        def sample(record: InstanceRecord | None, j: int = j) -> str | None:
            if record is None or not record.ok or j >= len(record.sqls):
                return None
            return record.sqls[j]

        for r in write_predictions_and_score(config, tasks, records, sample, tag=f"_sample{j}"):
            correct[r.instance_id] += int(r.score == 1.0)
    ks = sorted({1, n} | {k for k in (2, 4, 8, 16) if k < n})
    return {str(k): mean([pass_at_k(n, c, k) for c in correct.values()]) for k in ks}


def _wall(run_dir: Path) -> float:
    total = 0.0
    try:
        sessions = read_text(run_dir / "sessions.jsonl", "sessions", run_dir)
        for line in text_lines(sessions):
            try:
                total += float(json_input.loads(line)["wall_s"])
            except (ValueError, KeyError, TypeError):
                continue
    except DataError:  # none, or none to read: no wall time
        pass
    return round(total, 3)


def finish_run(
    config: RunConfig,
    tasks: list[Task],
    unavailable: dict[str, str],
    records: dict[str, InstanceRecord],
    machine: Machine | None = None,
) -> tuple[list[InstanceResult], RunSummary]:
    """Predictions, scores, RUNDIR/results.jsonl, RUNDIR/manifest.json and
    RUNDIR/summary.json."""
    machine = machine or Machine.now()
    scored, call = written_and_scored(config, tasks, records, chosen_sql)
    results = with_record_errors(scored, records, unavailable)
    with (config.out / "results.jsonl").open("w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps(r.to_json(), ensure_ascii=False) + "\n")
    run_manifest(config, call, tasks, records, unavailable, machine).write(
        config.out / MANIFEST_NAME
    )
    summary = summarise_run(config, tasks, records, results, _wall(config.out))
    if config.sampling.n > 1 and tasks:
        pass_at_k = pass_at_k_scores(config, tasks, records)
        summary = replace(summary, pass_at_k=pass_at_k, majority_at_n=summary.score)
    write_summary(config.out, summary)
    return results, summary


def run_manifest(
    config: RunConfig,
    call: ScoringCall,
    tasks: list[Task],
    records: dict[str, InstanceRecord],
    unavailable: dict[str, str],
    machine: Machine,
) -> Manifest:
    """The run's manifest: its scoring call and inputs (the records among them), and the
    model, endpoint, sampling and prompts that made the predictions."""
    prompts = sorted(f"{i} {r.prompt_hash}" for i, r in records.items())
    run = {
        "benchmark": config.benchmark,
        "config": config.to_json(),
        "task_ids": [t.instance_id for t in tasks],
        "prompts_sha256": hashlib.sha256("\n".join(prompts).encode()).hexdigest(),
        "prompt_hashes": {i: r.prompt_hash for i, r in sorted(records.items())},
    }
    ids = [t.instance_id for t in tasks]
    return build(
        "run",
        call.benchmark,
        call.predictions,
        call.arguments,
        call.arguments,
        ids,
        machine,
        run=run,
        extra_files={"records": config.out / RECORDS},
        unavailable=unavailable,
    )
