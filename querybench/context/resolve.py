"""Where a task's schema, document and dialect docs come from under the data root.

Only `resource/databases`, `resource/documents` and `resource/syntax` are read: never gold SQL,
gold results or `methods/gold-tables`.
"""

from __future__ import annotations

from pathlib import Path

from querybench.benchmarks import lookup
from querybench.context.builder import Document
from querybench.context.documents import FunctionDoc, dialect_functions
from querybench.context.live import LiveSchema
from querybench.context.schema import SchemaSource
from querybench.context.spider2_meta import ENGINES, Spider2Metadata, find_database_dir
from querybench.data.layout import benchmark_root
from querybench.errors import DataError
from querybench.tasks.databases import task_database
from querybench.tasks.input_files import read_text
from querybench.tasks.model import Task


def _spider2_resource(data: Path, benchmark: str) -> Path:
    return data / "spider2" / benchmark / "resource"


def schema_source(task: Task, data: Path | None) -> SchemaSource:
    """Spider 2.0 tasks read metadata files; other tasks introspect their database file.
    `data` None: the data roots, as every reader searches them."""
    if (found := lookup(task.benchmark)) is not None and found.spider2_resources:
        if data is None:
            data = benchmark_root(task.benchmark)
        engine = found.one_engine or task.engine
        if engine not in ENGINES:
            raise DataError(f"{task.instance_id}: no Spider 2.0 metadata for engine {engine!r}")
        for benchmark in (task.benchmark, "spider2-lite"):
            databases = _spider2_resource(data, benchmark) / "databases"
            if (databases / engine).is_dir():
                break
        db_dir = find_database_dir(databases, engine, task.db)
        return Spider2Metadata(db_dir, engine)
    path = task_database(task, data)
    if path is None:
        where = data if data is not None else "the data roots (querybench data status)"
        raise DataError(f"{task.instance_id}: database {task.db!r} not found under {where}")
    from querybench.engines import connect

    return LiveSchema(connect(path), task.db)


def task_document(task: Task, data: Path) -> Document | None:
    """The task's external knowledge: a named `resource/documents` file, or the text itself."""
    ref = task.external_knowledge
    if not ref:
        return None
    if ref.endswith(".md") and "\n" not in ref:
        for benchmark in (task.benchmark, "spider2-lite"):
            folder = _spider2_resource(data, benchmark) / "documents"
            path = folder / ref
            if path.is_file():  # a name of the task file's, read only inside the folder
                return Document(ref, read_text(path, "external knowledge document", folder))
        raise DataError(f"{task.instance_id}: external knowledge document {ref!r} not found")
    return Document("evidence", ref)


def task_functions(task: Task, dialect: str, data: Path) -> tuple[FunctionDoc, ...]:
    syntax = _spider2_resource(data, "spider2-lite") / "syntax"
    return dialect_functions(dialect, syntax if syntax.is_dir() else None)
