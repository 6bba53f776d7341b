"""How fast the plain-CSV reader (`simple_csv.read_simple`) parses a folder of result CSVs, in
one process, and which files it leaves to pandas.

    python -m bench.bench_parse [--fresh] [--fresh-into DIR] [--rounds 5] [FOLDER ...]

Without a folder: the spider2-lite gold files (`evaluation_suite/gold/exec_result`). With
`--fresh`: a fresh submission of all lite instances made as `bench_official --predictions
fresh` makes one (`_fresh_csvs`); `--fresh-into DIR` makes it in DIR and keeps it. Prints
the files, their megabytes, the best round's milliseconds and the files left to pandas. To
compare two versions of the reader on the same bytes, name the folders and run the script by
its path from outside the checkout, with `PYTHONPATH` the checkout and then the other tree.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.bench_official import _first_gold_csvs, _fresh_csvs
from querybench.data.roots import data_root
from querybench.evaluation.spider2.simple_csv import read_simple


def _gold() -> Path:
    return data_root() / "spider2" / "spider2-lite" / "evaluation_suite" / "gold"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--fresh", action="store_true", help="a fresh lite submission")
    parser.add_argument("--fresh-into", type=Path, help="make it here, and keep it")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folders = list(args.folders)
        if args.fresh or args.fresh_into:
            base, fresh = Path(tmp) / "base", args.fresh_into or Path(tmp) / "fresh"
            _first_gold_csvs(_gold(), base)
            _fresh_csvs(base, fresh, "parse")
            folders.append(fresh)
        if not folders:
            folders = [_gold() / "exec_result"]
        for folder in folders:
            paths = sorted(folder.glob("*.csv"))
            files = [p.read_bytes() for p in paths]
            best = float("inf")
            for _ in range(args.rounds):
                start = time.perf_counter()
                for data in files:
                    read_simple(data)
                best = min(best, time.perf_counter() - start)
            left = [
                p.name for p, data in zip(paths, files, strict=True) if read_simple(data) is None
            ]
            megabytes = sum(map(len, files)) / 1e6
            print(
                f"{folder}: {len(files)} files, {megabytes:.1f} MB, best of {args.rounds}: "
                f"{best * 1000:.0f} ms; left to pandas: {len(left)} {left[:10]}"
            )


if __name__ == "__main__":
    main()
