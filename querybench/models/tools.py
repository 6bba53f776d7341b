"""Native tool calling: the function tools a request offers and the calls a reply makes.

    tool = Tool("execute_sql", "Run a query", {"type": "object", "properties": {...}})
    request = ChatRequest(messages, tools=(tool,), tool_choice="auto")
    for call in (await model.complete(request)).tool_calls:
        call.arguments if call.error is None else call.error

A call whose arguments are not a JSON object keeps its raw text and an `error`, so the caller
(an agent loop) can tell the model what was wrong instead of the run crashing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from querybench import json_input
from querybench.errors import MalformedToolCall

ToolChoice = str | dict[str, Any]  # "auto" | "none" | "required" | {"type": "function", ...}


@dataclass(frozen=True)
class Tool:
    """One function tool in the OpenAI schema; `parameters` is its JSON Schema."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_api(self) -> dict[str, Any]:
        function: dict[str, Any] = {"name": self.name, "parameters": self.parameters}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}


@dataclass(frozen=True)
class ToolCall:
    """A call the model asked for: `arguments` parsed from `raw`, or None with `error` set."""

    id: str
    name: str
    raw: str  # the arguments string exactly as the server sent it
    arguments: dict[str, Any] | None = None
    error: str | None = None

    @classmethod
    def parse(cls, id: str, name: str, raw: str) -> ToolCall:
        try:
            value = json_input.loads(raw) if raw.strip() else {}
        except ValueError as exc:  # nested past the reader, too (`json_input`)
            return cls(id, name, raw, None, f"arguments of {name!r} are not valid JSON: {exc}")
        if not isinstance(value, dict):
            kind = type(value).__name__
            return cls(
                id, name, raw, None, f"arguments of {name!r} are a JSON {kind}, not an object"
            )
        return cls(id, name, raw, value)

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.raw},
        }


def tool_calls_from_api(items: Any) -> tuple[ToolCall, ...]:
    """The `message.tool_calls` of a chat completion (absent or null: none)."""
    if not items:
        return ()
    if not isinstance(items, list):
        raise MalformedToolCall(f"tool_calls is not a list: {str(items)[:120]}")
    calls = []
    for index, item in enumerate(items):
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            raise MalformedToolCall(f"tool call {index} has no function name: {str(item)[:120]}")
        raw = function.get("arguments") if isinstance(function, dict) else None
        if isinstance(raw, dict):  # a few servers send the object itself
            raw = json.dumps(raw, ensure_ascii=False)
        call_id = item.get("id") if isinstance(item, dict) else None
        calls.append(ToolCall.parse(str(call_id or f"call_{index}"), name, str(raw or "")))
    return tuple(calls)
