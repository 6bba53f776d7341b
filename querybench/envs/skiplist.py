"""The BIRD train skip list: questions whose gold SQL fails on the installed SQLite.

A few BIRD train gold queries fail (or run past the 120 s gold timeout) on a given SQLite
build; a task whose gold fails only ever scores 0, which teaches nothing. Which ones depends
on the SQLite version and on the train.json, so the list is built here, not shipped: the first
train load without a list for this SQLite and this train.json runs every gold once (in
parallel, with a progress bar), and writes the failing positions beside the data
(`train_gold_failures-sqlite<version>-<train.json hash>.txt`), or in the cache dir when that
folder is read-only; later loads read it. To build it explicitly:

    python -m bird_sql.skiplist --data /path/to/bird/train [--workers N]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from querybench.engines.pool import QueryJob, QueryPool
from querybench.envs import bird_data
from querybench.envs.reward import GOLD_TIMEOUT, sql_workers
from querybench.errors import DataError
from querybench.file_digests import file_sha256
from querybench.store import cache_root
from querybench.tasks.input_files import read_text

# bird-sql's own name first, then the project-wide one.
WORKERS_ENVS = ("BIRD_SQL_WORKERS", "QUERYBENCH_SQL_WORKERS")


def skip_list_paths(train_json: Path) -> tuple[Path, Path]:
    """Where the list for this SQLite and this train.json lives: beside the data, else in the
    cache dir (the name carries both keys, so a new SQLite or train.json gets a new list)."""
    digest = file_sha256(train_json)[:16]
    name = f"train_gold_failures-sqlite{sqlite3.sqlite_version}-{digest}.txt"
    return train_json.parent / name, cache_root() / "bird_sql" / name


def read_skip_list(path: Path) -> frozenset[str]:
    """The question ids listed in `path`; `#` starts a comment."""
    lines = (line.split("#", 1)[0].strip() for line in read_text(path, "skip list").splitlines())
    return frozenset(line for line in lines if line)


def train_skip_ids(
    train_json: Path, jobs: Sequence[QueryJob], *, workers: int | None = None
) -> frozenset[str]:
    """The ids of `jobs` (every train gold of `train_json`) whose gold fails here: read from
    this SQLite's list, built and written on first use."""
    for path in skip_list_paths(train_json):
        if path.is_file():
            return read_skip_list(path)
    failed = failing_golds(jobs, workers=workers or sql_workers(*WORKERS_ENVS))
    path = write_skip_list(train_json, failed, len(jobs))
    print(
        f"bird-sql: {len(failed)} of {len(jobs)} BIRD train gold queries fail on SQLite "
        f"{sqlite3.sqlite_version}; they are left out (list: {path})",
        file=sys.stderr,
    )
    return frozenset(failed)


def failing_golds(
    jobs: Sequence[QueryJob], *, workers: int, timeout: float = GOLD_TIMEOUT
) -> dict[str, str]:
    """`{question id: why}` for the golds of `jobs` that fail or time out, run in parallel."""
    failed: dict[str, str] = {}
    columns = (
        TextColumn("BIRD train golds on SQLite " + sqlite3.sqlite_version),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        TimeElapsedColumn(),
    )
    with (
        QueryPool(workers, timeout, None) as pool,
        Progress(*columns, transient=False, console=Console(stderr=True)) as progress,
    ):
        bar = progress.add_task("golds", total=len(jobs), failed=0)
        for outcome in pool.run(jobs):
            if outcome.error is not None or outcome.result is None:
                failed[outcome.key] = str(outcome.error).splitlines()[0][:200]
            progress.update(bar, advance=1, failed=len(failed))
    return failed


def write_skip_list(train_json: Path, failed: dict[str, str], ran: int) -> Path:
    """The list written beside the data, else in the cache dir (atomically); its path."""
    header = [
        f"# BIRD train questions (positions in {train_json.name}) whose gold SQL fails on",
        f"# SQLite {sqlite3.sqlite_version}: {len(failed)} of {ran} gold queries, "
        f"{GOLD_TIMEOUT:g} s timeout. Left out of the `bird-sql` train split; rebuilt with",
        "#   python -m bird_sql.skiplist --data <train folder>",
    ]
    ids = sorted(failed, key=lambda i: (len(i), i))  # numeric ids in numeric order
    text = "\n".join(header + [f"{i}  # {failed[i]}" for i in ids]) + "\n"
    errors = []
    for path in skip_list_paths(train_json):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f".{path.name}.{os.getpid()}")
            partial.write_text(text)
            partial.replace(path)
            return path
        except OSError as exc:
            errors.append(f"{path}: {exc}")
    raise DataError("cannot write the BIRD train skip list: " + "; ".join(errors))


def train_jobs(train_json: Path) -> list[QueryJob]:
    """Every train gold of `train_json` as a job on its database (a missing one is an error)."""
    return [
        QueryJob(
            task.instance_id,
            bird_data.database_path("train", train_json, task.db),
            task.gold.sql or "",
        )
        for task in bird_data.load_questions("train", train_json)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bird_sql.skiplist",
        description="Run every BIRD train gold query on this SQLite and write the list of those "
        "that fail, which the bird-sql train split leaves out.",
    )
    parser.add_argument(
        "--data", type=Path, help="the BIRD train folder (default: $BIRD_TRAIN_DIR)"
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="default: $BIRD_SQL_WORKERS, else the CPU cores"
    )
    args = parser.parse_args(argv)
    try:
        train_json = bird_data.question_file("train", bird_data.split_folder("train", args.data))
        jobs = train_jobs(train_json)
    except DataError as exc:
        parser.exit(2, f"error: {exc}\n")
    workers = args.workers or sql_workers(*WORKERS_ENVS)
    failed = failing_golds(jobs, workers=workers)
    path = write_skip_list(train_json, failed, len(jobs))
    print(f"{len(failed)} of {len(jobs)} gold queries failed on SQLite {sqlite3.sqlite_version}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
