"""DAIL-SQL (Gao et al., 2023): code-representation prompt with question-SQL examples chosen by
masked question similarity and by SQL skeleton similarity to a preliminary prediction.

The prompt is two messages:

* system: the instruction ("complete ... SQL query only") and the dialect notes;
* user: as truncatable context, `/* Some SQL examples are provided based on similar problems: */`
  then each example as `/* Answer the following: <question> */` and its SQL (DAIL organisation:
  question and SQL, no schema), then `/* Given the following database schema: */` and the
  tables the context builder fitted in the budget as CREATE TABLE statements (descriptions and
  sampled values as comments), then any external knowledge / dialect functions; as content,
  `/* Answer the following: <question> */`.

Calls per task, with a pool (`MethodSettings.examples`):

1. `preliminary`: examples chosen by masked question similarity alone; its SQL is the
   preliminary prediction whose skeleton drives the final choice;
2. `generation` (one call per candidate): examples re-chosen with the skeleton. When the
   re-chosen examples are the preliminary ones, the prompt is the same and candidate 0 is the
   preliminary reply (no second call).

Without a pool it is one `generation` call per candidate with no examples. The oracle model
answers every call with the gold SQL, which is a valid preliminary prediction.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

from querybench.context.rank import terms
from querybench.context.schema import DatabaseSchema
from querybench.evaluation.sql_extract import extract_sql
from querybench.methods import MethodOutput, MethodSettings
from querybench.methods.examples import Example, get_pool
from querybench.methods.schema_text import create_tables
from querybench.methods.stages import (
    ContextCache,
    StageLog,
    context_extras,
    dialect_name,
    dialect_notes,
)
from querybench.models.base import ChatRequest, Message

if TYPE_CHECKING:
    from querybench.models.base import ChatModel
    from querybench.tasks.model import Task

SHOTS = 5

SYSTEM = (
    "You are an expert data analyst who writes {dialect} SQL.\n"
    "/* Complete {dialect} SQL query only and with no explanation. Reply with the query in a "
    "single ```sql code block. */\n\n"
    "Dialect notes:\n{notes}"
)
EXAMPLES_HEAD = "/* Some SQL examples are provided based on similar problems: */"
EXAMPLE = "/* Answer the following: {question} */\n{sql}"
SCHEMA_HEAD = "/* Given the following database schema: */"
EXTRAS_HEAD = "/* Additional information: */"
QUESTION = "/* Answer the following: {question} */"


def schema_domain(schema: DatabaseSchema) -> set[str]:
    """Terms of every table and column name: the words masked in the task's question."""
    out: set[str] = set()
    for table in schema.tables:
        out.update(terms(table.short_name))
        for column in table.columns:
            out.update(terms(column.name))
    return out


class DailSql:
    name = "dail-sql"

    def __init__(self, shots: int = SHOTS) -> None:
        self.shots = shots
        self._contexts = ContextCache()

    def representation(
        self, task: Task, budget: int | None, data_dir: Path | None
    ) -> tuple[str, set[str]]:
        """The schema part of the prompt (code representation + extras) and the domain terms."""
        context, schema = self._contexts.build(task, budget, data_dir)
        parts = [SCHEMA_HEAD, create_tables(schema, context.tables)]
        extras = context_extras(context, schema.dialect)
        if extras:
            parts += [EXTRAS_HEAD, extras]
        return "\n".join(parts), schema_domain(schema)

    def messages(
        self, task: Task, schema_text: str, examples: list[Example]
    ) -> tuple[Message, ...]:
        """The documented prompt for `task` with `examples` (the golden-file test pins it)."""
        system = SYSTEM.format(dialect=dialect_name(task), notes=dialect_notes(task))
        blocks = []
        if examples:
            shots = [
                EXAMPLE.format(question=e.question.strip(), sql=e.sql.strip()) for e in examples
            ]
            blocks.append(EXAMPLES_HEAD + "\n" + "\n\n".join(shots))
        blocks.append(schema_text)
        return (
            Message("system", system),
            Message("user", QUESTION.format(question=task.question.strip()), "\n\n".join(blocks)),
        )

    async def solve(self, task: Task, model: ChatModel, settings: MethodSettings) -> MethodOutput:
        start = time.perf_counter()
        schema_text, domain = await asyncio.to_thread(
            self.representation, task, settings.context_budget, settings.data_dir
        )
        pool = (
            await asyncio.to_thread(get_pool, settings.examples, settings.data_dir)
            if settings.examples
            else None
        )
        context_s = time.perf_counter() - start
        log = StageLog(model, task, settings.sampling)
        exclude = f"{task.benchmark}:{task.instance_id}"
        chosen: list[Example] = []
        preliminary: tuple[Message, ...] | None = None
        first_reply: str | None = None
        if pool is not None:
            chosen = pool.select(task.question, domain, self.shots, exclude=exclude)
            preliminary = self.messages(task, schema_text, chosen)
            first_reply = await log.ask("preliminary", preliminary)
            draft = extract_sql(first_reply)
            if draft is not None:
                chosen = pool.select(
                    task.question, domain, self.shots, exclude=exclude, preliminary_sql=draft
                )
        final = self.messages(task, schema_text, chosen)

        async def generate(j: int) -> str:
            if j == 0 and final == preliminary and first_reply is not None:
                return first_reply
            return await log.ask("generation", final, candidate=j, sample=j)

        replies = await asyncio.gather(*(generate(j) for j in range(settings.n)))
        candidates = tuple(
            log.candidate(j, reply, extract_sql(reply)) for j, reply in enumerate(replies)
        )
        extra = {"stages": log.to_json(), "examples": [e.key or e.question for e in chosen]}
        return MethodOutput(
            final, ChatRequest(final).prompt_hash(), candidates, context_s, extra=extra
        )


METHOD = DailSql()
