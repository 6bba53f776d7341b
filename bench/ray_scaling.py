"""Throughput of `--executor ray` at 1, 2 and 4 local workers against the local executor.

Two workloads on the Spider 1.0 dev questions whose databases ship here (972):

* run: `querybench run spider1 --method zero-shot --model oracle` without the scoring, i.e.
  building each prompt's context (schema introspection, token counting) and the record store;
* eval: `querybench eval spider1` of the oracle's pred.txt (gold and prediction queries on
  SQLite), the gold-result cache empty each time.

For each worker count k, the local executor runs with `--workers k`; then a fresh local Ray
is started with `num_cpus=k` (its start-up timed on its own) and the same work runs with
`--executor ray --workers k`. Times are wall seconds of the call, Ray start-up excluded; the
ray run includes starting its solver actors, the first ray eval starting its worker processes
(`eval_warm_s`: the same eval again on the started workers, cache emptied again). One local
run before the measurements warms the OS file cache and the tokenizer.

    .venv/bin/python bench/ray_scaling.py [--workers 1 2 4] [--limit N]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from querybench.data.roots import data_root
from querybench.evaluation.spider1.evaluate import evaluate_spider1
from querybench.runs.config import Execution, RunConfig, Selection
from querybench.runs.evaluate import evaluate
from querybench.runs.runner import run


def _timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = work()
    return time.perf_counter() - start, value


def _fresh_cache(tmp: Path, name: str) -> None:
    os.environ["QUERYBENCH_CACHE"] = str(tmp / "cache" / name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    import ray

    db_dir = data_root() / "spider1"
    rows = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        _fresh_cache(tmp, "warm-up")
        run(
            RunConfig(
                "spider1",
                "zero-shot",
                "oracle",
                out=tmp / "warm-up",
                selection=Selection(limit=args.limit),
            )
        )
        for k in args.workers:
            row: dict[str, Any] = {"workers": k}
            for executor in ("local", "ray"):
                if executor == "ray":
                    _fresh_cache(tmp, f"init{k}")
                    row["ray_init_s"], _ = _timed(
                        lambda k=k: ray.init(address="local", num_cpus=k, include_dashboard=False)
                    )
                out = tmp / f"{executor}{k}"
                _fresh_cache(tmp, f"run-{executor}{k}")
                config = RunConfig(
                    "spider1",
                    "zero-shot",
                    "oracle",
                    out=out,
                    execution=Execution(workers=k, executor=executor),
                    selection=Selection(limit=args.limit),
                )
                run_s, outcome = _timed(lambda c=config: run(c, evaluate=False))
                n = len(outcome.tasks)
                pred = out / "pred.txt"
                gold = out / "gold.sql"
                gold.write_text(
                    "".join(f"{t.gold.sql}\t{t.db}\n" for t in outcome.tasks), encoding="utf-8"
                )
                pred.write_text(
                    "".join(f"{outcome.records[t.instance_id].sql}\n" for t in outcome.tasks),
                    encoding="utf-8",
                )
                _fresh_cache(tmp, f"eval-{executor}{k}")
                if executor == "ray":
                    ray_eval = functools.partial(
                        evaluate,
                        "spider1",
                        pred,
                        gold=gold,
                        db_dir=db_dir,
                        timeout=30.0,
                        workers=k,
                        executor="ray",
                    )
                    eval_s, results = _timed(ray_eval)
                    _fresh_cache(tmp, f"eval-again{k}")
                    row["eval_warm_s"], _ = _timed(ray_eval)
                    row["eval_warm_s"] = round(row["eval_warm_s"], 2)
                    ray.shutdown()
                else:
                    eval_s, results = _timed(
                        lambda g=gold, p=pred, k=k: evaluate_spider1(
                            p, gold=g, db_dir=db_dir, timeout=30.0, workers=k
                        )
                    )
                correct = sum(r.score == 1.0 for r in results)
                row[executor] = {
                    "n": n,
                    "run_s": round(run_s, 2),
                    "run_per_s": round(n / run_s, 1),
                    "eval_s": round(eval_s, 2),
                    "eval_per_s": round(len(results) / eval_s, 1),
                    "correct": correct,
                }
            row["ray_init_s"] = round(row["ray_init_s"], 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(
        "\n| workers | run local | run ray | eval local | eval ray | eval ray, warm | ray start |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        lo, ra = r["local"], r["ray"]
        print(
            f"| {r['workers']} | {lo['run_s']} s ({lo['run_per_s']}/s) "
            f"| {ra['run_s']} s ({ra['run_per_s']}/s) "
            f"| {lo['eval_s']} s ({lo['eval_per_s']}/s) "
            f"| {ra['eval_s']} s ({ra['eval_per_s']}/s) | {r['eval_warm_s']} s "
            f"| {r['ray_init_s']} s |"
        )


if __name__ == "__main__":
    main()
