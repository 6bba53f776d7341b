"""The locations `querybench.evaluate` leaves out, found in the data layout exactly as
`querybench eval <benchmark>` finds them: each benchmark's resolver, named by its spec
(`BenchmarkSpec.resolver`), takes its spec, the options given and the layout options read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from querybench import json_input
from querybench.benchmarks import BenchmarkSpec, Family
from querybench.errors import DataError
from querybench.tasks.input_files import read_text

Arguments = dict[str, Any]


def _data_dir(layout: Arguments) -> Path | None:
    return Path(layout["data_dir"]) if layout.get("data_dir") is not None else None


def spider2_locations(spec: BenchmarkSpec, options: Arguments, layout: Arguments) -> Arguments:
    """Lite/snow: the gold folder, the task file beside it, the local database folders."""
    from querybench.evaluation.spider2.gold import default_gold_dir
    from querybench.tasks.databases import spider2_database_dirs

    data_dir = _data_dir(layout)
    out = dict(options)
    given = out.get("gold_dir")
    gold = Path(given or default_gold_dir(spec.name, data_dir))
    if given is None and not gold.is_dir():  # no data root holds it: say how to get one
        folder = spec.gold_dir or ""
        raise no_data_error(spec.name, f"{spec.name} gold folder", folder, "--gold-dir")
    out["gold_dir"] = gold
    if out.get("tasks_file") is None:
        candidate = gold.parent.parent / f"{spec.name}.jsonl"
        out["tasks_file"] = candidate if candidate.is_file() else None
    if out.get("db_dir") is None:
        out["db_dir"] = spider2_database_dirs(data_dir) or None
    return out


def dev_locations(spec: BenchmarkSpec, options: Arguments, layout: Arguments) -> Arguments:
    """Spider 1.0 / BIRD dev: the gold (Spider 1.0's gold file, BIRD's questions with their
    gold SQL) and the database folder, from the data roots when not given."""
    from querybench.data.layout import SPIDER1_GOLD, database_folder
    from querybench.data.roots import data_roots, find_data

    data_dir = _data_dir(layout)
    out = dict(options)
    spider1 = spec.family is Family.SPIDER1
    key, candidates = ("gold", (SPIDER1_GOLD,)) if spider1 else ("questions", spec.task_files)
    if out.get(key) is None:
        found = find_data(*candidates, roots=data_roots(data_dir))
        if found is None:
            raise no_data_error(spec.name, f"{spec.name} gold file", candidates[0], "--" + key)
        out[key] = found
        if spider1 and out.get("questions") is None:
            out["questions"] = _parsed_questions(found.parent / "dev.json")
    if out.get("db_dir") is None:
        out["db_dir"] = database_folder(spec.name, data_dir)
    return out


def _parsed_questions(path: Path) -> Path | None:
    """The data's Spider 1.0 dev.json for the gold's hardness, when it carries the official
    parse (`sql`) hardness is read from; else None (no hardness, as without --questions)."""
    try:
        entries = json_input.loads(read_text(path, "questions"))
    except (DataError, ValueError):
        return None
    parsed = isinstance(entries, list) and bool(entries) and isinstance(entries[0], dict)
    return path if parsed and "sql" in entries[0] else None


def no_data_error(benchmark: str, what: str, relative: str, flag: str) -> Exception:
    """The error of a part no data root holds: every root searched, and the three fixes."""
    from querybench.data.roots import labelled_roots

    searched = ", ".join(f"{label} {folder}" for label, folder in labelled_roots())
    return DataError(
        f"no {what} in the data roots (looked for {relative} in {searched}): set "
        f"QUERYBENCH_DATA to your data folder, `querybench data fetch {benchmark}` fetches "
        f"it, or pass {flag} (`querybench data status` says what is where)"
    )


def mini_dev_locations(spec: BenchmarkSpec, options: Arguments, layout: Arguments) -> Arguments:
    """Mini-dev: the dialect's questions file and, on SQLite, its own databases."""
    from querybench.tasks.bird import mini_dev_dir, mini_dev_file

    out = dict(options)
    if out.get("questions") is None:
        out["questions"] = mini_dev_file(str(layout["dialect"]))
    if out.get("db_dir") is None:  # with a server (`db_url`) no folder is read
        out["db_dir"] = mini_dev_dir() if out.get("db_url") is None else Path()
    return out


def dbt_locations(spec: BenchmarkSpec, options: Arguments, layout: Arguments) -> Arguments:
    """DBT: the tasks (with their eval config) and the gold folder of the data."""
    from querybench.data.layout import benchmark_root
    from querybench.evaluation.spider2.agentic.dbt import dbt_gold_dir
    from querybench.tasks import load_tasks

    out = dict(options)
    root = benchmark_root(spec.name, _data_dir(layout))
    if out.get("tasks") is None:
        out["tasks"] = load_tasks(spec.name, data_dir=root)
    out["gold_dir"] = Path(out.get("gold_dir") or dbt_gold_dir(root))
    return out


def agentic_locations(spec: BenchmarkSpec, options: Arguments, layout: Arguments) -> Arguments:
    """`eval spider2`'s tasks (with a `gold_dir`'s own eval config), gold and SQL runner."""
    from querybench.data.layout import benchmark_root, task_file_candidates
    from querybench.data.roots import data_roots, find_data
    from querybench.tasks import load_tasks
    from querybench.tasks.spider2_agentic import gold_dir as default_gold
    from querybench.tasks.spider2_agentic import gold_dir_config, with_eval_config

    data_dir = _data_dir(layout)
    out = dict(options)
    gold_dir = options.get("gold_dir")
    if options.get("tasks") is None:
        config = gold_dir_config(Path(gold_dir) if gold_dir is not None else None)
        here = find_data(*task_file_candidates(spec.name), roots=data_roots(data_dir))
        # With a gold folder's config, that config is the task set: the built-in tasks only
        # lend their questions and databases to the ids they share, and need not be here.
        tasks = (
            [] if config is not None and here is None else load_tasks(spec.name, data_dir=data_dir)
        )
        out["tasks"] = with_eval_config(tasks, config) if config is not None else tasks
    out["gold_dir"] = Path(
        gold_dir or default_gold(benchmark_root(spec.name, data_dir) / "spider2")
    )
    if options.get("run_sql") is None:
        from querybench.evaluation.spider2.agentic.instance import engine_runner

        out["run_sql"] = engine_runner(data_dir, float(layout["timeout"]))
    out["timeout"] = float(layout["timeout"])  # a .duckdb answer's reading bound too
    return out


def spider1_locations(spec: BenchmarkSpec, options: Arguments, layout: Arguments) -> Arguments:
    """A Spider 1.0-shaped benchmark scored from its data: the gold is its tasks' (SQL,
    database, difficulty, in file order), the databases its folders in lookup order."""
    from querybench.tasks import load_tasks
    from querybench.tasks.databases import database_dirs

    data_dir = _data_dir(layout)
    out = dict(options)
    if out.get("gold") is None:
        out["gold"] = load_tasks(spec.name, data_dir=data_dir)
    if out.get("db_dir") is None:
        folders = database_dirs(spec.name, data_dir)
        if not folders:
            where = spec.sqlite_files[0].removesuffix("/{db}/{db}.sqlite")
            raise no_data_error(spec.name, f"{spec.name} database folder", where, "--db-dir")
        out["db_dir"] = folders
    return out
