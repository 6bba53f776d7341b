"""Spider 2.0-DBT: 68 DuckDB data-transformation projects.

Tasks are `examples/spider2-dbt.jsonl` lines `{instance_id, instruction, type}`; the gold is the
`evaluation` entry of `evaluation_suite/gold/spider2_eval.jsonl` (`duckdb_match` against
`<db>.duckdb`). The database id is that gold file's stem (`playbook.duckdb` -> `playbook`), or
the `path:` of the project's `profiles.yml`, else the instance id without its number.
The answer type follows the matcher: a database (`duckdb_match`), a table (`table_match`,
`tables_match`) or a string (`string_match`, `number_match`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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

ANSWER_TAGS = {
    "duckdb_match": "database_answer",
    "table_match": "table_answer",
    "tables_match": "table_answer",
    "string_match": "string_answer",
    "number_match": "string_answer",
}
_PROFILE_PATH = re.compile(r"""path:\s*["']?(?:\./)?([^"'\s]+)\.duckdb""")


def load(spec: BenchmarkSpec, root: Path, file: Path | None, with_gold: bool) -> list[Task]:
    """`load_tasks`' entry (`BenchmarkSpec.loader`)."""
    return load_spider2_dbt(root / spec.folder / "spider2-dbt", path=file, with_gold=with_gold)


def load_spider2_dbt(
    dbt_dir: Path, *, path: Path | None = None, with_gold: bool = True
) -> list[Task]:
    tasks_file = path or dbt_dir / "examples" / "spider2-dbt.jsonl"
    gold_dir = dbt_dir / "evaluation_suite" / "gold"
    evaluations = _evaluations(gold_dir / "spider2_eval.jsonl") if with_gold else {}
    tasks = []
    for where, item in read_jsonl(tasks_file):
        instance_id = required_name(item, "instance_id", where)
        question = required_str(item, "instruction", where)
        project = dbt_dir / "examples" / instance_id
        evaluation = evaluations.get(instance_id, [])
        answers = {ANSWER_TAGS.get(c["func"]) for c in evaluation} - {None}
        features: set[str] = {"dbt", *(a for a in answers if a)}
        if not evaluation:
            features.add("database_answer")  # a DBT project's answer is the database it builds
        gold_files = [
            gold_dir / instance_id / str(c["parameters"]["gold"])
            for c in evaluation
            if isinstance(c["parameters"].get("gold"), str)
        ]
        extra: dict[str, Any] = {k: v for k, v in item.items() if k == "type"}
        if project.is_dir():
            extra["project_dir"] = str(project)
        tasks.append(
            Task(
                instance_id=instance_id,
                benchmark="spider2-dbt",
                question=question,
                db=_database(instance_id, evaluation, project),
                engine=EngineKind.DUCKDB,
                gold=GoldRef(
                    result_files=tuple(str(p) for p in gold_files if p.exists()),
                    eval_params={"evaluation": evaluation} if evaluation else {},
                ),
                features=tuple(sorted(features)),
                extra=extra,
            )
        )
    unique_ids([t.instance_id for t in tasks], tasks_file)
    return tasks


def _evaluations(config: Path) -> dict[str, list[dict[str, Any]]]:
    if not config.is_file():
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for where, item in read_jsonl(config, "eval config"):
        instance_id = required_name(item, "instance_id", where)
        if "evaluation" not in item:
            raise DataError(f"{where}: field 'evaluation' is missing")
        try:
            checks = parse_checks(item["evaluation"])
        except DataError as exc:
            raise DataError(f"{where}: field 'evaluation': {exc}") from None
        out[instance_id] = [{"func": c.func, "parameters": dict(c.parameters)} for c in checks]
    return out


def _database(instance_id: str, evaluation: list[dict[str, Any]], project: Path) -> str:
    for check in evaluation:
        gold = check["parameters"].get("gold")
        if isinstance(gold, str) and gold.endswith(".duckdb"):
            return Path(gold).stem
    profile = project / "profiles.yml"
    if profile.is_file():
        match = _PROFILE_PATH.search(read_text(profile, "dbt profile", errors="replace"))
        if match:
            return Path(match[1]).name
    return instance_id.rstrip("0123456789")
