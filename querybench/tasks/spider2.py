"""Spider 2.0-lite and -snow: 547 tasks each, in the official repository layout.

Lite lines are `{instance_id, db, question, external_knowledge}`; snow lines
`{instance_id, instruction, db_id, external_knowledge}`. Every snow task is a lite task moved to
Snowflake (`sf_bq011` is lite `bq011`; `sf001` keeps its id), with the same question: a snow task
takes that lite task's difficulty, its database's feature tags when the Snowflake metadata
of the database itself is not present, and its gold SQL for the `functions` tag when the snow
gold SQL is not public.

The gold folder (`evaluation_suite/gold/`) is optional: without it (or with `with_gold=False`)
the tasks carry no gold, difficulty or `functions` tag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from querybench.benchmarks import Benchmark, BenchmarkSpec, spec
from querybench.engines.registry import EngineKind
from querybench.errors import DataError
from querybench.tasks.input_files import (
    optional_str,
    read_jsonl,
    required_name,
    required_str,
    unique_ids,
)
from querybench.tasks.model import GoldRef, Task
from querybench.tasks.spider2_gold import GoldFolder, engine_family
from querybench.tasks.spider2_metadata import database_traits, find_database_dir
from querybench.tasks.sql_functions import uses_dialect_functions

Variant = Literal["spider2-lite", "spider2-snow"]

# A Spider 2.0 instance family (`engine_family`, the `engine` of its results) -> engine kind
FAMILY_KINDS = {"bq": EngineKind.BIGQUERY, "sf": EngineKind.SNOWFLAKE, "local": EngineKind.SQLITE}


def load(spec: BenchmarkSpec, root: Path, file: Path | None, with_gold: bool) -> list[Task]:
    """`load_tasks`' entry (`BenchmarkSpec.loader`)."""
    variant: Variant = "spider2-lite" if spec.name == Benchmark.SPIDER2_LITE else "spider2-snow"
    return load_spider2(variant, root / spec.folder, path=file, with_gold=with_gold)


def load_spider2(
    benchmark: Variant, spider2_dir: Path, *, path: Path | None = None, with_gold: bool = True
) -> list[Task]:
    """Tasks of `spider2_dir/<benchmark>/<benchmark>.jsonl` (or `path`), tagged and graded."""
    root = spider2_dir / benchmark
    tasks_file = path or root / f"{benchmark}.jsonl"
    gold = _gold(root / "evaluation_suite" / "gold", benchmark) if with_gold else None
    declared = spec(benchmark)
    lite = _LiteIndex(spider2_dir, with_gold) if declared.translates is not None else None
    question_key, db_key = declared.task_keys
    metadata = spider2_dir / "spider2-lite" / "resource" / "databases"
    tasks = []
    for where, item in read_jsonl(tasks_file):
        instance_id = required_name(item, "instance_id", where)
        question = required_str(item, question_key, where)
        db = required_name(item, db_key, where)
        knowledge = optional_str(item, "external_knowledge", where)
        engine = _engine(benchmark, instance_id, where)
        traits_dir = find_database_dir(metadata, engine, db)
        if lite is not None:
            own = find_database_dir(root / "resource" / "databases", "", db)
            traits_dir = own or traits_dir or lite.metadata_dir(instance_id)
        features = set(database_traits(traits_dir).tags()) if traits_dir else set()
        features.add("table_answer")  # every lite/snow answer is a result table (CSV)
        if knowledge:
            features.add("documentation")
        gold_ref, difficulty = GoldRef(), None
        if gold is not None and instance_id in gold.specs:
            gold_ref = _gold_ref(gold, instance_id)
            difficulty = gold.difficulty(instance_id)
            sql = gold_ref.sql or (lite.gold_sql(instance_id) if lite else None)
            if sql is not None and uses_dialect_functions(sql):
                features.add("functions")
        extra = {k: v for k, v in item.items() if k == "temporal"}
        if traits_dir is not None:
            extra["metadata_dir"] = str(traits_dir)
        tasks.append(
            Task(
                instance_id=instance_id,
                benchmark=benchmark,
                question=question,
                db=db,
                engine=engine,
                external_knowledge=knowledge,
                gold=gold_ref,
                difficulty=difficulty,
                features=tuple(sorted(features)),
                extra=extra,
            )
        )
    unique_ids([t.instance_id for t in tasks], tasks_file)
    return tasks


def lite_id(snow_id: str) -> str:
    """The lite task a snow task comes from: `sf_bq011` -> `bq011`, `sf001` -> `sf001`."""
    return snow_id.removeprefix("sf_")


def _engine(benchmark: Variant, instance_id: str, where: str) -> EngineKind:
    if (one := spec(benchmark).one_engine) is not None:
        return EngineKind(one)
    family = engine_family(instance_id)
    if family not in FAMILY_KINDS:
        raise DataError(
            f"{where}: field 'instance_id' {instance_id!r} has no engine prefix (bq, ga, sf, local)"
        )
    return FAMILY_KINDS[family]


def _gold(gold_dir: Path, benchmark: Variant) -> GoldFolder | None:
    """The gold folder when it is there; a partial copy is still an error (GoldFolder's)."""
    return GoldFolder(gold_dir, benchmark) if gold_dir.is_dir() else None


def _gold_ref(gold: GoldFolder, instance_id: str) -> GoldRef:
    spec = gold.specs[instance_id]
    paths, _single = gold.result_paths(instance_id)
    params: dict[str, object] = {
        "condition_cols": spec.condition_cols,
        "ignore_order": spec.ignore_order,
    }
    if spec.toks is not None:
        params["toks"] = spec.toks
    return GoldRef(
        sql=gold.gold_sql(instance_id),
        result_files=tuple(str(p) for p in paths),
        eval_params=params,
    )


class _LiteIndex:
    """The lite tasks a snow loader borrows from: database metadata and gold SQL."""

    def __init__(self, spider2_dir: Path, with_gold: bool) -> None:
        lite_file = spider2_dir / "spider2-lite" / "spider2-lite.jsonl"
        self._tasks: dict[str, Task] = {}
        if lite_file.is_file():
            for task in load_spider2("spider2-lite", spider2_dir, with_gold=with_gold):
                self._tasks[task.instance_id] = task

    def _task(self, snow_id: str) -> Task | None:
        return self._tasks.get(lite_id(snow_id)) or self._tasks.get(snow_id)

    def metadata_dir(self, snow_id: str) -> Path | None:
        task = self._task(snow_id)
        found = task.extra.get("metadata_dir") if task else None
        return Path(found) if found else None

    def gold_sql(self, snow_id: str) -> str | None:
        task = self._task(snow_id)
        return task.gold.sql if task else None
