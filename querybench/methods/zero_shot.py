"""Zero-shot: one prompt with the schema (sampled values included), external knowledge,
dialect notes and the question; the SQL is the reply's first ```sql block, else the reply.

The prompt is two messages:

* system: the instruction and the dialect notes;
* user: the task's context from `build_context` (schema, external knowledge, relevant dialect
  functions) as the truncatable `context`, then the question.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

from querybench.benchmarks import Family, family
from querybench.context import build_context
from querybench.context.schema import SchemaSource
from querybench.engines.registry import EngineKind, dialect_label
from querybench.evaluation.sql_extract import extract_sql
from querybench.methods import Candidate, MethodOutput, MethodSettings
from querybench.methods.schema_cache import ContextCache
from querybench.models.base import ChatRequest, Message

if TYPE_CHECKING:
    from querybench.models.base import ChatModel
    from querybench.tasks.model import Task

SYSTEM = (
    "You are an expert data analyst who writes {dialect} SQL.\n"
    "Write one SQL query that answers the user's question on the database described.\n"
    "Use only the tables and columns shown. Reply with the query in a single ```sql code "
    "block.\n\n"
    "Dialect notes:\n{notes}"
)

# What the prompt says about each dialect (its name comes from the engine registry).
DIALECT_NOTES = {
    EngineKind.SQLITE: (
        "- SQLite: dates are text; use strftime() and date(); concatenate with ||; "
        "integer division truncates (CAST AS REAL for ratios); quote names with spaces in "
        "double quotes or backticks."
    ),
    EngineKind.DUCKDB: (
        "- DuckDB: PostgreSQL-like; date_trunc(), strftime(); lists and structs are native types."
    ),
    EngineKind.BIGQUERY: (
        "- BigQuery Standard SQL: name tables `project.dataset.table` in backticks; "
        "use _TABLE_SUFFIX for wildcard tables; UNNEST arrays in FROM."
    ),
    EngineKind.SNOWFLAKE: (
        "- Snowflake: quote names in double quotes exactly as shown (they are "
        "case-sensitive); FLATTEN for VARIANT arrays; use DATABASE.SCHEMA.TABLE names."
    ),
    EngineKind.POSTGRES: (
        "- PostgreSQL: date_trunc(), ::type casts, ILIKE for case-insensitive match."
    ),
    EngineKind.MYSQL: "- MySQL: backticks for names, DATE_FORMAT(), LIMIT n.",
    EngineKind.CLICKHOUSE: "- ClickHouse: toYear(), toStartOfMonth(), arrayJoin() for arrays.",
}

QUESTION = "Question: {question}"


def dialect_name(task: Task) -> str:
    return dialect_label(task.engine)


def dialect_notes(task: Task) -> str:
    return DIALECT_NOTES.get(task.engine, "-")


class ZeroShot:
    name = "zero-shot"

    def __init__(self) -> None:
        self._schemas = ContextCache()

    def build_messages(
        self, task: Task, budget: int | None, data_dir: Path | None = None
    ) -> tuple[Message, ...]:
        """The documented prompt for `task` (the golden-file test pins it)."""
        source = self._source(task, data_dir)
        context = build_context(task, budget=budget, data=data_dir, source=source)
        system = SYSTEM.format(dialect=dialect_name(task), notes=dialect_notes(task))
        return (
            Message("system", system),
            Message("user", QUESTION.format(question=task.question.strip()), context.prompt),
        )

    def _source(self, task: Task, data_dir: Path | None) -> SchemaSource | None:
        if family(task.benchmark) is Family.SPIDER2:
            return None  # metadata files: build_context reads them itself
        return self._schemas.source(task, data_dir)

    async def solve(self, task: Task, model: ChatModel, settings: MethodSettings) -> MethodOutput:
        start = time.perf_counter()
        messages = await asyncio.to_thread(
            self.build_messages, task, settings.context_budget, settings.data_dir
        )
        context_s = time.perf_counter() - start
        requests = [ChatRequest(messages, settings.sampling, sample=j) for j in range(settings.n)]
        completions = await asyncio.gather(*(model.complete(r, task) for r in requests))
        candidates = tuple(Candidate(c.text, extract_sql(c.text), c) for c in completions)
        return MethodOutput(messages, requests[0].prompt_hash(), candidates, context_s)


METHOD = ZeroShot()
