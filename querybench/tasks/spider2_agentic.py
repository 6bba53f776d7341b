"""Spider 2.0, the agentic setting (benchmark `spider2`): 632 tasks, each a question and a folder.

Tasks are `spider2/examples/spider2.jsonl` lines `{instance_id, instruction, type}` with `type`
one of Bigquery, Snowflake, Local, DBT, Postgres, Clickhouse; the gold is the `evaluation` entry
of `spider2/evaluation_suite/gold/spider2_eval.jsonl` (`table_match`, `tables_match`,
`duckdb_match`, `string_match`, `number_match`, or a list of them).

* The 68 DBT tasks are the `spider2-dbt` tasks (same ids), built by that loader and renamed;
* 538 ids are also Spider 2.0-lite ids: they take that task's difficulty (gold SQL tokens:
  easy < 80 <= medium < 160 <= hard), database id, feature tags and gold SQL; the other tasks
  are `unrated`;
* a local task's database is named by `resource/databases/local/local-map.jsonl` (a single JSON
  object despite its suffix) and found among the rebuilt SQLite files of `spider2-lite-local/`.

`extra` holds `type`, `answer_type` (`string`, `table` or `database`: what the paper's tables
group by), `submission_types` (the official `answer_type`s the gold can score: `answer`, `file`,
`files`) and `example_dir` when the task's folder is here.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from querybench import json_input
from querybench.benchmarks import BenchmarkSpec
from querybench.engines.registry import EngineKind
from querybench.errors import DataError
from querybench.tasks.agentic_checks import parse_checks
from querybench.tasks.input_files import (
    read_jsonl,
    read_text,
    required_name,
    required_str,
    unique_ids,
)
from querybench.tasks.model import GoldRef, Task
from querybench.tasks.spider2_dbt import load_spider2_dbt

BENCHMARK = "spider2"
UNRATED = "unrated"

# The official task file's `type` -> the engine kind
ENGINES = {
    "Bigquery": EngineKind.BIGQUERY,
    "Snowflake": EngineKind.SNOWFLAKE,
    "Local": EngineKind.SQLITE,
    "DBT": EngineKind.DUCKDB,
    "Postgres": EngineKind.POSTGRES,
    "Clickhouse": EngineKind.CLICKHOUSE,
}

TEXT_FUNCS = frozenset({"string_match", "number_match"})
FILE_FUNCS = frozenset({"table_match", "duckdb_match"})
FILES_FUNCS = frozenset({"tables_match"})

ANSWER_FEATURES = {
    "string": "string_answer",
    "table": "table_answer",
    "database": "database_answer",
}


def agentic_root(spider2_dir: Path) -> Path:
    """The agentic setting's folder under the `spider2` data folder."""
    return spider2_dir / "spider2"


def gold_dir(spider2_dir: Path) -> Path:
    return agentic_root(spider2_dir) / "evaluation_suite" / "gold"


def has_gold(task: Task, gold_dir: Path) -> bool:
    """Whether every gold file the task's checks name is here (text checks need none): what
    `eval spider2` scores as "gold here" and `data status` counts."""
    checks = task.gold.eval_params.get("evaluation", [])
    names: list[str] = []
    for check in checks:
        if check["func"] in TEXT_FUNCS:
            continue
        gold = check["parameters"].get("gold")
        names += [gold] if isinstance(gold, str) else [g for g in gold or [] if isinstance(g, str)]
    return bool(checks) and all((gold_dir / task.instance_id / n).is_file() for n in names)


def answer_type(evaluation: list[dict[str, Any]]) -> str:
    """What the paper groups by: a changed database (DBT, Postgres/ClickHouse projects whose
    target tables are exported), a string/number, or a table."""
    funcs = {c["func"] for c in evaluation}
    if funcs & {"duckdb_match", "tables_match"}:
        return "database"
    if funcs & TEXT_FUNCS:
        return "string"
    return "table"


def submission_types(evaluation: list[dict[str, Any]]) -> tuple[str, ...]:
    """The official `answer_type`s whose branch of `evaluate.py` reads one of these checks."""
    funcs = {c["func"] for c in evaluation}
    kinds = [("answer", TEXT_FUNCS), ("file", FILE_FUNCS), ("files", FILES_FUNCS)]
    return tuple(kind for kind, names in kinds if funcs & names)


def local_map(root: Path) -> dict[str, str]:
    """`local-map.jsonl`: task id -> SQLite database name (one JSON object)."""
    path = root / "resource" / "databases" / "local" / "local-map.jsonl"
    if not path.is_file():
        return {}
    try:
        mapping = json_input.loads(read_text(path, "local map"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(mapping, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
    ):
        raise DataError(f"{path}: expected one object of task id -> database name")
    return dict(mapping)


def load(spec: BenchmarkSpec, root: Path, file: Path | None, with_gold: bool) -> list[Task]:
    """`load_tasks`' entry (`BenchmarkSpec.loader`)."""
    return load_spider2_agentic(root / spec.folder, path=file, with_gold=with_gold)


def load_spider2_agentic(
    spider2_dir: Path, *, path: Path | None = None, with_gold: bool = True
) -> list[Task]:
    """Every task of the agentic setting (`spider2_dir` is the `spider2` data folder)."""
    root = agentic_root(spider2_dir)
    tasks_file = path or root / "examples" / "spider2.jsonl"
    config = gold_dir(spider2_dir) / EVAL_CONFIG
    evaluations = read_eval_config(config) if with_gold and config.is_file() else {}
    lite = _lite_tasks(spider2_dir, with_gold)
    dbt = _dbt_tasks(spider2_dir, with_gold)
    databases = local_map(root)
    tasks = []
    for where, item in read_jsonl(tasks_file):
        instance_id = required_name(item, "instance_id", where)
        question = required_str(item, "instruction", where)
        kind = required_str(item, "type", where)
        if kind not in ENGINES:
            raise DataError(f"{where}: field 'type' {kind!r} is not one of {', '.join(ENGINES)}")
        raw = evaluations.get(instance_id)
        tasks.append(
            _task(
                instance_id,
                question,
                kind,
                raw,
                lite.get(instance_id),
                dbt.get(instance_id),
                databases.get(instance_id),
                root,
            )
        )
    unique_ids([t.instance_id for t in tasks], tasks_file)
    return tasks


def _task(
    instance_id: str,
    question: str,
    kind: str,
    raw: object,
    lite: Task | None,
    dbt: Task | None,
    local_db: str | None,
    root: Path,
) -> Task:
    example = root / "examples" / instance_id
    evaluation = checks(raw) if raw is not None else []
    extra: dict[str, Any] = {"type": kind}
    features: set[str] = set()
    if dbt is not None:
        extra.update(dbt.extra)
        features.update(dbt.features)
        features -= set(ANSWER_FEATURES.values())
    if lite is not None:
        # Lite tags every task `table_answer`; the answer type here comes from the gold.
        features.update(set(lite.features) - set(ANSWER_FEATURES.values()) - {"documentation"})
        if "metadata_dir" in lite.extra:
            extra["metadata_dir"] = lite.extra["metadata_dir"]
    if example.is_dir():
        extra["example_dir"] = str(example)
        if any(p.suffix == ".md" and p.name != "README.md" for p in example.iterdir()):
            features.add("documentation")  # a reference document beside the README
    if evaluation:
        kind_of_answer = answer_type(evaluation)
        extra["answer_type"] = kind_of_answer
        extra["submission_types"] = list(submission_types(evaluation))
        features.add(ANSWER_FEATURES[kind_of_answer])
    files = [
        gold_dir(root.parent) / instance_id / name
        for check in evaluation
        for name in _gold_names(check)
    ]
    gold = GoldRef(
        sql=lite.gold.sql if lite is not None else None,
        result_files=tuple(str(p) for p in files if p.is_file()),
        # `official_evaluation` keeps the entry as written: the official driver reads an
        # object and a one-item list differently.
        eval_params={"evaluation": evaluation, "official_evaluation": raw} if evaluation else {},
    )
    if dbt is not None:
        db = dbt.db
    elif local_db is not None:
        db = local_db
    elif lite is not None:
        db = lite.db
    else:
        db = instance_id.removeprefix("postgres_")
    return Task(
        instance_id=instance_id,
        benchmark=BENCHMARK,
        question=question,
        db=db,
        engine=ENGINES[kind],
        gold=gold,
        difficulty=(lite.difficulty if lite is not None else None) or UNRATED,
        features=tuple(sorted(features)),
        extra=extra,
    )


def read_eval_config(config: Path) -> dict[str, object]:
    """`spider2_eval.jsonl`: instance id -> its `evaluation` value as written (shape checked,
    parameters not: a few gold entries pass parameters their matcher does not take, which the
    official scorer only meets when it scores them)."""
    out: dict[str, object] = {}
    for where, item in read_jsonl(config, "eval config"):
        instance_id = required_name(item, "instance_id", where)
        if "evaluation" not in item:
            raise DataError(f"{where}: field 'evaluation' is missing")
        try:
            parse_checks(item["evaluation"])
        except DataError as exc:
            raise DataError(f"{where}: field 'evaluation': {exc}") from None
        out[instance_id] = item["evaluation"]
    return out


def checks(evaluation: object) -> list[dict[str, Any]]:
    """The `{func, parameters}` checks of an `evaluation` value (an object or a list)."""
    return [{"func": c.func, "parameters": dict(c.parameters)} for c in parse_checks(evaluation)]


def _gold_names(check: dict[str, Any]) -> list[str]:
    gold = check["parameters"].get("gold")
    if check["func"] in TEXT_FUNCS:
        return []
    if isinstance(gold, str):
        return [gold]
    return [g for g in gold if isinstance(g, str)] if isinstance(gold, list) else []


def _lite_tasks(spider2_dir: Path, with_gold: bool) -> dict[str, Task]:
    if not (spider2_dir / "spider2-lite" / "spider2-lite.jsonl").is_file():
        return {}
    from querybench.tasks.spider2 import load_spider2

    return {
        t.instance_id: t for t in load_spider2("spider2-lite", spider2_dir, with_gold=with_gold)
    }


def _dbt_tasks(spider2_dir: Path, with_gold: bool) -> dict[str, Task]:
    folder = spider2_dir / "spider2-dbt"
    if not (folder / "examples" / "spider2-dbt.jsonl").is_file():
        return {}
    return {
        t.instance_id: replace(t, benchmark=BENCHMARK)
        for t in load_spider2_dbt(folder, with_gold=with_gold)
    }


EVAL_CONFIG = "spider2_eval.jsonl"


def gold_dir_config(gold_dir: Path | None) -> Path | None:
    """The eval config of a `--gold-dir`, when it has one: then it is the task set, as the
    official `evaluate.py` scores the instances its gold folder's config names."""
    config = gold_dir / EVAL_CONFIG if gold_dir is not None else None
    return config if config is not None and config.is_file() else None


def with_eval_config(tasks: list[Task], config: Path) -> list[Task]:
    """The tasks another `spider2_eval.jsonl` names (a `--gold-dir`'s: a newer release, a
    custom set, synthetic DBT cases), in its order, with its checks: a built-in task keeps its
    question, database and tags; an id the built-in list lacks becomes `config_task`."""
    evaluations = read_eval_config(config)
    known = {t.instance_id: t for t in tasks}
    out = []
    for instance_id, raw in evaluations.items():
        task = known.get(instance_id)
        if task is None:
            out.append(config_task(instance_id, raw, config.parent))
            continue
        params = {"evaluation": checks(raw), "official_evaluation": raw}
        out.append(replace(task, gold=replace(task.gold, eval_params=params)))
    return out


def config_task(instance_id: str, raw: object, gold: Path) -> Task:
    """A task only an eval config names: its checks and gold, no question. Its engine is what
    the official `evaluate.py` assumes: a DBT database for `duckdb_match`, else BigQuery (where
    it runs every `.sql` answer)."""
    evaluation = checks(raw)
    dbt = any(c["func"] == "duckdb_match" for c in evaluation)
    kind_of_answer = answer_type(evaluation)
    files = [gold / instance_id / name for check in evaluation for name in _gold_names(check)]
    return Task(
        instance_id=instance_id,
        benchmark=BENCHMARK,
        question="",
        db=instance_id,
        engine=EngineKind.DUCKDB if dbt else EngineKind.BIGQUERY,
        gold=GoldRef(
            result_files=tuple(str(p) for p in files if p.is_file()),
            eval_params={"evaluation": evaluation, "official_evaluation": raw},
        ),
        difficulty=UNRATED,
        features=(ANSWER_FEATURES[kind_of_answer],),
        extra={
            "type": "DBT" if dbt else None,
            "answer_type": kind_of_answer,
            "submission_types": list(submission_types(evaluation)),
            "eval_config_only": True,
        },
    )
