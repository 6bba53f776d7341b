"""Peak memory of scoring a 5-million-row prediction against a 5-million-row gold.

Writes a gold CSV (`id` integer, `value` float, `label` text) and a row-shuffled prediction,
then scores it with `querybench eval`'s library function in a fresh process and reports that
process's peak RSS (VmHWM). `--near-miss D` adds D to one predicted `value` cell: within
the 0.01 tolerance (0.004) the pair still matches, beyond it (0.5) the exact comparisons decide.

    python -m bench.bench_memory [--rows 5000000] [--keep-order] [--near-miss 0.5|0.004]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def write_tables(
    root: Path, rows: int, ignore_order: bool, near_miss: float = 0.0
) -> tuple[Path, Path]:
    gold = root / "gold"
    (gold / "exec_result").mkdir(parents=True)
    pred = root / "pred"
    pred.mkdir()
    rng = np.random.default_rng(0)
    ids = np.arange(rows)
    values = np.round(rng.uniform(0, 1000, rows), 3)
    labels = np.array(["north", "south", "east", "west"])[rng.integers(0, 4, rows)]
    order = rng.permutation(rows) if ignore_order else ids
    nudged = values.copy()
    nudged[rows // 3] += near_miss
    tables = (
        (gold / "exec_result" / "local001.csv", ids, values),
        (pred / "local001.csv", order, nudged),
    )
    for path, idx, column in tables:
        with path.open("w") as f:
            f.write("id,value,label\n")
            step = 500_000
            for start in range(0, rows, step):
                part = idx[start : start + step]
                f.writelines(
                    f"{i},{v},{s}\n"
                    for i, v, s in zip(ids[part], column[part], labels[part], strict=True)
                )
    spec = {"instance_id": "local001", "condition_cols": [], "ignore_order": ignore_order}
    (gold / "spider2lite_eval.jsonl").write_text(json.dumps(spec) + "\n")
    return gold, pred


# The child's own peak is VmHWM, its address space's high-water mark. Not ru_maxrss: Linux
# carries the pre-exec image's peak into it, i.e. this parent's, which holds the tables it wrote.
CHILD = """
import re, sys, time
from querybench.evaluation.spider2.evaluate import evaluate_spider2
start = time.perf_counter()
[r] = evaluate_spider2(sys.argv[2], benchmark="spider2-lite", gold_dir=sys.argv[1], workers=1)
seconds = round(time.perf_counter() - start, 1)
with open("/proc/self/status") as status:
    peak_kib = int(re.search(r"VmHWM:\\s+(\\d+)", status.read()).group(1))
print(r.official_score, r.strict_score, seconds, peak_kib // 1024)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--keep-order", action="store_true")
    parser.add_argument("--near-miss", type=float, default=0.0, metavar="D")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        gold, pred = write_tables(Path(tmp), args.rows, not args.keep_order, args.near_miss)
        size = (pred / "local001.csv").stat().st_size / 2**20
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(gold), str(pred)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    official, strict, seconds, peak_mb = out
    print(
        f"{args.rows} rows ({size:.0f} MiB per CSV), ignore_order={not args.keep_order}, "
        f"near miss {args.near_miss}: "
        f"official {official}, strict {strict}, {seconds} s, peak RSS {peak_mb} MiB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
