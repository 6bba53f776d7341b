"""Labelled models shipped for pipeline checks: no HTTP, the same interface as an endpoint.

`oracle` replies with the task's gold SQL (so a run scores 100% when the harness is right);
`constant` replies one fixed SQL to every task. Their token counts are o200k counts of the
prompt and reply, so accounting paths are exercised too; their cost is 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from querybench.context.tokens import count_tokens
from querybench.errors import ModelError
from querybench.models.base import ChatRequest, Completion, Usage

if TYPE_CHECKING:
    from querybench.tasks.model import Task

LABELLED = ("oracle", "constant")
DEFAULT_CONSTANT_SQL = "SELECT 1"


class _Labelled:
    name = ""

    def answer(self, task: Task | None) -> str:
        raise NotImplementedError

    async def complete(self, request: ChatRequest, task: Task | None = None) -> Completion:
        sql = self.answer(task)
        text = f"```sql\n{sql}\n```"
        usage = Usage(sum(count_tokens(m.text) for m in request.messages), count_tokens(text))
        return Completion(text=text, usage=usage, cost=0.0, finish_reason="stop")

    async def aclose(self) -> None:
        return None


class OracleModel(_Labelled):
    """Replies with the gold SQL of the task: for checking the pipeline, never a result."""

    name = "oracle"

    def answer(self, task: Task | None) -> str:
        if task is None or not task.gold.sql:
            which = task.instance_id if task is not None else "this request"
            raise ModelError(f"oracle: no gold SQL for {which}")
        return task.gold.sql


class ConstantModel(_Labelled):
    """Replies the same SQL to every task (`--constant-sql`)."""

    name = "constant"

    def __init__(self, sql: str = DEFAULT_CONSTANT_SQL) -> None:
        self.sql = sql

    def answer(self, task: Task | None) -> str:
        return self.sql
