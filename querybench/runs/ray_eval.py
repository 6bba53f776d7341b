"""`querybench eval … --executor ray`: a predictions file scored in shards on a Ray cluster.

The driver reads and checks the inputs, cuts the instances into shards of one engine kind,
and each shard is scored on a worker by the same evaluator `eval` runs locally (one query at
a time there); the driver puts the results back in input order. At most `workers` shards of
one engine kind run at once across the cluster, so `--workers` still bounds the queries in
flight on each engine. Database, gold and prediction folders are read by the workers: on a
multi-node cluster they must be at the same path on every node.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from querybench.evaluation.record import InstanceResult
from querybench.runs.ray_executor import capped, ray_session, worker_options

if TYPE_CHECKING:
    from querybench.evaluation.bird import BirdQuestion
    from querybench.evaluation.prediction_file import ReadLimits

OnResult = Callable[[InstanceResult], None]
SHARD = 32  # instances per shard: large enough to amortise a task, small enough to balance


def _shards(ids: list[str], kind: Callable[[str], str]) -> list[tuple[str, list[str]]]:
    """Consecutive ids of one kind, `SHARD` at most per shard, in input order."""
    by_kind: dict[str, list[str]] = {}
    for instance_id in ids:
        by_kind.setdefault(kind(instance_id), []).append(instance_id)
    out = []
    for k, members in by_kind.items():
        out += [(k, members[i : i + SHARD]) for i in range(0, len(members), SHARD)]
    return sorted(out, key=lambda shard: ids.index(shard[1][0]))


def _scatter(
    address: str | None,
    workers: int,
    shards: list[tuple[str, list[str]]],
    score: Callable[..., list[InstanceResult]],
    payload: Callable[[list[str]], tuple[Any, ...]],
    on_result: OnResult | None,
) -> dict[str, InstanceResult]:
    """Score each shard with `score(*payload(ids))` on the cluster; results by instance id."""
    out: dict[str, InstanceResult] = {}
    with ray_session(address) as ray:
        remote = ray.remote(score).options(**worker_options())
        for _, results in capped(
            shards, lambda s: s[0], workers, lambda s: remote.remote(*payload(s[1]))
        ):
            for result in results:
                out[result.instance_id] = result
                if on_result is not None:
                    on_result(result)
    return out


def evaluate_spider1_ray(
    gold: Path,
    predictions: Path,
    db_dir: Path,
    *,
    timeout: float | None,
    workers: int,
    questions_json: Path | None = None,
    address: str | None = None,
    on_result: OnResult | None = None,
) -> list[InstanceResult]:
    from querybench.evaluation.spider1 import PAST_END, read_spider1_instances

    instances = {
        i.instance_id: i for i in read_spider1_instances(gold, predictions, questions_json)
    }

    def payload(ids: list[str]) -> tuple[Any, ...]:
        lines = [(instances[i].gold_sql, instances[i].db_id, instances[i].pred_sql) for i in ids]
        return ids, lines, str(db_dir.resolve()), timeout

    ids = list(instances)
    scored = _scatter(
        address, workers, _shards(ids, lambda _: "sqlite"), _spider1_shard, payload, on_result
    )
    out = []
    for i in ids:
        result = replace(scored[i], difficulty=instances[i].difficulty)
        if instances[i].past_end:  # a shard's own file has the line: say what the local run says
            past = PAST_END
            result = replace(
                result, score=past.score, error=past.error, message=past.message, detail=past.detail
            )
        out.append(result)
    return out


def _spider1_shard(
    ids: list[str],
    lines: list[tuple[str, str, str | None]],
    db_dir: str,
    timeout: float | None,
) -> list[InstanceResult]:
    from querybench.evaluation.spider1 import evaluate_spider1

    with tempfile.TemporaryDirectory(prefix="querybench-shard-") as tmp:
        gold, pred = Path(tmp) / "gold.sql", Path(tmp) / "pred.txt"
        gold.write_text("".join(f"{g}\t{db}\n" for g, db, _ in lines), encoding="utf-8")
        pred.write_text("".join(f"{p or ''}\n" for _, _, p in lines), encoding="utf-8")
        results = evaluate_spider1(gold, pred, db_dir, timeout=timeout, workers=1)
    return [replace(r, instance_id=i) for r, i in zip(results, ids, strict=True)]


def evaluate_bird_ray(
    questions: Path,
    predictions: Path,
    db_dir: Path,
    *,
    timeout: float | None,
    workers: int,
    address: str | None = None,
    on_result: OnResult | None = None,
) -> list[InstanceResult]:
    from querybench.evaluation.bird import (
        load_bird_predictions,
        load_bird_questions,
        predictions_by_question,
    )

    listed = load_bird_questions(questions)
    entries = {q.question_id: q for q in listed}
    preds = predictions_by_question(load_bird_predictions(predictions), listed)

    def payload(ids: list[str]) -> tuple[Any, ...]:
        shard = [_bird_entry(entries[i]) for i in ids]
        return shard, {i: preds[i] for i in ids if i in preds}, str(db_dir.resolve()), timeout

    ids = list(entries)
    scored = _scatter(
        address, workers, _shards(ids, lambda _: "sqlite"), _bird_shard, payload, on_result
    )
    return [scored[i] for i in ids]


def _bird_entry(q: BirdQuestion) -> dict[str, Any]:
    """The question as the questions file holds it, its id made explicit."""
    entry: dict[str, Any] = {"question_id": q.question_id, "db_id": q.db_id, "SQL": q.gold_sql}
    if q.difficulty:
        entry["difficulty"] = q.difficulty
    return entry


def _bird_shard(
    questions: list[dict[str, Any]],
    predictions: dict[str, object],
    db_dir: str,
    timeout: float | None,
) -> list[InstanceResult]:
    from querybench.evaluation.bird import evaluate_bird

    with tempfile.TemporaryDirectory(prefix="querybench-shard-") as tmp:
        q, p = Path(tmp) / "questions.json", Path(tmp) / "predict.json"
        q.write_text(json.dumps(questions), encoding="utf-8")
        p.write_text(json.dumps(predictions), encoding="utf-8")
        return evaluate_bird(q, p, db_dir, timeout=timeout, workers=1)


def evaluate_spider2_ray(
    benchmark: str,
    predictions: Path,
    gold_dir: Path,
    *,
    mode: str,
    scoring: str,
    db_dir: Path | Sequence[Path] | None,
    tasks_file: Path | None,
    workers: int,
    timeout: float,
    address: str | None = None,
    on_result: OnResult | None = None,
    limits: ReadLimits | None = None,
) -> list[InstanceResult]:
    """Each shard scores only its own instances of the shared predictions folder (`limits`: the
    `ReadLimits` of each prediction, as in `evaluate_spider2`)."""
    from querybench.errors import DataError
    from querybench.evaluation.spider2_gold import Spider2Gold, engine_family

    if not predictions.is_dir():
        raise DataError(f"predictions folder not found: {predictions}")
    ids = sorted(Spider2Gold(gold_dir, benchmark).specs)  # type: ignore[arg-type]
    paths = {
        "predictions": predictions.resolve(),
        "gold_dir": gold_dir.resolve(),
        "db_dir": [d.resolve() for d in ([db_dir] if isinstance(db_dir, Path) else db_dir)]
        if db_dir
        else None,
        "tasks_file": tasks_file.resolve() if tasks_file else None,
    }
    options = {"mode": mode, "scoring": scoring, "timeout": timeout, "limits": limits}

    def payload(shard: list[str]) -> tuple[Any, ...]:
        return benchmark, shard, paths, options

    shards = _shards(ids, engine_family)
    scored = _scatter(address, workers, shards, _spider2_shard, payload, on_result)
    return [scored[i] for i in ids]


def _spider2_shard(
    benchmark: str, ids: list[str], paths: dict[str, Any], options: dict[str, Any]
) -> list[InstanceResult]:
    from querybench.evaluation.spider2_eval import evaluate_spider2

    source = paths["predictions"]
    assert source is not None and paths["gold_dir"] is not None
    # The shard's own ids, read in place: a prediction is never reached through a link.
    results = evaluate_spider2(
        benchmark,  # type: ignore[arg-type]
        source,
        paths["gold_dir"],
        db_dir=paths["db_dir"],
        tasks_file=paths["tasks_file"],
        workers=1,
        instance_ids=ids,
        **options,
    )
    wanted = set(ids)
    return [r for r in results if r.instance_id in wanted]
