"""The agent loop over the text protocol, with the paper's rules.

* at most `max_steps` model replies (30);
* the same reply three times in a row ends the run (the agent is stuck);
* each action is limited to `action_timeout` seconds (120), enforced by the engine for SQL and
  by the sandbox for shell commands;
* observations longer than `max_observation_chars` are cut (the cut text is what the model saw
  and what the trajectory keeps);
* when the history passes `context_tokens`, the oldest steps are dropped first (the system
  prompt and the opening message stay);
* sampling defaults to temperature 1.0 and top_p 0.9.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from querybench.agent.actions import Fail, Terminate, action_name, to_json
from querybench.agent.prompts import ACTION_SPACE, OBSERVATION, SYSTEM, UNREADABLE
from querybench.agent.protocol import ProtocolError, parse_reply
from querybench.agent.workspace import Workspace, readme
from querybench.context.tokens import count_tokens
from querybench.errors import QuerybenchError
from querybench.models.base import ChatRequest, Message, Sampling

if TYPE_CHECKING:
    from querybench.models.base import ChatModel

START = "Begin: take your first step."
DIALECTS = {"sqlite": "SQLite", "duckdb": "DuckDB", "postgres": "PostgreSQL", "mysql": "MySQL"}


@dataclass(frozen=True)
class AgentConfig:
    max_steps: int = 30
    repeat_limit: int = 3
    max_observation_chars: int = 5000
    context_tokens: int = 100_000
    temperature: float = 1.0
    top_p: float = 0.9

    def sampling(self, given: Sampling) -> Sampling:
        """The run's sampling with the agent's defaults where the run left a value unset."""
        return replace(
            given,
            temperature=self.temperature if given.temperature is None else given.temperature,
            top_p=self.top_p if given.top_p is None else given.top_p,
        )


@dataclass
class AgentStep:
    index: int
    reply: str
    thought: str = ""
    action: dict[str, Any] | None = None
    observation: str = ""  # as sent to the model (truncated)
    model_s: float = 0.0
    action_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    dropped_steps: int = 0  # earlier steps cut from the history for this request


@dataclass
class AgentResult:
    status: str  # terminated | failed | max_steps | repeated
    answer: str | None = None  # Terminate's output
    final_sql: str | None = None
    steps: list[AgentStep] = field(default_factory=list)
    system_prompt: str = ""

    @property
    def prompt_tokens(self) -> int:
        return sum(s.prompt_tokens for s in self.steps)

    @property
    def completion_tokens(self) -> int:
        return sum(s.completion_tokens for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "answer": self.answer,
            "final_sql": self.final_sql,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": sum(s.cost for s in self.steps),
            "system_prompt": self.system_prompt,
            "steps": [vars(s) for s in self.steps],
        }


def system_prompt(workspace: Workspace, config: AgentConfig) -> str:
    task = workspace.task
    return SYSTEM.format(
        dialect=DIALECTS.get(task.engine, task.engine),
        readme=readme(task),
        max_steps=config.max_steps,
        actions=ACTION_SPACE,
    )


def truncate_observation(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[observation truncated: {len(text) - limit} more characters]"


def fit_history(
    head: list[Message], turns: list[tuple[Message, Message]], budget: int
) -> tuple[tuple[Message, ...], int]:
    """The messages to send and how many of the oldest turns were dropped to fit `budget`."""
    sizes = [count_tokens(a.text) + count_tokens(o.text) for a, o in turns]
    total = sum(count_tokens(m.text) for m in head) + sum(sizes)
    dropped = 0
    while total > budget and dropped < len(turns) - 1:
        total -= sizes[dropped]
        dropped += 1
    kept = [m for turn in turns[dropped:] for m in turn]
    return (*head, *kept), dropped


async def run_agent(
    workspace: Workspace, model: ChatModel, config: AgentConfig, sampling: Sampling
) -> AgentResult:
    """Drive one task to its end; every failure of an action becomes an observation."""
    sampling = config.sampling(sampling)
    system = system_prompt(workspace, config)
    head = [Message("system", system), Message("user", START)]
    turns: list[tuple[Message, Message]] = []
    result = AgentResult(status="max_steps", system_prompt=system)
    replies: list[str] = []
    for index in range(config.max_steps):
        messages, dropped = fit_history(head, turns, config.context_tokens)
        started = time.perf_counter()
        completion = await model.complete(ChatRequest(messages, sampling), workspace.task)
        step = AgentStep(
            index,
            completion.text,
            model_s=time.perf_counter() - started,
            prompt_tokens=completion.usage.prompt_tokens,
            completion_tokens=completion.usage.completion_tokens,
            cost=completion.cost,
            dropped_steps=dropped,
        )
        result.steps.append(step)
        replies.append(completion.text.strip())
        if len(replies) >= config.repeat_limit and len(set(replies[-config.repeat_limit :])) == 1:
            result.status = "repeated"
            break
        try:
            parsed = parse_reply(completion.text)
        except ProtocolError as exc:
            observation = UNREADABLE.format(error=exc)
        else:
            step.thought, step.action = parsed.thought, to_json(parsed.action)
            if isinstance(parsed.action, Terminate):
                result.status, result.answer = "terminated", parsed.action.output
                result.final_sql = final_sql(workspace, parsed.action.output)
                break
            if isinstance(parsed.action, Fail):
                result.status = "failed"
                break
            action_start = time.perf_counter()
            observation = await asyncio.to_thread(workspace.execute, parsed.action)
            step.action_s = time.perf_counter() - action_start
        step.observation = truncate_observation(observation, config.max_observation_chars)
        feedback = Message("user", OBSERVATION.format(observation=step.observation))
        turns.append((Message("assistant", completion.text), feedback))
    return result


def final_sql(workspace: Workspace, output: str) -> str | None:
    """The SQL behind the answer: the `.sql` file named, else the query saved to the CSV named,
    else the last query that ran."""
    ran = [(sql, path) for sql, path in workspace.sql_log if sql]
    try:
        path: Path | None = workspace.resolve(output)
    except QuerybenchError:
        path = None
    if path is not None and path.suffix.lower() == ".sql" and path.is_file():
        return path.read_text(encoding="utf-8").strip() or None
    if path is not None:
        for sql, saved in reversed(ran):
            if saved and workspace.resolve(saved) == path:
                return sql
    return ran[-1][0] if ran else None


__all__ = ["AgentConfig", "AgentResult", "AgentStep", "action_name", "run_agent"]
