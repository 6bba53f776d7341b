"""Text-to-SQL methods: a task and a model in, candidate SQL queries (with raw replies) out.

    method = get_method("zero-shot")
    output = await method.solve(task, model, settings)
    output.candidates[0].sql

Each method module holds one method; `METHODS` maps the CLI name to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from querybench.errors import DataError

if TYPE_CHECKING:
    from querybench.models.base import ChatModel, Completion, Message, Sampling
    from querybench.tasks.model import Task

__all__ = [
    "METHODS",
    "Candidate",
    "Method",
    "MethodOutput",
    "MethodSettings",
    "get_method",
    "option_defaults",
]

METHODS = {
    "zero-shot": "querybench.methods.zero_shot",
    "dail-sql": "querybench.methods.dail_sql",
    "din-sql": "querybench.methods.din_sql",
    "chess": "querybench.methods.chess",
    "spider-agent": "querybench.methods.spider_agent",
    "tool-agent": "querybench.methods.tool_agent",
}


@dataclass(frozen=True)
class MethodSettings:
    sampling: Sampling
    n: int = 1  # candidates per task
    context_budget: int | None = None  # tokens for schema + documents; None: everything
    data_dir: Path | None = None
    examples: str | None = None  # few-shot pool (dail-sql): a benchmark name or a JSONL file
    run_dir: Path | None = None  # the run folder (the agent writes trajectories there)
    options: dict[str, Any] = field(default_factory=dict)  # method-specific (RunConfig.extra)


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

    method: Method = importlib.import_module(METHODS[name]).METHOD
    return method


def option_defaults(name: str) -> dict[str, Any]:
    """The method's own options (`MethodSettings.options`) and their defaults; none for most."""
    if name not in METHODS:
        return {}
    import importlib

    defaults: dict[str, Any] = getattr(importlib.import_module(METHODS[name]), "OPTIONS", {})
    return defaults
