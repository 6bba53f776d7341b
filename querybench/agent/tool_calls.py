"""The native tool-calling driver: the same actions, offered to the model as function tools.

    result = await run_agent(workspace, model, AgentConfig(), Sampling(), TOOLS)

Each action of `actions.ACTIONS` is one tool whose JSON Schema comes from the action's fields;
the call's arguments are read with the text protocol's rules (aliases, coercion), so both
drivers accept the same things. One call per step: when a reply makes several, the first runs
and the others are answered as not run, so the history stays valid for the API.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from typing import TYPE_CHECKING, Any

from querybench.agent.actions import ACTIONS
from querybench.agent.loop import AgentConfig, Read, prompt_fields
from querybench.agent.prompts import NO_TOOL_CALL, NOT_RUN, TOOL_SYSTEM
from querybench.agent.protocol import build_action
from querybench.agent.workspace import Workspace
from querybench.errors import ProtocolError
from querybench.models.base import Completion, Message
from querybench.models.tools import Tool

if TYPE_CHECKING:
    from querybench.models.tools import ToolCall

_TYPES = {bool: "boolean", int: "integer"}


def action_tool(name: str, cls: type[Any]) -> Tool:
    properties: dict[str, Any] = {}
    required = []
    for f in fields(cls):
        kind = _TYPES.get(type(f.default), "string")
        properties[f.name] = {"type": kind}
        if f.default is MISSING:
            required.append(f.name)
    description = " ".join((cls.__doc__ or "").split())
    schema = {"type": "object", "properties": properties, "required": required}
    return Tool(name, description, schema)


# `Fail` is also spelled `FAIL` in the text protocol; the tools offer the paper's spelling only.
ACTION_TOOLS = tuple(action_tool(name, cls) for name, cls in ACTIONS.items() if name != "Fail")


class ToolCalling:
    """The driver over native tool calls."""

    tools: tuple[Tool, ...] = ACTION_TOOLS

    def system_prompt(self, workspace: Workspace, config: AgentConfig) -> str:
        return TOOL_SYSTEM.format(**prompt_fields(workspace, config))

    def reply(self, completion: Completion) -> str:
        calls = [{"name": c.name, "arguments": c.raw} for c in completion.tool_calls]
        if not calls:
            return completion.text
        return json.dumps({"text": completion.text, "tool_calls": calls}, ensure_ascii=False)

    def read(self, completion: Completion) -> Read:
        thought = completion.text.strip()
        if not completion.tool_calls:
            return Read(thought, None, NO_TOOL_CALL)
        call = completion.tool_calls[0]
        if call.arguments is None:
            return Read(thought, None, f"ERROR: {call.error}")
        cls = ACTIONS.get(call.name)
        if cls is None:
            return Read(thought, None, f"ERROR: unknown tool {call.name!r}")
        try:
            return Read(thought, build_action(cls, call.name, call.arguments))
        except ProtocolError as exc:
            return Read(thought, None, f"ERROR: {exc}")

    def turn(self, completion: Completion, observation: str) -> tuple[Message, ...]:
        if not completion.tool_calls:
            return completion.as_message(), Message("user", observation)
        first, *rest = completion.tool_calls
        answers = [_answer(first, observation), *(_answer(c, NOT_RUN) for c in rest)]
        return completion.as_message(), *answers


def _answer(call: ToolCall, text: str) -> Message:
    return Message("tool", text, tool_call_id=call.id)


TOOLS = ToolCalling()
