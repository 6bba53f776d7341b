"""DIN-SQL (Pourreza & Rafiei, 2023): decomposed in-context generation, one call per stage.

Every prompt is a system message (the stage's instruction, from the templates below) and a
user message whose truncatable context is the schema in DIN-SQL's format (`Table t, columns =
[*,a,b]` and `Foreign_keys = [...]`, over the tables the context builder fitted in the budget,
plus any external knowledge and dialect functions) and whose content is the stage's question.

1. `schema_linking` (`LINKING`): the tables, columns and values the question needs, read from
   the last `Schema_links: [...]` of the reply (the whole reply when there is none);
2. `classification` (`CLASSIFY`): EASY / NON-NESTED / NESTED, the last label in the reply; a
   reply without a label is read as SQL and classified by its shape (a nested SELECT or WITH:
   NESTED, a JOIN: NON-NESTED, else EASY) — so the oracle's SQL reply classifies itself;
3. `generation` (`GENERATE[label]`): EASY straight to SQL, NON-NESTED through the joins it
   needs, NESTED through sub-questions answered by sub-queries or CTEs;
4. `self_correction` (`CORRECT`): DIN-SQL's generic fix-it prompt over the generated SQL; its
   SQL replaces the generated one when the reply holds any.

Stages 1 and 2 run once per task; 3 and 4 once per candidate (`n`). Four calls per task at n = 1.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from querybench.evaluation.sql_extract import extract_sql
from querybench.methods import MethodOutput, MethodSettings
from querybench.methods.schema_text import din_tables
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

EASY, NON_NESTED, NESTED = "EASY", "NON-NESTED", "NESTED"

LINKING = (
    "You are an expert data analyst who writes {dialect} SQL.\n"
    "Find the schema links for the question: the tables and columns it needs, and the "
    "literal values it mentions. Think step by step, then end with one line\n"
    "Schema_links: [table.column, table.column, ..., value]"
)
CLASSIFY = (
    "For the given question, classify it as EASY, NON-NESTED, or NESTED based on nested "
    "queries and JOIN.\n"
    "if need nested queries: predict NESTED\n"
    "elif need JOIN and don't need nested queries: predict NON-NESTED\n"
    "elif don't need JOIN and don't need nested queries: predict EASY\n"
    'End with one line: Label: "EASY", Label: "NON-NESTED" or Label: "NESTED".'
)
_GENERATE_TAIL = (
    "\nWrite {dialect} SQL and use only the tables and columns shown. End with the query in a "
    "single ```sql code block.\n\nDialect notes:\n{notes}"
)
GENERATE = {
    EASY: "Use the schema links to generate the SQL query for the question." + _GENERATE_TAIL,
    NON_NESTED: (
        "Use the schema links and the foreign keys to generate the SQL query for the question. "
        "First name the tables to join and the join conditions (an intermediate "
        "representation), then write the SQL." + _GENERATE_TAIL
    ),
    NESTED: (
        "The question needs nested queries. First decompose it into sub-questions, answer "
        "each with a sub-query (a common table expression for each is welcome), then combine "
        "them into one SQL query that answers the question." + _GENERATE_TAIL
    ),
}
CORRECT = (
    "#### For the given question, use the provided tables, columns, foreign keys, and primary "
    "keys to fix the given {dialect} SQL QUERY for any issues. If there are any problems, fix "
    "it. If there are no issues, return the {dialect} SQL QUERY as is. Reply with the query in "
    "a single ```sql code block.\n"
    "#### Use the following instructions for fixing the SQL QUERY:\n"
    "1) Use the database values that are explicitly mentioned in the question.\n"
    "2) Pay attention to the columns that are used for the JOIN by using the Foreign_keys.\n"
    "3) Use DESC and DISTINCT when needed.\n"
    "4) Pay attention to the columns that are used for the GROUP BY statement.\n"
    "5) Pay attention to the columns that are used for the SELECT statement.\n"
    "6) Only change the GROUP BY clause when necessary (Avoid redundant columns in GROUP BY).\n"
    "7) Use GROUP BY on one column only."
)

_LINKS = re.compile(r"Schema_links:\s*(\[.*?\])", re.DOTALL | re.IGNORECASE)
_LABEL = re.compile(r"\b(NON-NESTED|NESTED|EASY)\b", re.IGNORECASE)


def parse_links(reply: str) -> str:
    found = _LINKS.findall(reply)
    return " ".join(found[-1].split()) if found else reply.strip()


def parse_label(reply: str) -> str:
    labels = _LABEL.findall(reply)
    if labels:
        return str(labels[-1]).upper()
    return sql_shape(extract_sql(reply) or "")


def sql_shape(sql: str) -> str:
    """DIN-SQL's classes read from an SQL query itself."""
    text = sql.upper()
    if len(re.findall(r"\bSELECT\b", text)) > 1 or re.match(r"\s*WITH\b", text):
        return NESTED
    return NON_NESTED if re.search(r"\bJOIN\b", text) else EASY


class DinSql:
    name = "din-sql"

    def __init__(self) -> None:
        self._contexts = ContextCache()

    def schema_text(self, task: Task, budget: int | None, data_dir: Path | None) -> str:
        context, schema = self._contexts.build(task, budget, data_dir)
        extras = context_extras(context, schema.dialect)
        text = din_tables(schema, context.tables)
        return f"{text}\n\n{extras}" if extras else text

    def linking_messages(self, task: Task, schema: str) -> tuple[Message, ...]:
        question = f'Q: "{task.question.strip()}"\nA: Let\'s think step by step.'
        return (
            Message("system", LINKING.format(dialect=dialect_name(task))),
            Message("user", question, schema),
        )

    def classify_messages(self, task: Task, schema: str, links: str) -> tuple[Message, ...]:
        question = (
            f'Q: "{task.question.strip()}"\nschema_links: {links}\nA: Let\'s think step by step.'
        )
        return (Message("system", CLASSIFY), Message("user", question, schema))

    def generate_messages(
        self, task: Task, schema: str, links: str, label: str
    ) -> tuple[Message, ...]:
        system = GENERATE[label].format(dialect=dialect_name(task), notes=dialect_notes(task))
        question = (
            f'Q: "{task.question.strip()}"\nSchema_links: {links}\nA: Let\'s think step by step.'
        )
        return (Message("system", system), Message("user", question, schema))

    def correct_messages(self, task: Task, schema: str, sql: str) -> tuple[Message, ...]:
        dialect = dialect_name(task)
        question = (
            f"#### Question: {task.question.strip()}\n#### {dialect} SQL QUERY\n{sql}\n"
            f"#### {dialect} FIXED SQL QUERY"
        )
        return (
            Message("system", CORRECT.format(dialect=dialect)),
            Message("user", question, schema),
        )

    async def solve(self, task: Task, model: ChatModel, settings: MethodSettings) -> MethodOutput:
        start = time.perf_counter()
        schema = await asyncio.to_thread(
            self.schema_text, task, settings.context_budget, settings.data_dir
        )
        context_s = time.perf_counter() - start
        log = StageLog(model, task, settings.sampling)
        links = parse_links(await log.ask("schema_linking", self.linking_messages(task, schema)))
        label = parse_label(
            await log.ask("classification", self.classify_messages(task, schema, links))
        )
        generation = self.generate_messages(task, schema, links, label)

        async def candidate(j: int) -> tuple[str, str | None]:
            reply = await log.ask("generation", generation, candidate=j, sample=j)
            sql = extract_sql(reply)
            if sql is None:
                return reply, None
            fixed = await log.ask(
                "self_correction", self.correct_messages(task, schema, sql), candidate=j, sample=j
            )
            return fixed, extract_sql(fixed) or sql

        finals = await asyncio.gather(*(candidate(j) for j in range(settings.n)))
        candidates = tuple(log.candidate(j, r, s) for j, (r, s) in enumerate(finals))
        extra = {"stages": log.to_json(), "schema_links": links, "difficulty_class": label}
        return MethodOutput(
            generation, ChatRequest(generation).prompt_hash(), candidates, context_s, extra=extra
        )


METHOD = DinSql()
