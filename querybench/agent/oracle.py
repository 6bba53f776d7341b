"""The oracles for the agent: drive the text protocol (`AgentOracle`) or native tool calls
(`ToolCallOracle`) with the task's gold SQL.

The first reply runs the gold query and saves the result; every later reply terminates with that
file. A run with it scores 100% exactly when the agent's parsing, workspace, final-SQL choice and
the scoring pipeline are right.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from querybench.agent.protocol import format_action
from querybench.context.tokens import count_tokens
from querybench.models.base import ChatRequest, Completion, Usage
from querybench.models.labelled import OracleModel
from querybench.models.tools import ToolCall

if TYPE_CHECKING:
    from querybench.tasks.model import Task

RESULT = "result.csv"


class AgentOracle(OracleModel):
    name = "oracle"

    async def complete(self, request: ChatRequest, task: Task | None = None) -> Completion:
        acted = any(m.role == "assistant" for m in request.messages)
        if acted:
            action = format_action("Terminate", output=RESULT)
            text = f"Thought: The result is saved.\nAction: {action}"
        else:
            action = format_action(
                "ExecuteSQL", sql_query=self.answer(task), is_save=True, save_path=RESULT
            )
            text = f"Thought: I know the query.\nAction: {action}"
        usage = Usage(sum(count_tokens(m.text) for m in request.messages), count_tokens(text))
        return Completion(text=text, usage=usage, cost=0.0, finish_reason="stop")


class ToolCallOracle(OracleModel):
    name = "oracle"

    async def complete(self, request: ChatRequest, task: Task | None = None) -> Completion:
        acted = any(m.role == "assistant" for m in request.messages)
        arguments: dict[str, Any]
        if acted:
            name, arguments = "Terminate", {"output": RESULT}
        else:
            name = "ExecuteSQL"
            arguments = {"sql_query": self.answer(task), "is_save": True, "save_path": RESULT}
        raw = json.dumps(arguments, ensure_ascii=False)
        call = ToolCall(f"call_{len(request.messages)}", name, raw, arguments)
        usage = Usage(sum(count_tokens(m.text) for m in request.messages), count_tokens(raw))
        return Completion(
            text="", usage=usage, cost=0.0, finish_reason="tool_calls", tool_calls=(call,)
        )
