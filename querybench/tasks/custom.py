"""A user's own questions: JSONL (one task a line) or YAML (a list, or a mapping with defaults).

Each task has `id` (or `instance_id`), `question` and `database` (a URL such as
`postgresql://host/db`, `sqlite:///abs/file.db`, or a file path relative to the task file),
and optionally `engine`, `gold_sql`, `gold_csv` (one path or a list), `external_knowledge`,
`difficulty`, `features` and `extra`. A YAML mapping may set `database`, `engine` and
`external_knowledge` once for all its `tasks`. Unknown fields are errors, so a typo in
`gold_sql` is never silently ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from querybench.benchmarks import BenchmarkSpec
from querybench.engines.registry import EngineKind, kind_spec, spec_for_scheme, spec_for_suffix
from querybench.errors import DataError
from querybench.tasks.input_files import optional_str, read_jsonl, read_text, required_str
from querybench.tasks.model import FEATURES, GoldRef, Task

FIELDS = frozenset(
    {
        "id",
        "instance_id",
        "question",
        "database",
        "engine",
        "gold_sql",
        "gold_csv",
        "external_knowledge",
        "difficulty",
        "features",
        "extra",
    }
)
_DEFAULTS = ("database", "engine", "external_knowledge")


def load(spec: BenchmarkSpec, root: Path, file: Path | None, with_gold: bool) -> list[Task]:
    """`load_tasks`' entry (`BenchmarkSpec.loader`): the task file is the user's."""
    if file is None:
        raise DataError("the custom benchmark needs a task file (path=..., --path)")
    return load_custom(file)


def load_custom(path: Path) -> list[Task]:
    if path.suffix.lower() in (".yaml", ".yml"):
        entries = list(_yaml_entries(path))
    else:
        entries = list(read_jsonl(path))
    tasks = [_task(item, where, path.parent) for where, item in entries]
    seen: dict[str, str] = {}
    for task, (where, _item) in zip(tasks, entries, strict=True):
        if task.instance_id in seen:
            first = seen[task.instance_id]
            raise DataError(f"{where}: field 'id' {task.instance_id!r} repeats the task at {first}")
        seen[task.instance_id] = where
    return tasks


def _yaml_entries(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    text = read_text(path, "task file")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise DataError(f"{path}{line}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    defaults: dict[str, Any] = {}
    items, item_nodes = data, node.value if isinstance(node, yaml.SequenceNode) else []
    if isinstance(data, dict):
        unknown = set(data) - {"tasks", *_DEFAULTS}
        if unknown:
            raise DataError(f"{path}:1: unknown top-level field {sorted(unknown)[0]!r}")
        if not isinstance(data.get("tasks"), list):
            raise DataError(f"{path}:1: field 'tasks' must be a list of tasks")
        defaults = {k: data[k] for k in _DEFAULTS if k in data}
        items = data["tasks"]
        assert isinstance(node, yaml.MappingNode)  # data is a dict, so its node is a mapping
        tasks_node = next(v for k, v in node.value if k.value == "tasks")
        item_nodes = tasks_node.value
    elif not isinstance(data, list):
        raise DataError(f"{path}:1: expected a list of tasks or a mapping with 'tasks'")
    for item, item_node in zip(items, item_nodes, strict=True):
        where = f"{path}:{item_node.start_mark.line + 1}"
        if not isinstance(item, dict):
            raise DataError(f"{where}: expected a mapping (id, question, database, ...)")
        yield where, {**defaults, **item}


def _task(item: dict[str, Any], where: str, base: Path) -> Task:
    unknown = set(item) - FIELDS
    if unknown:
        known = ", ".join(sorted(FIELDS))
        raise DataError(f"{where}: unknown field {sorted(unknown)[0]!r} (known: {known})")
    id_field = "instance_id" if "instance_id" in item else "id"
    instance_id = required_str(item, id_field, where, int_ok=True)
    question = required_str(item, "question", where)
    database = required_str(item, "database", where)
    engine = _engine(item, database, where)
    db = _database(database, engine, base)
    features = item.get("features", [])
    if not isinstance(features, list) or any(f not in FEATURES for f in features):
        raise DataError(f"{where}: field 'features' must be a list of: {', '.join(FEATURES)}")
    extra = item.get("extra", {})
    if not isinstance(extra, dict):
        raise DataError(f"{where}: field 'extra' must be a mapping")
    knowledge = optional_str(item, "external_knowledge", where)
    tags = set(features) | ({"documentation"} if knowledge else set())
    return Task(
        instance_id=instance_id,
        benchmark="custom",
        question=question,
        db=db,
        engine=engine,
        external_knowledge=knowledge,
        gold=GoldRef(
            sql=optional_str(item, "gold_sql", where),
            result_files=_gold_csv(item, where, base),
        ),
        difficulty=optional_str(item, "difficulty", where),
        features=tuple(f for f in FEATURES if f in tags),
        extra=extra,
    )


def _engine(item: dict[str, Any], database: str, where: str) -> EngineKind:
    named = optional_str(item, "engine", where)
    if named is not None:
        try:
            return EngineKind(named)
        except ValueError:
            allowed = ", ".join(EngineKind)
            raise DataError(f"{where}: field 'engine' {named!r} is not one of {allowed}") from None
    if "://" in database:
        scheme = database.partition("://")[0].lower()
        # `postgresql+psycopg://` is PostgreSQL's, as `snowflake+local://` is Snowflake's
        spec = spec_for_scheme(scheme) or spec_for_scheme(scheme.split("+")[0])
        if spec is not None:
            return spec.kind
        scheme = scheme.split("+")[0]
        raise DataError(f"{where}: field 'database' has an unknown scheme {scheme!r}; set 'engine'")
    spec = spec_for_suffix(Path(database).suffix)
    if spec is not None:
        return spec.kind
    raise DataError(
        f"{where}: field 'database' {database!r}: cannot tell the engine from it; set 'engine' "
        "or use a .sqlite/.db/.duckdb file or a URL"
    )


def _database(database: str, engine: EngineKind, base: Path) -> str:
    """File databases become `sqlite:///abs` / `duckdb:///abs` targets that `connect` opens."""
    spec = kind_spec(engine)
    if "://" in database or not spec.is_file:
        return database
    path = Path(database).expanduser()
    return f"{spec.schemes[0]}://{(path if path.is_absolute() else base / path).resolve()}"


def _gold_csv(item: dict[str, Any], where: str, base: Path) -> tuple[str, ...]:
    value = item.get("gold_csv")
    if value is None:
        return ()
    paths = [value] if isinstance(value, str) else value
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise DataError(f"{where}: field 'gold_csv' must be a path or a list of paths")
    resolved = [(base / Path(p).expanduser()).resolve() for p in paths]
    missing = next((p for p in resolved if not p.is_file()), None)
    if missing is not None:
        raise DataError(f"{where}: field 'gold_csv': file {missing} not found")
    return tuple(str(p) for p in resolved)
