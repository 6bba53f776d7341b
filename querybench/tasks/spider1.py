"""Spider 1.0 dev (1,034 questions over 20 SQLite databases) and the question files shaped as
it is (Spider-Syn, Spider-DK), read as their spec's `QuestionFormat` says.

`dev.json` entries carry no id: the instance id is the entry's index (`"0"` ... `"1033"`), the
line of `dev_gold.sql` the official evaluator pairs it with. Difficulty is the official hardness
of the parsed gold SQL that Spider ships as the `sql` field; a variant without that field takes
the hardness of the Spider 1.0 item it was made from (the same position, or the same database
and query), and leaves it unrated when no item matches.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from querybench.benchmarks import BenchmarkSpec, QuestionFormat, spec
from querybench.benchmarks.spec import Benchmark
from querybench.data import data_roots, find_data
from querybench.engines.registry import EngineKind
from querybench.errors import DataError
from querybench.tasks.input_files import read_json_array, required_str
from querybench.tasks.model import GoldRef, Task
from querybench.tasks.spider1_hardness import spider1_hardness
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
    reference = _reference_hardness(form, root) if form.hardness != "parsed" else None
    tasks = []
    for index, (where, item) in enumerate(entries):
        sql = required_str(item, "query", where)
        db = required_str(item, "db_id", where)
        if reference is None:
            difficulty = _parsed_hardness(item, where)
        elif form.hardness == "spider1-position":
            difficulty = reference.by_position.get(index)
        else:
            difficulty = reference.by_query.get((db.removeprefix(form.copy_prefix), _words(sql)))
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


def _words(sql: str) -> str:
    """A query as compared across the variants: case, spacing and a final `;` ignored."""
    return " ".join(sql.lower().replace(";", " ").split())


class _Reference:
    """The hardness of each Spider 1.0 dev item, by position and by (database, query)."""

    def __init__(self, tasks: list[Task]) -> None:
        self.by_position = {i: t.difficulty for i, t in enumerate(tasks) if t.difficulty}
        self.by_query: dict[tuple[str, str], str] = {}
        for t in tasks:
            if t.difficulty and t.gold.sql:
                self.by_query.setdefault((t.db, _words(t.gold.sql)), t.difficulty)


def _reference_hardness(form: QuestionFormat, root: Path) -> _Reference:
    """Spider 1.0 dev, from `root` or the data roots; none there leaves every task unrated."""
    original = spec(Benchmark.SPIDER1)
    found = find_data(*original.task_files, roots=[root, *data_roots()])
    if found is None:
        return _Reference([])
    return _Reference(read_spider1_file(original, found, root))
