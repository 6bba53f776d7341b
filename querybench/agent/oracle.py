"""The oracles for the agent: drive the text protocol (`AgentOracle`) or native tool calls
(`ToolCallOracle`) with the task's gold, through the actions a model would use.

* A task with gold SQL: the first reply runs it and saves the result (`ExecuteSQL`), the next
  terminates with that file.
* An agentic Spider 2.0 (`spider2`) task without gold SQL: the gold table(s) are written with
  `CreateFile` (a `files` task writes each of them), then `Terminate` names them; a task whose
  gold is text only terminates with the first gold string or number.

A run with it scores 100% exactly when the agent's parsing, workspace, answer recording and
the scoring pipeline are right.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from querybench.agent.protocol import format_action
from querybench.benchmarks import is_agentic
from querybench.context.tokens import count_tokens
from querybench.errors import ModelError
from querybench.models.base import ChatRequest, Completion, Usage
from querybench.models.labelled import OracleModel
from querybench.models.tools import ToolCall
from querybench.tasks.input_files import read_text

if TYPE_CHECKING:
    from querybench.tasks.model import Task

RESULT = "result.csv"
Step = tuple[str, dict[str, Any]]


def oracle_plan(task: Task | None, oracle: OracleModel) -> list[Step]:
    """The actions, in order, that reproduce the task's gold."""
    if task is not None and is_agentic(task.benchmark) and not task.gold.sql:
        return _agentic_plan(task)
    return [
        ("ExecuteSQL", {"sql_query": oracle.answer(task), "is_save": True, "save_path": RESULT}),
        ("Terminate", {"output": RESULT}),
    ]


def _agentic_plan(task: Task) -> list[Step]:
    checks = task.gold.eval_params.get("evaluation", [])
    folder = {Path(p).name: Path(p) for p in task.gold.result_files}
    for check in checks:
        func, gold = check["func"], check["parameters"].get("gold")
        names = [gold] if isinstance(gold, str) else gold if isinstance(gold, list) else []
        if func == "table_match" and names and names[0] in folder:
            text = read_text(folder[names[0]], "gold result")
            return [_write(task, RESULT, text), ("Terminate", {"output": RESULT})]
        if func == "tables_match" and names and all(n in folder for n in names):
            writes = [_write(task, n, read_text(folder[n], "gold result")) for n in names]
            return [*writes, ("Terminate", {"output": ", ".join(names)})]
    for check in checks:
        gold = check["parameters"].get("gold")
        if check["func"] in ("string_match", "number_match") and gold not in (None, []):
            first = gold[0] if isinstance(gold, list) else gold
            return [("Terminate", {"output": str(first)})]
    raise ModelError(f"oracle: no gold here for {task.instance_id}")


def _write(task: Task, name: str, text: str) -> Step:
    """`EditFile` over an answer template the task folder already holds, else `CreateFile`."""
    example = task.extra.get("example_dir")
    exists = bool(example) and (Path(str(example)) / name).is_file()
    return ("EditFile" if exists else "CreateFile", {"filepath": name, "code": text})


def _step(request: ChatRequest, task: Task | None, oracle: OracleModel) -> Step:
    plan = oracle_plan(task, oracle)
    done = sum(m.role == "assistant" for m in request.messages)
    return plan[min(done, len(plan) - 1)]


class AgentOracle(OracleModel):
    name = "oracle"

    async def complete(self, request: ChatRequest, task: Task | None = None) -> Completion:
        name, arguments = _step(request, task, self)
        text = f"Thought: I know the answer.\nAction: {format_action(name, **arguments)}"
        usage = Usage(sum(count_tokens(m.text) for m in request.messages), count_tokens(text))
        return Completion(text=text, usage=usage, cost=0.0, finish_reason="stop")


class ToolCallOracle(OracleModel):
    name = "oracle"

    async def complete(self, request: ChatRequest, task: Task | None = None) -> Completion:
        name, arguments = _step(request, task, self)
        raw = json.dumps(arguments, ensure_ascii=False)
        call = ToolCall(f"call_{len(request.messages)}", name, raw, arguments)
        usage = Usage(sum(count_tokens(m.text) for m in request.messages), count_tokens(raw))
        return Completion(
            text="", usage=usage, cost=0.0, finish_reason="tool_calls", tool_calls=(call,)
        )
