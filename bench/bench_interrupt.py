"""How long `querybench eval` takes to stop after Ctrl-C while a query runs, per source tree.

A Spider 1.0 layout on a one-table SQLite database; one prediction an endless recursive CTE
(`--timeout`, 60 s), the others finite. SIGINT goes, `--wait` seconds after the start, to the
whole process group (a terminal's Ctrl-C) or to querybench alone (`kill -INT`); printed: the
seconds from the signal to the exit, the exit status, whether a traceback was shown, the last
line on stderr. `--many` puts 60 finite queries before and after it (the pool's worker threads),
else two (one child driven from the main thread).

    .venv/bin/python -m bench.bench_interrupt --trees /work/main /work/wt-x [--many] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c"
FINITE = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < {n}) "
    "SELECT count(*) > 0 FROM c"
)


def _inputs(folder: Path, many: bool) -> None:
    database = folder / "db" / "toy" / "toy.sqlite"
    database.parent.mkdir(parents=True)
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (a)")
    db.close()
    finite = [FINITE.format(n=50_000 + i) for i in range(60 if many else 2)]
    predictions = [*finite[: len(finite) // 2], ENDLESS, *finite[len(finite) // 2 :]]
    (folder / "gold.sql").write_text("".join("SELECT 1\ttoy\n" for _ in predictions))
    (folder / "pred.sql").write_text("".join(f"{sql}\n" for sql in predictions))


def _once(
    tree: Path, folder: Path, group: bool, wait: float, timeout: float
) -> tuple[float, int, bool, str]:
    env = dict(
        os.environ, PYTHONPATH=str(tree), QUERYBENCH_CACHE=str(folder / f"cache{time.time()}")
    )
    args = [sys.executable, "-c", "from querybench._entry import main; main()", "eval", "spider1"]
    args += ["--gold", "gold.sql", "--predictions", "pred.sql", "--db-dir", "db"]
    args += ["--timeout", str(timeout)]
    child = subprocess.Popen(
        args,
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        process_group=0,
    )
    time.sleep(wait)
    started = time.monotonic()
    if group:
        os.killpg(child.pid, signal.SIGINT)
    else:
        child.send_signal(signal.SIGINT)
    _, err = child.communicate()
    lines = err.strip().splitlines()
    return (
        time.monotonic() - started,
        child.returncode,
        "Traceback" in err,
        lines[-1] if lines else "",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trees", nargs="+", type=Path, required=True)
    parser.add_argument("--many", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--wait", type=float, default=3.0)
    parser.add_argument("--timeout", type=float, default=60.0, help="eval's --timeout")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _inputs(folder, args.many)
        for group in (True, False):
            for tree in args.trees:
                runs = [
                    _once(tree, folder, group, args.wait, args.timeout) for _ in range(args.rounds)
                ]
                seconds = statistics.median(r[0] for r in runs)
                _, code, traceback, last = runs[-1]
                how = "group (terminal Ctrl-C)" if group else "querybench alone (kill -INT)"
                print(
                    f"{tree} {how}: stopped {seconds:.2f} s after SIGINT (median of "
                    f"{args.rounds}), exit {code}, traceback {traceback}, last line {last!r}"
                )


if __name__ == "__main__":
    main()
