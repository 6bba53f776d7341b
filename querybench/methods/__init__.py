"""Text-to-SQL methods: a task and a model in, candidate SQL queries (with raw replies) out.

    method = get_method("zero-shot")
    output = await method.solve(task, model, settings)
    output.candidates[0].sql

Each method module holds one method; `METHODS` maps the CLI name to it and to the type of its
own options (`MethodSettings.options`, typed per method; `NoOptions` for most).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from querybench.agent.options import AgentOptions
from querybench.declared import Declared
from querybench.errors import DataError

if TYPE_CHECKING:
    from querybench.models.base import ChatModel, Completion, Message, Sampling
    from querybench.tasks.model import Task

__all__ = [
    "METHODS",
    "Candidate",
    "Method",
    "MethodOptions",
    "MethodOutput",
    "MethodSettings",
    "NoOptions",
    "get_method",
    "options_type",
]


@dataclass(frozen=True)
class NoOptions(Declared):
    """The options of a method that has none of its own."""


MethodOptions = NoOptions | AgentOptions


@dataclass(frozen=True)
class _Entry:
    module: str
    options: type[MethodOptions] = NoOptions


METHODS = {
    "zero-shot": _Entry("querybench.methods.zero_shot"),
    "dail-sql": _Entry("querybench.methods.dail_sql"),
    "din-sql": _Entry("querybench.methods.din_sql"),
    "chess": _Entry("querybench.methods.chess"),
    "spider-agent": _Entry("querybench.methods.spider_agent", AgentOptions),
    "tool-agent": _Entry("querybench.methods.tool_agent", AgentOptions),
}


@dataclass(frozen=True)
class MethodSettings:
    sampling: Sampling
    n: int = 1  # candidates per task
    context_budget: int | None = None  # tokens for schema + documents; None: everything
    data_dir: Path | None = None
    examples: str | None = None  # few-shot pool (dail-sql): a benchmark name or a JSONL file
    run_dir: Path | None = None  # the run folder (the agent writes trajectories there)
    options: MethodOptions = field(default_factory=NoOptions)  # the method's own (typed)


@dataclass(frozen=True)
class Candidate:
    reply: str  # the model's raw reply, always kept
    sql: str | None  # extracted SQL; None when the reply holds none
    completion: Completion


@dataclass(frozen=True)
class MethodOutput:
    messages: tuple[Message, ...]  # the prompt as built (before any overflow truncation)
    prompt_hash: str
    candidates: tuple[Candidate, ...]
    context_s: float = 0.0  # time spent building the prompt
    extra: dict[str, Any] = field(default_factory=dict)


class Method(Protocol):
    name: str

    async def solve(self, task: Task, model: ChatModel, settings: MethodSettings) -> MethodOutput:
        """Raises `ModelError` when the model cannot answer, `QuerybenchError` for bad inputs."""
        ...


def get_method(name: str) -> Method:
    if name not in METHODS:
        raise DataError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}")
    import importlib

    method: Method = importlib.import_module(METHODS[name].module).METHOD
    return method


def options_type(name: str) -> type[MethodOptions]:
    """The type of the method's own options (`NoOptions` for an unknown name: `get_method`
    says what is wrong with it)."""
    entry = METHODS.get(name)
    return entry.options if entry is not None else NoOptions
