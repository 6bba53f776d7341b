"""`evaluate(..., executor="ray")`: a benchmark's evaluator run in shards on a Ray cluster.

The driver reads and checks the inputs, cuts the instances into shards of one engine kind,
and each shard is scored on a worker by the same evaluator that runs locally, restricted to
the shard's instance ids (one query at a time there); the driver puts the results back in
input order. At most `workers` shards of one engine kind run at once across the cluster, so
`--workers` still bounds the queries in flight on each engine. Database, gold and prediction
files are read by the workers: on a multi-node cluster they must be at the same path on every
node.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import partial
from pathlib import Path
from typing import Any

from querybench.benchmarks import Family, spec
from querybench.evaluation.record import InstanceResult, OnResult
from querybench.runs.ray_executor import capped, ray_session, worker_options

# score(benchmark, predictions, arguments, instance_ids): the local evaluator on a shard
ShardScorer = Callable[[str, Path, dict[str, Any], Collection[str]], list[InstanceResult]]
SHARD = 32  # instances per shard: large enough to amortise a task, small enough to balance
_LOCATIONS = frozenset({"gold", "gold_dir", "db_dir", "questions", "tasks_file", "cache_dir"})


def evaluate_on_ray(
    benchmark: str,
    predictions: Path,
    arguments: dict[str, Any],
    score: ShardScorer,
    *,
    workers: int,
    address: str | None = None,
    on_result: OnResult | None = None,
) -> list[InstanceResult]:
    """Every instance scored by `score` in shards on the cluster, in the local order."""
    ids, kind = _instances(benchmark, predictions, arguments)
    if arguments.get("instance_ids") is not None:
        wanted = set(arguments["instance_ids"])
        ids = [i for i in ids if i in wanted]
    shipped = {k: _absolute(k, v) for k, v in arguments.items()} | {"workers": 1}
    scorer = partial(score, benchmark, predictions.resolve(), shipped)
    out: dict[str, InstanceResult] = {}
    with ray_session(address) as ray:
        remote = ray.remote(_score_shard).options(**worker_options())
        ref = ray.put(scorer)
        for _, results in capped(
            _shards(ids, kind), lambda s: s[0], workers, lambda s: remote.remote(ref, s[1])
        ):
            for result in results:
                out[result.instance_id] = result
                if on_result is not None:
                    on_result(result)
    return [out[i] for i in ids]


def _score_shard(
    scorer: Callable[[Collection[str]], list[InstanceResult]], ids: list[str]
) -> list[InstanceResult]:
    return scorer(ids)


def _instances(
    benchmark: str, predictions: Path, arguments: dict[str, Any]
) -> tuple[list[str], Callable[[str], str]]:
    """The instance ids in the local evaluator's order and each one's engine kind, read on
    the driver so that unreadable inputs fail here, as locally."""
    family = spec(benchmark).family if spec(benchmark).on_ray else None
    if family is Family.SPIDER2:
        from querybench.evaluation.prediction_file import predictions_folder
        from querybench.evaluation.spider2.gold import Spider2Gold, engine_family

        predictions_folder(predictions)
        gold = Spider2Gold(arguments["gold_dir"], benchmark)
        return sorted(gold.specs), engine_family
    if family is Family.SPIDER1:
        from querybench.evaluation.spider1.evaluate import read_spider1_instances

        read = read_spider1_instances(arguments["gold"], predictions, arguments.get("questions"))
        return [i.instance_id for i in read], lambda _: "sqlite"
    if family is Family.BIRD:
        from querybench.evaluation.bird.evaluate import load_bird_predictions, load_bird_questions

        load_bird_predictions(predictions)
        url = arguments.get("db_url")
        engine = "sqlite" if url is None else str(url).partition("://")[0]
        questions = load_bird_questions(arguments["questions"])
        return [q.question_id for q in questions], lambda _: engine
    raise ValueError(f"executor='ray' does not shard {benchmark}")


def _absolute(name: str, value: Any) -> Any:
    """A location made absolute: a worker's working folder is not the driver's."""
    if name not in _LOCATIONS or value is None:
        return value
    if isinstance(value, str | Path):
        return Path(value).resolve()
    return [Path(v).resolve() for v in value]  # several database folders


def _shards(ids: list[str], kind: Callable[[str], str]) -> list[tuple[str, list[str]]]:
    """Consecutive ids of one kind, `SHARD` at most per shard, in input order."""
    by_kind: dict[str, list[str]] = {}
    for instance_id in ids:
        by_kind.setdefault(kind(instance_id), []).append(instance_id)
    out = []
    for k, members in by_kind.items():
        out += [(k, members[i : i + SHARD]) for i in range(0, len(members), SHARD)]
    position = {instance_id: n for n, instance_id in enumerate(ids)}
    return sorted(out, key=lambda shard: position[shard[1][0]])
