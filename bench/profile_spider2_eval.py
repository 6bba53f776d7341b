"""Where the CPU time of one whole `querybench eval spider2-lite|snow` process goes.

    python -m bench.profile_spider2_eval spider2-lite PREDICTIONS [--cold] [--rounds 3]

Each round runs a fresh interpreter that imports the CLI and runs the eval command in-process,
with the phases below timed in CPU seconds (user + system: on a loaded machine wall time says
more about the neighbours than about the work). Without --cold the first round fills the cache
($QUERYBENCH_CACHE, a fresh folder per invocation of this script) and is not reported; with it
every round starts from an empty cache. The median of each phase is printed.
`PROFILE_EVAL_ARGS` adds eval flags (e.g. "--workers 1": a cold run at idle otherwise scores on
worker processes, whose phases this script cannot see).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PHASES = (
    "interpreter start-up",
    "import querybench.cli (typer, rich)",
    "import the spider2 eval path (no pandas)",
    "prediction files: checks and bounded read",
    "verdict store: gold files read, all hashed, lookup",
    "import pandas, numpy, pyarrow (on the first miss)",
    "prediction CSVs: parse or cache load",
    "gold CSVs: parse or cache load",
    "scoring (both scorings)",
    "the rest (command, summary, output)",
)

_CHILD = r"""
import json, os, sys, time
cpu = time.process_time
start = cpu()
import querybench.cli as cli
after_cli = cpu()
from querybench.evaluation.spider2 import csv_cache, evaluate as spider2_eval, verdict_cache
from querybench.evaluation import prediction_file
after_eval = cpu()
spent = {"read": 0.0, "key": 0.0, "imports": 0.0, "prediction": 0.0, "gold": 0.0, "score": 0.0}

stack = []  # [bucket, started]: a nested phase (a gold parse inside scoring) pauses its outer

def wrapped(real, bucket, by_namespace=False):
    def wrapper(*args, **kwargs):
        now = cpu()
        if stack:
            spent[stack[-1][0]] += now - stack[-1][1]
        stack.append([args[2] if by_namespace else bucket, now])  # parse(data, name, namespace)
        try:
            return real(*args, **kwargs)
        finally:
            key, started = stack.pop()
            now = cpu()
            spent[key] += now - started
            if stack:
                stack[-1][1] = now
    return wrapper

def timed(module, name, bucket, by_namespace=False):
    setattr(module, name, wrapped(getattr(module, name), bucket, by_namespace))

# `csv_cache` loads with the eval path, pandas with the first parse (its parser module) or
# parse key (`_key_prefix`, cached): those imports are timed apart.
timed(csv_cache, "_key_prefix", "imports")
parse = csv_cache.parse
import_parser = wrapped(lambda: __import__("querybench.evaluation.spider2.result_csv"), "imports")

def parse_after_import(*args, **kwargs):
    if "querybench.evaluation.spider2.result_csv" not in sys.modules:
        import_parser()
    return parse(*args, **kwargs)

csv_cache.parse = parse_after_import
timed(csv_cache, "parse", None, by_namespace=True)
timed(prediction_file, "_read", "read")
timed(verdict_cache, "instance_key", "key")
timed(verdict_cache, "lookup", "key")
timed(spider2_eval, "_score", "score")  # gold parses inside it are timed apart
sys.argv = ["querybench", "eval", sys.argv[1], "--predictions", sys.argv[2],
            "--output", sys.argv[3], *os.environ.get("PROFILE_EVAL_ARGS", "").split()]
t = cpu()
try:
    cli.main()
except SystemExit:
    pass
total = cpu() - t
spent["rest"] = total - sum(spent.values())
spent["cli"] = after_cli - start
spent["eval"] = after_eval - after_cli
print("PHASES " + json.dumps(spent), file=sys.stderr)
"""


def _round(benchmark: str, predictions: str, env: dict[str, str]) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "results.jsonl")
        code = [sys.executable, "-c", _CHILD, benchmark, predictions, out]
        usage0 = os.times()
        proc = subprocess.run(code, env=env, capture_output=True, text=True, check=True)
        usage1 = os.times()
    whole = (usage1.children_user - usage0.children_user) + (
        usage1.children_system - usage0.children_system
    )
    line = next(x for x in proc.stderr.splitlines() if x.startswith("PHASES "))
    spent = json.loads(line.removeprefix("PHASES "))
    measured = (
        spent["cli"]
        + spent["eval"]
        + sum(spent[k] for k in ("read", "key", "imports", "prediction", "gold", "score", "rest"))
    )
    keys = ("read", "key", "imports", "prediction", "gold", "score", "rest")
    return [whole - measured, spent["cli"], spent["eval"], *(spent[k] for k in keys)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("benchmark", choices=("spider2-lite", "spider2-snow"))
    parser.add_argument("predictions")
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows: list[list[float]] = []
    with tempfile.TemporaryDirectory() as cache:
        for i in range(args.rounds + (0 if args.cold else 1)):
            round_cache = tempfile.mkdtemp(dir=cache) if args.cold else cache
            env = {**os.environ, "QUERYBENCH_CACHE": round_cache}
            seconds = _round(args.benchmark, args.predictions, env)
            if args.cold or i > 0:
                rows.append(seconds)
    medians = [statistics.median(column) for column in zip(*rows, strict=True)]
    print(
        f"{args.benchmark}, {'cold' if args.cold else 'warm'} cache, median of {len(rows)} "
        f"rounds, load average {os.getloadavg()[0]:.1f}, {time.strftime('%H:%M')}"
    )
    print("| phase | CPU s | share |\n|---|---:|---:|")
    total = sum(medians)
    for name, value in zip(PHASES, medians, strict=True):
        print(f"| {name} | {value:.3f} | {100 * value / total:.0f} % |")
    print(f"| whole process | {total:.3f} | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
