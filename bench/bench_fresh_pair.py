"""Two trees of querybench side by side on new spider2-lite predictions, the same machine
and minute: `querybench eval spider2-lite` of this checkout and of `--other` (a checkout of
another commit, imported through PYTHONPATH with this checkout's virtualenv), alternating, each
run a new submission (`bench_official._fresh_csvs`, a salt per side and round).

    python -m bench.bench_fresh_pair --other /tmp/old [--rounds 5] [--cold]

Warm: each side has its own cache, filled by an untimed first submission; cold: an empty cache
every run. Prints each side's median wall seconds and user + system CPU seconds. The other
tree needs its byte-compiled files made first (`python -m compileall -q <tree>/querybench`).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_official import _first_gold_csvs, _fresh_csvs
from querybench.data.roots import data_root

QUERYBENCH = str(Path(sys.executable).parent / "querybench")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(preds: Path, gold: Path, out: Path, env: dict[str, str]) -> tuple[float, float]:
    command = [QUERYBENCH, "eval", "spider2-lite", "--predictions", str(preds)]
    command += ["--gold-dir", str(gold), "--output", str(out)]
    cpu, start = _cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr}")
    return time.perf_counter() - start, _cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", type=Path, required=True, help="the other tree")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cold", action="store_true")
    args = parser.parse_args()
    gold = data_root() / "spider2" / "spider2-lite" / "evaluation_suite" / "gold"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _first_gold_csvs(gold, root / "base")
        sides = {"this": {}, "other": {"PYTHONPATH": str(args.other.resolve())}}
        envs = {}
        for name, extra in sides.items():
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | extra
            env["QUERYBENCH_CACHE"] = str(root / f"cache-{name}")
            envs[name] = env
            if not args.cold:  # the caches warm from another submission, untimed
                _fresh_csvs(root / "base", root / name, f"{name}-warmup")
                _run(root / name, gold, root / f"{name}.jsonl", env)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for k in range(args.rounds):
            order = list(sides) if k % 2 == 0 else list(reversed(sides))
            for name in order:
                env = dict(envs[name])
                if args.cold:
                    env["QUERYBENCH_CACHE"] = str(root / f"cache-{name}-{k}")
                _fresh_csvs(root / "base", root / name, f"{name}-{k}")
                times[name].append(_run(root / name, gold, root / f"{name}.jsonl", env))
        for name, runs in times.items():
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            print(f"{name:>5}: median {wall:.2f} s wall, {cpu:.2f} s CPU over {len(runs)} rounds")


if __name__ == "__main__":
    main()
