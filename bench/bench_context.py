"""Schema context coverage and speed on Spider 2.0-lite.

For every lite task whose database metadata is present, build the context at several budgets and
count the tasks whose gold tables (`methods/gold-tables`, read here only, never by the builder)
are all in the context's `tables`. Also times the largest schema after a first cached load.

    .venv/bin/python bench/bench_context.py [--budgets 2000,4000,8000,16000,32000]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from querybench.context import build_context
from querybench.context.spider2_meta import find_database_dir
from querybench.data.roots import data_root
from querybench.errors import DataError
from querybench.tasks.model import Task


def lite_tasks(root: Path) -> list[Task]:
    lite = root / "spider2" / "spider2-lite"
    tasks = []
    for line in (lite / "spider2-lite.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        iid = row["instance_id"]
        engine = (
            "sqlite"
            if iid.startswith("local")
            else ("snowflake" if iid.startswith("sf") else "bigquery")
        )
        tasks.append(
            Task(
                iid,
                "spider2-lite",
                row["question"],
                row["db"],
                engine,  # type: ignore[arg-type]
                row.get("external_knowledge"),
            )
        )
    return tasks


def with_metadata(tasks: list[Task], root: Path) -> list[Task]:
    databases = root / "spider2" / "spider2-lite" / "resource" / "databases"
    out = []
    for t in tasks:
        try:
            find_database_dir(databases, t.engine, t.db)
        except DataError:
            continue
        out.append(t)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budgets", default="2000,4000,8000,16000,32000")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    root = data_root()
    gold_file = root / "spider2" / "methods" / "gold-tables" / "spider2-lite-gold-tables.jsonl"
    gold = {
        r["instance_id"]: r["gold_tables"]
        for r in map(json.loads, gold_file.read_text(encoding="utf-8").splitlines())
    }
    tasks = [t for t in with_metadata(lite_tasks(root), root) if t.instance_id in gold]
    print(f"{len(tasks)} spider2-lite tasks with metadata and gold tables")
    for budget in budgets:
        covered = over = 0
        misses = []
        start = time.perf_counter()
        for t in tasks:
            ctx = build_context(t, budget=budget, data=root)
            over += ctx.tokens > budget
            shown = {n.lower() for n in ctx.tables}
            if all(g.lower() in shown for g in gold[t.instance_id]):
                covered += 1
            else:
                misses.append(t.instance_id)
        elapsed = time.perf_counter() - start
        print(
            f"budget {budget:>6}: {covered}/{len(tasks)} = {100 * covered / len(tasks):.1f} % "
            f"covered, over budget: {over}, {elapsed:.1f} s; misses: {' '.join(misses[:12])}"
        )
    by_bytes = max(tasks, key=lambda t: _size(root, t))
    by_tables = max(tasks, key=lambda t: len(_files(root, t)))
    for largest in (by_bytes, by_tables):
        build_context(largest, budget=8000, data=root)  # first load, cached
        for budget in (8000, 32000, None):
            start = time.perf_counter()
            ctx = build_context(largest, budget=budget, data=root)
            print(
                f"largest schema {largest.db} ({largest.instance_id}), budget {budget}: "
                f"{time.perf_counter() - start:.3f} s, {ctx.tokens} tokens"
            )


def _files(root: Path, task: Task) -> list[Path]:
    databases = root / "spider2" / "spider2-lite" / "resource" / "databases"
    return list(find_database_dir(databases, task.engine, task.db).rglob("*.json"))


def _size(root: Path, task: Task) -> int:
    return sum(p.stat().st_size for p in _files(root, task))


if __name__ == "__main__":
    main()
