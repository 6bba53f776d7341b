"""Speed of Spider 2.0 exec_result scoring: querybench vs a plain pandas official scorer.

Every gold CSV of lite and snow is scored as a prediction of its own instance (the first gold
file of each instance), once by `querybench.evaluation.spider2.evaluate.evaluate_spider2`
and once by `bench.official_baseline` (single process, cell by cell, as the official
`evaluate.py`). The verdicts must be identical; the script exits 1 otherwise.

    python -m bench.bench_spider2_scoring [--benchmarks spider2-lite spider2-snow]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from bench.official_baseline import score_instance
from querybench.evaluation.spider2.evaluate import evaluate_spider2
from querybench.evaluation.spider2.gold import Spider2Gold, default_gold_dir


def gold_as_predictions(gold: Spider2Gold, into: Path) -> None:
    for iid in gold.specs:
        paths, _ = gold.result_paths(iid)
        if paths:
            shutil.copy(paths[0], into / f"{iid}.csv")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--benchmarks", nargs="+", default=["spider2-lite", "spider2-snow"])
    parser.add_argument("--workers", type=int, default=2, help="querybench worker processes")
    args = parser.parse_args()
    mismatches = 0
    for benchmark in args.benchmarks:
        gold_dir = default_gold_dir(benchmark)
        gold = Spider2Gold(gold_dir, benchmark)
        eval_name = f"spider2{benchmark.split('-')[1]}_eval.jsonl"
        specs = {
            json.loads(x)["instance_id"]: json.loads(x)
            for x in (gold_dir / eval_name).read_text().splitlines()
            if x.strip()
        }
        variant = "lite" if benchmark == "spider2-lite" else "snow"
        with tempfile.TemporaryDirectory() as tmp:
            pred_dir = Path(tmp)
            gold_as_predictions(gold, pred_dir)
            start = time.perf_counter()
            ours = {
                r.instance_id: r.official_score
                for r in evaluate_spider2(
                    pred_dir, benchmark=benchmark, gold_dir=gold_dir, workers=args.workers
                )
            }  # type: ignore[arg-type]
            ours_s = time.perf_counter() - start
            start = time.perf_counter()
            base = {}
            for iid in sorted(specs):
                path = pred_dir / f"{iid}.csv"
                if path.exists():
                    base[iid] = float(
                        score_instance(
                            str(path), str(gold_dir / "exec_result"), iid, specs[iid], variant
                        )
                    )
            base_s = time.perf_counter() - start
        diff = [iid for iid in base if base[iid] != ours[iid]]
        mismatches += len(diff)
        print(
            f"{benchmark}: {len(base)} instances, "
            f"querybench ({args.workers} workers) {ours_s:.2f} s, "
            f"baseline {base_s:.1f} s, speed-up {base_s / ours_s:.1f}x, "
            f"verdicts identical: {not diff} {diff[:5]}"
        )
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
