"""What every chat model speaks: requests, completions, usage, and the errors a run records."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from querybench.models.tools import Tool, ToolCall, ToolChoice

if TYPE_CHECKING:
    from querybench.tasks.model import Task


@dataclass(frozen=True)
class Message:
    """One chat message. `context` is material placed before `content` in the same message
    (schema, documents): the part context-overflow truncation may cut from its beginning,
    while `content` (the question) is never cut. An assistant message may carry the
    `tool_calls` it made; a `tool` message answers the call `tool_call_id`."""

    role: str  # system | user | assistant | tool
    content: str
    context: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    @property
    def text(self) -> str:
        return f"{self.context}\n\n{self.content}" if self.context else self.content

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.text}
        if self.tool_calls:
            out["content"] = self.text or None  # the API's form for a call without text
            out["tool_calls"] = [c.to_api() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


@dataclass(frozen=True)
class Sampling:
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            k: v for k, v in asdict(self).items() if v is not None and k != "stop"
        }
        if self.stop:
            out["stop"] = list(self.stop)
        return out


@dataclass(frozen=True)
class ChatRequest:
    """A full request; `sample` tells apart the n draws of one prompt (and their cache keys).
    `tools` are offered to the model as native function tools, `tool_choice` steers them."""

    messages: tuple[Message, ...]
    sampling: Sampling = field(default_factory=Sampling)
    sample: int = 0
    tools: tuple[Tool, ...] = ()
    tool_choice: ToolChoice | None = None

    def with_messages(self, messages: tuple[Message, ...]) -> ChatRequest:
        return replace(self, messages=messages)

    def prompt_hash(self) -> str:
        """sha256 of the messages as sent (not of the sampling), the prompt's identity."""
        payload = json.dumps([m.to_api() for m in self.messages], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True)
class Truncation:
    """Context overflow handled: how much of the history was cut to fit the window."""

    dropped_messages: int
    cut_tokens: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True)
class Completion:
    """One reply with its accounting. `attempts` counts HTTP requests made (1 = no retry);
    a cached reply costs nothing and made no request."""

    text: str
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = False
    finish_reason: str | None = None
    truncation: Truncation | None = None
    retried_for: tuple[str, ...] = ()  # why each retry happened: "429", "500", "timeout", ...
    tool_calls: tuple[ToolCall, ...] = ()

    def as_message(self) -> Message:
        """The reply as the assistant turn of the history that continues the conversation."""
        return Message("assistant", self.text, tool_calls=self.tool_calls)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["usage"] = asdict(self.usage)
        return out


class ChatModel(Protocol):
    """Anything that answers chat requests. `task` is given for the labelled pipeline-check
    models (`oracle` reads its gold); endpoints ignore it."""

    name: str

    async def complete(self, request: ChatRequest, task: Task | None = None) -> Completion: ...

    async def aclose(self) -> None: ...
