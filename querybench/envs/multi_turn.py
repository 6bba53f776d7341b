"""The multi-turn text-to-SQL core: SQL tools over a read-only engine, a turn loop, the reward.

Independent of verifiers: `SQLToolbox` answers `execute_sql`, `list_tables`, `describe_table`
and `sample_rows` on one database, and `run_episode` drives any `ChatModel` (native tool
calls) until it calls `submit(sql)`, replies without a tool call (its first ```sql block then
counts as the submission) or runs out of turns. The reward is `SQLReward`'s execution match
of the submitted SQL, the same rule as the single-turn environment.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from querybench.engines import Engine
from querybench.engines.base import Closing, Result
from querybench.engines.isolated import connect_isolated
from querybench.engines.sqlite import single_statement
from querybench.envs.match import RewardOutcome, answer_sql
from querybench.envs.reward import SQLReward
from querybench.errors import EngineError, ResultTooLarge
from querybench.models import ChatModel, ChatRequest, Message, Tool, ToolCall


def _schema(**properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


_SQL = {"type": "string", "description": "one read-only SQLite query"}
_TABLE = {"type": "string", "description": "a table name from list_tables"}
TOOLS = (
    Tool("execute_sql", "Run one read-only query; returns the first rows.", _schema(sql=_SQL)),
    Tool("list_tables", "The database's tables.", _schema()),
    Tool("describe_table", "A table's columns and types.", _schema(table=_TABLE)),
    Tool("sample_rows", "A few rows of a table.", _schema(table=_TABLE)),
    Tool("submit", "Submit the final SQL answer; ends the episode.", _schema(sql=_SQL)),
)


class SQLToolbox(Closing):
    """The read-only tools on one database; every observation is row-capped and truncated."""

    def __init__(
        self,
        database: str | Path,
        *,
        max_rows: int = 20,
        max_chars: int = 4000,
        timeout: float = 30.0,
        sample: int = 3,
    ) -> None:
        self.engine: Engine = connect_isolated(database)  # a model's SQL: killable at its timeout
        self.max_rows, self.max_chars = max_rows, max_chars
        self.timeout, self.sample = timeout, sample

    def close(self) -> None:
        self.engine.close()

    def call(self, call: ToolCall) -> str:
        """The observation for one tool call (never raises: errors are told to the model)."""
        if call.arguments is None:
            return f"error: {call.error}"
        args = call.arguments
        try:
            if call.name == "execute_sql":
                return self.execute_sql(str(args.get("sql", "")))
            if call.name == "list_tables":
                return self.list_tables()
            if call.name == "describe_table":
                return self.describe_table(str(args.get("table", "")))
            if call.name == "sample_rows":
                return self.sample_rows(str(args.get("table", "")))
        except EngineError as exc:
            return self._cut(f"error: {exc}")
        return f"error: unknown tool {call.name!r}"

    def execute_sql(self, sql: str) -> str:
        try:
            result = self.engine.execute(sql, timeout=self.timeout, max_rows=self.max_rows)
            more = False
        except ResultTooLarge:  # show the first rows of a big result, through the same engine
            limited = f"SELECT * FROM ({single_statement(sql)}) LIMIT {self.max_rows}"
            result = self.engine.execute(limited, timeout=self.timeout, max_rows=self.max_rows)
            more = True
        return self._table(result, more)

    def list_tables(self) -> str:
        return self._cut("\n".join(t.name for t in self.engine.tables()) or "(no tables)")

    def describe_table(self, table: str) -> str:
        for t in self.engine.tables():
            if t.name.lower() == table.lower():
                return self._cut("\n".join(f"{c.name} {c.type}".rstrip() for c in t.columns))
        return f"error: no table {table!r}; call list_tables"

    def sample_rows(self, table: str) -> str:
        return self._table(self.engine.sample_rows(table, self.sample), False)

    def _table(self, result: Result, more: bool) -> str:
        lines = ["\t".join(result.columns)]
        lines += ["\t".join(_cell(v) for v in row) for row in result.rows]
        if more:
            lines.append(f"... (more than {self.max_rows} rows; first {self.max_rows} shown)")
        elif not result.rows:
            lines.append("(no rows)")
        return self._cut("\n".join(lines))

    def _cut(self, text: str) -> str:
        if len(text) <= self.max_chars:
            return text
        return text[: self.max_chars] + f"\n... (truncated at {self.max_chars} characters)"


def _cell(value: object) -> str:
    text = "NULL" if value is None else str(value)
    return text if len(text) <= 200 else text[:200] + "..."


@dataclass(frozen=True)
class Episode:
    """One multi-turn rollout: its reward, the SQL submitted (None: none), turns used."""

    outcome: RewardOutcome
    submitted: str | None
    turns: int
    messages: tuple[Message, ...]


async def run_episode(
    model: ChatModel,
    reward: SQLReward,
    database: str | Path,
    gold_sql: str,
    messages: tuple[Message, ...],
    *,
    max_turns: int = 10,
    toolbox: SQLToolbox | None = None,
) -> Episode:
    """Drive `model` with the tools until it submits or `max_turns` replies have been made."""
    own = toolbox is None
    box = toolbox if toolbox is not None else SQLToolbox(database)
    history = list(messages)
    submitted: str | None = None
    turns = 0
    try:
        while turns < max_turns and submitted is None:
            turns += 1
            request = ChatRequest(tuple(history), tools=TOOLS, tool_choice="auto")
            completion = await model.complete(request)
            history.append(completion.as_message())
            if not completion.tool_calls:  # a plain reply ends it; its ```sql block counts
                submitted = answer_sql(completion.text)
                break
            for call in completion.tool_calls:
                if call.name == "submit" and call.arguments is not None:
                    submitted = str(call.arguments.get("sql", ""))
                    break
                observation = await asyncio.to_thread(box.call, call)
                history.append(Message("tool", observation, tool_call_id=call.id))
    finally:
        if own:
            box.close()
    outcome = await asyncio.to_thread(reward.score_sql, database, gold_sql, submitted)
    return Episode(outcome, submitted, turns, tuple(history))
