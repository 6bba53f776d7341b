"""The oracle for the agent: drives the text protocol with the task's gold SQL.

Its first reply runs the gold query and saves the result; every later reply terminates with that
file. A run with it scores 100% exactly when the agent's parsing, workspace, final-SQL choice and
the scoring pipeline are right.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from querybench.agent.protocol import format_action
from querybench.context.tokens import count_tokens
from querybench.models.base import ChatRequest, Completion, Usage
from querybench.models.labelled import OracleModel

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
