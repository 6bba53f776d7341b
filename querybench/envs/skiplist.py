"""The BIRD train skip list: questions whose gold SQL fails on the installed SQLite.

A few BIRD train gold queries fail (or run past the gold timeout) on a given SQLite build; a
task with a failing gold only ever scores 0, which teaches nothing. Their ids ship in
`bird_train_skip.txt`, which `load_sql_tasks("bird", split="train")` leaves out; regenerate
it with every train gold run on this machine's SQLite:

    python -m querybench.envs.skiplist --data /path/to/bird/train [--workers N]

`--data` is the folder holding `train.json` and `train_databases/<db>/<db>.sqlite`.
"""

from __future__ import annotations

import argparse
import sqlite3
from collections.abc import Sequence
from pathlib import Path

SKIP_FILE = Path(__file__).with_name("bird_train_skip.txt")


def read_skip_list(path: Path | None = None) -> frozenset[str]:
    """The question ids listed in `path` (default: the shipped file); `#` starts a comment."""
    file = SKIP_FILE if path is None else path
    if not file.is_file():
        return frozenset()
    lines = (line.split("#", 1)[0].strip() for line in file.read_text().splitlines())
    return frozenset(line for line in lines if line)


def failing_golds(data_dir: Path, *, workers: int, timeout: float) -> tuple[int, dict[str, str]]:
    """How many BIRD train golds ran, and `{question id: why}` for those that failed."""
    from querybench.engines.pool import QueryJob, QueryPool
    from querybench.envs.tasks import located_tasks

    jobs = [
        QueryJob(task.instance_id, database, task.gold.sql or "")
        for task, database in located_tasks("bird", split="train", data_dir=data_dir)
    ]
    failed: dict[str, str] = {}
    with QueryPool(workers, timeout, None) as pool:
        for outcome in pool.run(jobs):
            if outcome.error is not None or outcome.result is None:
                failed[outcome.key] = str(outcome.error).splitlines()[0][:200]
    return len(jobs), failed


def write_skip_list(path: Path, failed: dict[str, str], ran: int) -> None:
    header = [
        "# BIRD train questions whose gold SQL fails on the installed SQLite; left out of the",
        "# `bird` taskset's train split. Regenerate on the SQLite you train with:",
        "#   python -m querybench.envs.skiplist --data /path/to/bird/train",
        f"# Generated with SQLite {sqlite3.sqlite_version}: {len(failed)} of {ran} gold queries"
        " failed.",
    ]
    ids = sorted(failed, key=lambda i: (len(i), i))  # numeric ids in numeric order
    path.write_text("\n".join(header + [f"{i}  # {failed[i]}" for i in ids]) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    from querybench.envs.reward import GOLD_TIMEOUT, sql_workers

    parser = argparse.ArgumentParser(
        prog="python -m querybench.envs.skiplist",
        description="Run every BIRD train gold query and list those that fail.",
    )
    parser.add_argument("--data", type=Path, required=True, help="the BIRD train folder")
    parser.add_argument("--output", type=Path, default=SKIP_FILE, help="default: the shipped file")
    parser.add_argument("--workers", type=int, default=None, help="default: the CPU cores")
    parser.add_argument("--timeout", type=float, default=GOLD_TIMEOUT, help="seconds per query")
    args = parser.parse_args(argv)
    workers = args.workers or sql_workers()
    ran, failed = failing_golds(args.data, workers=workers, timeout=args.timeout)
    if ran == 0:
        parser.error(f"no BIRD train question with its database found under {args.data}")
    write_skip_list(args.output, failed, ran)
    print(f"{len(failed)} of {ran} gold queries failed; wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
