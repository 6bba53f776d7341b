"""Schema and knowledge context for a task, within a token budget.

    ctx = build_context(task, budget=8000)
    ctx.prompt, ctx.tokens, ctx.tables

Schemas come from Spider 2.0 metadata files (`Spider2Metadata`) or a live engine
(`LiveSchema`), both `SchemaSource`s; `assemble` builds a context from any `DatabaseSchema`.
"""

from __future__ import annotations

from pathlib import Path

from querybench.context.builder import Context, Document, FamilySummary, assemble
from querybench.context.live import LiveSchema
from querybench.context.schema import (
    ColumnInfo,
    DatabaseSchema,
    ForeignKey,
    SchemaSource,
    TableInfo,
)
from querybench.context.spider2_meta import Spider2Metadata
from querybench.context.tokens import count_tokens
from querybench.data.layout import benchmark_root
from querybench.errors import BudgetTooSmall
from querybench.tasks.model import Task

__all__ = [
    "BudgetTooSmall",
    "ColumnInfo",
    "Context",
    "DatabaseSchema",
    "Document",
    "FamilySummary",
    "ForeignKey",
    "LiveSchema",
    "SchemaSource",
    "Spider2Metadata",
    "TableInfo",
    "assemble",
    "build_context",
    "count_tokens",
]


def build_context(
    task: Task,
    *,
    budget: int | None = None,
    data: Path | None = None,
    source: SchemaSource | None = None,
) -> Context:
    """The context a model is given for `task`: schema, document and functions within `budget`
    tokens (o200k_base); no budget means everything, in full."""
    from querybench.context.resolve import schema_source, task_document, task_functions

    root = benchmark_root(task.benchmark, data)
    schema = (source or schema_source(task, data)).load()
    return assemble(
        schema,
        task.question,
        budget,
        document=task_document(task, root),
        functions=task_functions(task, schema.dialect, root),
    )
