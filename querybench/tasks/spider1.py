"""Spider 1.0 dev (1,034 questions over 20 SQLite databases) and the question files shaped as
it is (Spider-Syn, Spider-DK), read as their spec's `QuestionFormat` says.

`dev.json` entries carry no id: the instance id is the entry's index (`"0"` ... `"1033"`), the
line of `dev_gold.sql` the official evaluator pairs it with. Difficulty is the official hardness
of the parsed gold SQL that Spider ships as the `sql` field; a variant without that field takes
the hardness of the Spider 1.0 item it was made from (the same position), or, as the official
`evaluation.py` grades it, of its gold query parsed against its own database's schema (the
SQLite file, else the benchmark's `tables.json`); a query the official parser cannot read, or
whose database is not here, is unrated.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from querybench.benchmarks import BenchmarkSpec, QuestionFormat, spec
from querybench.benchmarks.spec import Benchmark
from querybench.data.layout import sqlite_candidates
from querybench.data.roots import data_roots, find_data
from querybench.engines.registry import EngineKind
from querybench.errors import DataError, SqlParseError
from querybench.tasks.input_files import read_json_array, required_name, required_str
from querybench.tasks.model import GoldRef, Task
from querybench.tasks.spider1_hardness import spider1_hardness
from querybench.tasks.spider1_sql import SpiderSchema, parse_spider_sql
from querybench.tasks.sql_functions import uses_dialect_functions


def load(spec: BenchmarkSpec, root: Path, file: Path | None, with_gold: bool) -> list[Task]:
    """`load_tasks`' entry (`BenchmarkSpec.loader`): the gold SQL is in the question file."""
    questions = file or root / spec.task_files[0]
    return read_spider1_file(spec, questions, root)


def load_spider1(spider1_dir: Path, *, path: Path | None = None) -> list[Task]:
    """Spider 1.0 dev from its folder (or `path`)."""
    return read_spider1_file(spec("spider1"), path or spider1_dir / "dev.json", spider1_dir.parent)


def read_spider1_file(benchmark: BenchmarkSpec, questions: Path, root: Path) -> list[Task]:
    form = benchmark.questions or QuestionFormat()
    entries = list(read_json_array(questions, "question file"))
    reference = _reference_hardness(form, root) if form.hardness == "spider1-position" else None
    schemas = _Schemas(benchmark, root) if form.hardness == "query" else None
    tasks = []
    for index, (where, item) in enumerate(entries):
        sql = required_str(item, "query", where)
        db = required_name(item, "db_id", where)
        if reference is not None:
            difficulty = reference.by_position.get(index)
        elif schemas is not None:
            difficulty = schemas.hardness(db, sql)
        else:
            difficulty = _parsed_hardness(item, where)
        tasks.append(
            Task(
                instance_id=str(index),
                benchmark=benchmark.name,
                question=required_str(item, form.question, where),
                db=db,
                engine=EngineKind.SQLITE,
                gold=GoldRef(sql=sql),
                difficulty=difficulty,
                features=("functions",) if uses_dialect_functions(sql) else (),
                extra={key: _kept(item, key, form, where) for key in form.kept},
            )
        )
    return tasks


def _parsed_hardness(item: Mapping[str, Any], where: str) -> str | None:
    parsed = item.get("sql")
    if parsed is None:
        return None
    try:
        return spider1_hardness(parsed)
    except (KeyError, TypeError, IndexError, AttributeError) as exc:
        message = f"{where}: field 'sql' is not a parsed Spider query ({exc!r})"
        raise DataError(message) from None


def _kept(item: Mapping[str, Any], key: str, form: QuestionFormat, where: str) -> Any:
    if key not in item:
        raise DataError(f"{where}: missing field {key!r}")
    value = item[key]
    labels = dict(form.labels)
    return labels.get(str(value), str(value)) if labels else value


class _Reference:
    """The hardness of each Spider 1.0 dev item, by position."""

    def __init__(self, tasks: list[Task]) -> None:
        self.by_position = {i: t.difficulty for i, t in enumerate(tasks) if t.difficulty}


class _Schemas:
    """Each database's schema as the official evaluation reads it for the gold: its SQLite file
    (every table), else its `tables.json` entry; None for one neither gives."""

    def __init__(self, benchmark: BenchmarkSpec, root: Path) -> None:
        self.benchmark = benchmark
        self.roots = [root, *data_roots()]
        self.known: dict[str, SpiderSchema | None] = {}
        self.tables: dict[str, Mapping[str, Any]] | None = None

    def hardness(self, db: str, sql: str) -> str | None:
        if db not in self.known:
            self.known[db] = self._schema(db)
        schema = self.known[db]
        if schema is None:
            return None
        try:
            return spider1_hardness(parse_spider_sql(schema, sql).to_json())
        except SqlParseError:
            return None

    def _schema(self, db: str) -> SpiderSchema | None:
        found = find_data(*sqlite_candidates(self.benchmark.name, db), roots=self.roots)
        if found is not None and found.is_file():
            try:
                return SpiderSchema.from_sqlite(found)
            except DataError:
                pass
        entry = self._tables().get(db)
        if entry is None:
            return None
        try:
            return SpiderSchema.from_tables_json(entry)
        except (KeyError, IndexError, TypeError, AttributeError):
            return None

    def _tables(self) -> dict[str, Mapping[str, Any]]:
        if self.tables is None:
            self.tables = {}
            folder = self.benchmark.folder
            path = find_data(f"{folder}/tables.json", roots=self.roots) if folder else None
            if path is not None:
                for _where, entry in read_json_array(path, "tables file"):
                    if isinstance(entry, Mapping) and isinstance(entry.get("db_id"), str):
                        self.tables[entry["db_id"]] = entry
        return self.tables


def _reference_hardness(form: QuestionFormat, root: Path) -> _Reference:
    """Spider 1.0 dev, from `root` or the data roots; none there leaves every task unrated."""
    original = spec(Benchmark.SPIDER1)
    found = find_data(*original.task_files, roots=[root, *data_roots()])
    if found is None:
        return _Reference([])
    return _Reference(read_spider1_file(original, found, root))
