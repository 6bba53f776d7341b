"""CHESS (Talaei et al., 2024), offline-friendly: the model filters the schema, several
candidates are generated, each is run read-only on the task's real database and revised once
from the execution feedback, and the answer is chosen by execution result.

1. `schema_filtering` (`FILTER`): the ranked context exactly as zero-shot shows it (schema with
   sampled values, external knowledge, dialect functions); the model names the tables needed.
   Every table of the context whose name appears in the reply is kept — so the oracle's gold
   SQL keeps the tables it uses; when none does, every table of the context is kept.
2. `generation` (`GENERATE`, one call per candidate, `n` candidates): the kept tables as
   CREATE TABLE statements with example values, plus the context's extras, and the question.
3. execution: each candidate runs through `querybench.engines` (read-only, `TIMEOUT` s, at most
   `MAX_ROWS` rows) on the task's database when it is available here.
4. `revision` (`REVISE`): a candidate that failed, returned no rows or held no SQL is sent back
   once with that feedback; the revised SQL replaces it (and is run again).
5. selection: majority by execution result (the same result key as the run's majority vote),
   ties to the earliest candidate; the chosen candidate is returned first. Without a reachable
   database there is no revision and the first candidate stands.

Calls per task: 1 + n + (number of candidates revised).
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from querybench.context.schema import DatabaseSchema
from querybench.evaluation.sampling import majority_vote, result_key
from querybench.evaluation.sql_extract import extract_sql
from querybench.methods import MethodOutput, MethodSettings
from querybench.methods.schema_text import create_tables
from querybench.methods.stages import (
    ContextCache,
    StageLog,
    context_extras,
    dialect_name,
    dialect_notes,
)
from querybench.models.base import ChatRequest, Message
from querybench.tasks.databases import task_database

if TYPE_CHECKING:
    from querybench.models.base import ChatModel
    from querybench.tasks.model import Task

TIMEOUT = 30.0
MAX_ROWS = 100_000
_FEEDBACK_ROWS = 5

FILTER = (
    "You are an expert data analyst selecting the part of a database schema a {dialect} SQL "
    "query needs.\n"
    "Read the database description and the question. List every table the query will need "
    "(for joins too), one fully qualified name per line, in a single ```text code block, "
    "then nothing else."
)
GENERATE = (
    "You are an expert data analyst who writes {dialect} SQL.\n"
    "Write one SQL query that answers the question on the tables described. Use only the "
    "tables and columns shown. Reply with the query in a single ```sql code block.\n\n"
    "Dialect notes:\n{notes}"
)
REVISE = (
    "You are an expert data analyst who writes {dialect} SQL.\n"
    "A query written for the question was run on the database; the feedback is below. Find "
    "the mistake (a wrong table or column, a wrong value format, a join or filter that "
    "removes every row) and reply with the corrected query in a single ```sql code block.\n\n"
    "Dialect notes:\n{notes}"
)


@dataclass(frozen=True)
class Execution:
    status: str  # ok | empty | error | no_sql
    message: str = ""
    key: tuple[Any, ...] | None = None  # result key for the vote; None unless ok/empty

    @property
    def needs_revision(self) -> bool:
        return self.status != "ok"

    def feedback(self) -> str:
        if self.status == "error":
            return f"The query failed with this error:\n{self.message}"
        if self.status == "empty":
            return "The query ran but returned no rows."
        return "The reply held no SQL query."

    def to_json(self) -> dict[str, str]:
        return {"status": self.status, "message": self.message}


def kept_tables(reply: str, shown: tuple[str, ...], schema: DatabaseSchema) -> tuple[str, ...]:
    """Tables of `shown` named in `reply` (by full or short name, case-insensitive)."""
    short = {t.name: t.short_name for t in schema.tables}
    text = reply.lower()

    def named(name: str) -> bool:
        for form in {name, short.get(name, name)}:
            pattern = r"(?<![\w.])" + re.escape(form.lower()) + r"(?![\w])"
            if re.search(pattern, text):
                return True
        return False

    kept = tuple(name for name in shown if named(name))
    return kept or shown


def execute(database: Path, sql: str | None) -> Execution:
    from querybench.engines.pool import run_one

    if sql is None:
        return Execution("no_sql")
    outcome = run_one(database, sql, timeout=TIMEOUT, max_rows=MAX_ROWS)
    if outcome.result is None:
        return Execution("error", str(outcome.error))
    result = outcome.result
    key = result_key(len(result.columns), result.rows)
    if not result.rows:
        return Execution("empty", key=key)
    preview = "; ".join(repr(row) for row in result.rows[:_FEEDBACK_ROWS])
    return Execution("ok", f"{len(result.rows)} rows, first: {preview}", key)


def select(executions: list[Execution]) -> int:
    """Majority by execution result; ties, and no result at all, go to the earliest."""

    winner = majority_vote([e.key if e.status in ("ok", "empty") else None for e in executions])
    return winner if winner is not None else 0


class Chess:
    name = "chess"

    def __init__(self) -> None:
        self._contexts = ContextCache()

    def filter_messages(
        self, task: Task, budget: int | None, data_dir: Path | None
    ) -> tuple[tuple[Message, ...], tuple[str, ...], DatabaseSchema, str]:
        """The filtering prompt, the tables it shows, the schema, and the context's extras."""
        context, schema = self._contexts.build(task, budget, data_dir)
        messages = (
            Message("system", FILTER.format(dialect=dialect_name(task))),
            Message("user", f"Question: {task.question.strip()}", context.prompt),
        )
        return messages, context.tables, schema, context_extras(context, schema.dialect)

    def generate_messages(
        self, task: Task, schema: DatabaseSchema, tables: tuple[str, ...], extras: str
    ) -> tuple[Message, ...]:
        text = create_tables(schema, tables)
        if extras:
            text += "\n\n" + extras
        system = GENERATE.format(dialect=dialect_name(task), notes=dialect_notes(task))
        return (
            Message("system", system),
            Message("user", f"Question: {task.question.strip()}", text),
        )

    def revise_messages(
        self, generation: tuple[Message, ...], sql: str | None, execution: Execution, task: Task
    ) -> tuple[Message, ...]:
        system = REVISE.format(dialect=dialect_name(task), notes=dialect_notes(task))
        question = (
            f"Question: {task.question.strip()}\n\nQuery:\n```sql\n{sql or ''}\n```\n\n"
            f"Feedback: {execution.feedback()}"
        )
        return (Message("system", system), Message("user", question, generation[-1].context))

    async def solve(self, task: Task, model: ChatModel, settings: MethodSettings) -> MethodOutput:
        start = time.perf_counter()
        filtering, shown, schema, extras = await asyncio.to_thread(
            self.filter_messages, task, settings.context_budget, settings.data_dir
        )
        database = task_database(task, settings.data_dir)
        context_s = time.perf_counter() - start
        log = StageLog(model, task, settings.sampling)
        tables = kept_tables(await log.ask("schema_filtering", filtering), shown, schema)
        generation = self.generate_messages(task, schema, tables, extras)

        async def candidate(j: int) -> tuple[str, str | None, list[Execution]]:
            reply = await log.ask("generation", generation, candidate=j, sample=j)
            sql = extract_sql(reply)
            if database is None:
                return reply, sql, []
            first = await asyncio.to_thread(execute, database, sql)
            if not first.needs_revision:
                return reply, sql, [first]
            revision = self.revise_messages(generation, sql, first, task)
            revised = await log.ask("revision", revision, candidate=j, sample=j)
            new_sql = extract_sql(revised)
            if new_sql is None:
                return reply, sql, [first]
            return revised, new_sql, [first, await asyncio.to_thread(execute, database, new_sql)]

        finals = await asyncio.gather(*(candidate(j) for j in range(settings.n)))
        candidates = [log.candidate(j, reply, sql) for j, (reply, sql, _) in enumerate(finals)]
        runs = [executions for _, _, executions in finals]
        chosen = select([e[-1] for e in runs]) if database is not None else 0
        order = [chosen] + [j for j in range(len(candidates)) if j != chosen]
        extra = {
            "stages": log.to_json(),
            "tables": list(tables),
            "execution": [[e.to_json() for e in executions] for executions in runs],
            "selected": chosen,
            "candidate_order": order,
        }
        return MethodOutput(
            generation,
            ChatRequest(generation).prompt_hash(),
            tuple(candidates[j] for j in order),
            context_s,
            extra=extra,
        )


METHOD = Chess()
