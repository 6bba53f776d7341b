"""The same verdicts whichever supported pandas is installed: the test corpora scored under
two Pythons (say one with pandas 2.2 and NumPy 1.26, the leaderboard's, and one with pandas 3),
each with an empty cache, and their results files compared line by line.

    python -m bench.bench_pandas_versions --python /path/to/pandas22/bin/python \\
        --python /path/to/pandas3/bin/python [--checkout .]

Each Python needs querybench's dependencies; the code scored is `--checkout`'s (put first on
its path). Corpora (from $QUERYBENCH_DATA): for spider2-lite and spider2-snow, each instance's
first gold CSV as its prediction (`gold`), the same changed one of seven ways (`perturbed`, see
`bench_official._perturbed_csvs`), and for lite a fresh submission (`fresh`: an extra column,
half of the instances wrong by one cell, see `bench_official._fresh_csvs`). Prints, per corpus,
the instances compared and those whose results line differs (and the first few of them);
exit 1 if any does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

from bench.bench_official import _first_gold_csvs, _fresh_csvs, _perturbed_csvs
from querybench.data.roots import data_root


def _corpora(tmp: Path) -> dict[str, tuple[str, Path, Path]]:
    """name -> (benchmark, predictions folder, gold folder)."""
    out = {}
    for variant in ("lite", "snow"):
        gold = data_root() / "spider2" / f"spider2-{variant}" / "evaluation_suite" / "gold"
        if not gold.is_dir():
            print(f"spider2-{variant}: skipped (no {gold})")
            continue
        base = tmp / f"{variant}-gold"
        _first_gold_csvs(gold, base)
        perturbed = tmp / f"{variant}-perturbed"
        _first_gold_csvs(gold, perturbed)
        _perturbed_csvs(perturbed)
        out[f"{variant} gold"] = (f"spider2-{variant}", base, gold)
        out[f"{variant} perturbed"] = (f"spider2-{variant}", perturbed, gold)
        if variant == "lite":
            _fresh_csvs(base, tmp / "lite-fresh", "versions")
            out["lite fresh"] = ("spider2-lite", tmp / "lite-fresh", gold)
    return out


def _versions(python: str, checkout: Path) -> str:
    code = "import pandas, numpy; print(f'pandas {pandas.__version__}, NumPy {numpy.__version__}')"
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    return subprocess.run(
        [python, "-c", code], env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def _score(
    python: str, checkout: Path, benchmark: str, preds: Path, gold: Path, out: Path
) -> dict[str, str]:
    """instance id -> its results line."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PYTHONPATH": str(checkout), "QUERYBENCH_CACHE": cache}
        code = "import sys; from querybench._entry import main; sys.exit(main())"
        cmd = [python, "-c", code, "eval", benchmark, "--predictions", str(preds)]
        cmd += ["--gold-dir", str(gold), "--output", str(out)]
        subprocess.run(cmd, env=env, check=True, capture_output=True)
    return {json.loads(line)["instance_id"]: line for line in out.read_text().splitlines()}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--python", action="append", required=True)
    parser.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    if len(args.python) != 2:
        parser.error("give --python twice")
    first, second = args.python
    checkout = args.checkout.resolve()
    print(f"checkout {checkout}; load average at start {os.getloadavg()[0]:.2f}")
    print(f"A: {first} ({_versions(first, checkout)})")
    print(f"B: {second} ({_versions(second, checkout)})")
    differing = 0
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for corpus, (benchmark, preds, gold) in _corpora(tmp).items():
            a = _score(first, checkout, benchmark, preds, gold, tmp / "a.jsonl")
            b = _score(second, checkout, benchmark, preds, gold, tmp / "b.jsonl")
            differ = sorted(i for i in a.keys() | b.keys() if a.get(i) != b.get(i))
            differing += len(differ)
            print(
                f"{corpus:16} {len(a):5} instances, {len(differ)} results lines differ {differ[:8]}"
            )
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
