"""`data status`: what of a benchmark is here, how many tasks can run, and what fixes the rest.

Everything is looked up as the readers look it up (`roots.py`'s roots, `layout.py`'s places), and
whether a task can run here is `tasks/runnable.py`'s rule, the one `run`, `eval` and `tasks list`
apply, so the counts are the ones they give. A cloud task runs on its built emulation, else on
its warehouse when the credentials listed here are found (`engines/cloud.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from querybench.benchmarks import is_agentic, specs
from querybench.data.credentials import find_bigquery, find_snowflake
from querybench.data.layout import GOLD_DIRS, TASK_FILES, reference_plan_candidates
from querybench.data.roots import data_roots, find_data
from querybench.engines.registry import dialect_label, emulated_kinds
from querybench.errors import QuerybenchError
from querybench.tasks.databases import emulation_file, task_database
from querybench.tasks.input_files import read_jsonl
from querybench.tasks.model import Task
from querybench.tasks.runnable import has_start_database, runnability

_CLOUD = emulated_kinds()  # the cloud warehouses: credentials, or an emulation file


@dataclass(frozen=True)
class Item:
    """One row of the table: what, its state, and the command that fixes a gap (or None)."""

    what: str
    state: str
    fix: str | None = None


@dataclass(frozen=True)
class Gap:
    """Tasks that cannot run here for one reason, and what fixes it."""

    count: int
    reason: str
    fix: str


@dataclass(frozen=True)
class BenchmarkStatus:
    benchmark: str
    items: tuple[Item, ...]
    total: int
    runnable: int
    gaps: tuple[Gap, ...]

    def line(self) -> str:
        """One line: how many tasks can run here and why the rest cannot."""
        if not self.total:
            return (
                f"{self.benchmark}: no task file here (fix: querybench data fetch {self.benchmark})"
            )
        head = f"{self.benchmark}: {self.runnable} of {self.total} tasks can run here"
        if not self.gaps:
            return head
        return head + "; " + "; ".join(f"{g.count} {g.reason} (fix: {g.fix})" for g in self.gaps)


def benchmark_status(
    benchmark: str, data_dir: Path | None = None, *, tasks: Sequence[Task] | None = None
) -> BenchmarkStatus:
    """The status of `benchmark` over the data roots (or `data_dir` alone). `tasks`: its task
    file as the caller already loaded it (`run`, which then reads it once); the gold row
    counts the gold they carry."""
    from querybench.tasks import load_tasks

    roots = data_roots(data_dir)
    fetch = f"querybench data fetch {benchmark}"
    task_file = find_data(*TASK_FILES[benchmark], roots=roots)
    if task_file is None:
        item = Item("task file", f"missing ({TASK_FILES[benchmark][0]})", fetch)
        return BenchmarkStatus(benchmark, (item,), 0, 0, ())
    if tasks is None:
        try:
            tasks = load_tasks(benchmark, data_dir=data_dir)
        except QuerybenchError as exc:
            item = Item("task file", f"{task_file}: unreadable ({exc})", fetch)
            return BenchmarkStatus(benchmark, (item,), 0, 0, ())
    items = [Item("task file", f"{task_file} ({len(tasks)} tasks)")]
    items.append(_gold_item(benchmark, tasks, roots, fetch))
    plans = _plans_item(benchmark, tasks, roots)
    if plans is not None:
        items.append(plans)
    local = [t for t in tasks if t.engine == "sqlite"]
    found = {t.instance_id: task_database(t, roots) for t in local}
    if local:
        dbs = {t.db for t in local}
        present = {t.db for t in local if found[t.instance_id] is not None}
        gap = None if present == dbs else fetch
        items.append(Item("databases", f"{len(present)} of {len(dbs)} (SQLite)", gap))
    cloud = [t for t in tasks if t.engine in _CLOUD]
    emulated = {t.instance_id for t in cloud if emulation_file(t, roots) is not None}
    if cloud:
        dbs = {t.db for t in cloud}
        built = {t.db for t in cloud if t.instance_id in emulated}
        gap = None if built == dbs else f"querybench data emulate {benchmark}"
        items.append(Item("emulation files", f"{len(built)} of {len(dbs)} databases", gap))
        for engine in sorted({t.engine for t in cloud}):
            state = find_bigquery() if engine == "bigquery" else find_snowflake()
            text = f"found: {state.source}" if state.ok else f"not found: {state.problem}"
            if state.ok:  # what they do: the tasks with no emulation run on the warehouse
                text += (
                    f" (`run` and `eval` run the {dialect_label(engine)} tasks with no built "
                    "emulation on the warehouse itself)"
                )
            items.append(Item(f"{dialect_label(engine)} credentials", text, state.hint))
    dbt = [t for t in tasks if t.engine == "duckdb"]
    started = {t.instance_id for t in dbt if has_start_database(t)}
    if dbt:
        gap = None if len(started) == len(dbt) else fetch
        items.append(Item("DBT start databases", f"{len(started)} of {len(dbt)} projects", gap))
    split = runnability(tasks, roots)
    gaps = tuple(
        Gap(n, f"of {len(local)} {reason}" if reason == _NO_DATABASE else reason, fix)
        for n, reason, fix in split.reasons()
    )
    return BenchmarkStatus(benchmark, tuple(items), len(tasks), len(split.runnable), gaps)


_NO_DATABASE = "local tasks lack their database"


def _gold_item(benchmark: str, tasks: Sequence[Task], roots: list[Path], fetch: str) -> Item:
    with_gold = sum(bool(t.gold.sql or t.gold.result_files) for t in tasks)
    if benchmark in GOLD_DIRS:
        folder = find_data(GOLD_DIRS[benchmark], roots=roots)
        if is_agentic(benchmark) and folder is not None:  # the files its checks name, as eval
            from querybench.tasks.spider2_agentic import has_gold

            with_gold = sum(has_gold(t, folder) for t in tasks)
        where = f" in {folder}" if folder else ""
        gap = None if with_gold == len(tasks) else fetch
        return Item("gold", f"{with_gold} of {len(tasks)} tasks{where}", gap)
    return Item("gold", f"{with_gold} of {len(tasks)} tasks (gold SQL in the task file)")


def _plans_item(benchmark: str, tasks: Sequence[Task], roots: list[Path]) -> Item | None:
    """Whether the reference plans `--reference-plan` reads are here, found as it finds them
    (none for a benchmark the paper gives none; their absence is no gap: the public release
    does not ship them)."""
    candidates = reference_plan_candidates(benchmark)
    if not candidates:
        return None
    path = find_data(*candidates, roots=roots)
    if path is None:
        return Item("reference plans", f"absent (--reference-plan reads {candidates[0]})")
    try:
        ids = {str(item.get("instance_id")) for _, item in read_jsonl(path, "reference plan file")}
    except QuerybenchError as exc:
        return Item("reference plans", f"unreadable ({exc})")
    covered = sum(t.instance_id in ids for t in tasks)
    return Item("reference plans", f"{covered} of {len(tasks)} tasks in {path}")


def status_benchmarks() -> list[str]:
    """The benchmarks `data status` reports on: those with a task file in the data layout."""
    return [s.name.value for s in specs() if s.task_files]
