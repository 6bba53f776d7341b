"""The Spider 2.0 paper's oracle settings, added to a task's question before any method sees it.

* `--reference-plan`: the task's reference plan (from `reference_plan.jsonl` in the gold folder,
  lines `{"instance_id": ..., "plan": ...}`), when the data provides that file; it is looked up
  by the one data-location rule (`data/roots.py`), so any root may hold it, a root holding only the
  plans too;
* `--oracle-functions`: the documentation of the functions the gold SQL calls (names from the
  gold SQL, parsed by sqlglot and as written, looked up in the dialect's function docs).

Both read gold material: they are oracle settings, labelled in the run config and summary.
The additions go into the question (the part of a prompt never truncated) so every method
carries them; `task.extra` records what each task was given.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from querybench.context.documents import FunctionDoc
from querybench.data.layout import reference_plan_candidates
from querybench.data.roots import data_roots, find_data
from querybench.errors import DataError
from querybench.tasks.input_files import read_jsonl, required_str
from querybench.tasks.model import Task
from querybench.tasks.sql_functions import called_functions, parsed_function_names


def find_reference_plans(benchmark: str, data_dir: str | Path | None = None) -> Path | None:
    """The reference plan file of `benchmark` in the data roots (or `data_dir` alone)."""
    return find_data(*reference_plan_candidates(benchmark), roots=data_roots(data_dir))


def load_reference_plans(benchmark: str, data_dir: str | Path | None = None) -> dict[str, str]:
    """instance_id -> plan; a one-line DataError naming where it was looked for when the data
    lacks it."""
    candidates = reference_plan_candidates(benchmark)
    if not candidates:
        raise DataError(f"--reference-plan needs Spider 2.0-lite or -snow, not {benchmark}")
    path = find_reference_plans(benchmark, data_dir)
    if path is None:
        searched = ", ".join(str(root) for root in data_roots(data_dir))
        raise DataError(
            f"--reference-plan: no reference plan file ({candidates[0]}) in the data roots "
            f"searched: {searched}"
        )
    return {
        required_str(item, "instance_id", where, int_ok=True): required_str(item, "plan", where)
        for where, item in read_jsonl(path, "reference plan file")
    }


def gold_function_names(sql: str, engine: str) -> set[str]:
    """Upper-case names of the functions `sql` calls: sqlglot's canonical names and the names
    as written (a dialect spelling sqlglot normalises, e.g. SQLite's strftime, stays findable)."""
    names = {name.upper().rsplit(".", 1)[-1] for name in called_functions(sql)}
    return names | (parsed_function_names(sql, engine) or set())


def oracle_function_docs(task: Task, docs: tuple[FunctionDoc, ...]) -> list[FunctionDoc] | None:
    """Docs of the functions the gold SQL calls (None: the task has no gold SQL here)."""
    if not task.gold.sql:
        return None
    used = gold_function_names(task.gold.sql, task.engine)
    chosen: dict[str, FunctionDoc] = {}
    for doc in docs:
        if doc.name.upper() in used:
            chosen.setdefault(doc.name.upper(), doc)  # one entry per name (overloads share it)
    return list(chosen.values())


def apply_paper_settings(
    tasks: list[Task],
    benchmark: str,
    root: Path,
    *,
    reference_plan: bool,
    oracle_functions: bool,
    data_dir: str | Path | None = None,
) -> list[Task]:
    """`tasks` with the enabled settings' text appended to each question (`root` the
    benchmark's, for its function docs; the plans from any data root, or `data_dir`)."""
    if not (reference_plan or oracle_functions):
        return tasks
    plans = load_reference_plans(benchmark, data_dir) if reference_plan else {}
    out = []
    for task in tasks:
        parts, extra = [], dict(task.extra)
        if reference_plan:
            plan = plans.get(task.instance_id)
            extra["reference_plan"] = plan is not None
            if plan:
                parts.append(f"Reference plan (oracle setting):\n{plan.strip()}")
        if oracle_functions:
            fns = oracle_function_docs(task, _dialect_docs(task, root))
            extra["oracle_functions"] = None if fns is None else [f.name for f in fns]
            if fns:
                listing = "\n".join(f"- {f.text}" for f in fns)
                parts.append(f"Functions the answer uses (oracle setting):\n{listing}")
        question = "\n\n".join([task.question.strip(), *parts])
        out.append(replace(task, question=question, extra=extra))
    return out


def _dialect_docs(task: Task, root: Path) -> tuple[FunctionDoc, ...]:
    from querybench.context.resolve import task_functions

    return task_functions(task, task.engine, root)
