"""The agent loop, with the paper's rules, over either driver: the text protocol (`TEXT`,
Thought/Action parsed from the reply) or native tool calls (`agent/tool_calls.py`).

* at most `max_steps` model replies (30);
* the same action three times in a row ends the run (the agent is stuck; replies that differ
  only in their thought count as the same);
* each action is limited to `action_timeout` seconds (120), enforced by the engine for SQL and
  by the sandbox for shell commands; an action stopped there ends the run (`action_timeout`,
  the paper's rule), unless `continue_after_timeout` lets the model see the error and go on
  (what the official code does);
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
from stat import S_ISDIR, S_ISREG
from typing import TYPE_CHECKING, Any, Protocol

from querybench.agent import files
from querybench.agent.actions import Action, Fail, Terminate, action_name, to_json
from querybench.agent.options import AgentOptions
from querybench.agent.prompts import ACTION_SPACE, OBSERVATION, SYSTEM, UNREADABLE
from querybench.agent.protocol import parse_reply
from querybench.agent.status import AgentStatus
from querybench.agent.workspace import Workspace, readme
from querybench.context.tokens import count_tokens
from querybench.engines.registry import dialect_label
from querybench.errors import ProtocolError, UnsafePath
from querybench.models.base import ChatRequest, Completion, Message, Sampling
from querybench.models.tools import Tool

if TYPE_CHECKING:
    from querybench.models.base import ChatModel

START = "Begin: take your first step."


@dataclass(frozen=True)
class AgentConfig:
    max_steps: int = AgentOptions.max_steps
    repeat_limit: int = 3
    continue_after_timeout: bool = AgentOptions.continue_after_timeout
    max_observation_chars: int = AgentOptions.max_observation_chars
    context_tokens: int = AgentOptions.context_tokens
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
    status: AgentStatus
    answer: str | None = None  # Terminate's output
    final_sql: str | None = None
    steps: list[AgentStep] = field(default_factory=list)
    system_prompt: str = ""
    error: str | None = None  # what ended the run, when status is error or action_timeout

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
            "error": self.error,
            "steps": [vars(s) for s in self.steps],
        }


@dataclass(frozen=True)
class Read:
    """What a driver read in one reply: the action, or the error shown to the model instead."""

    thought: str
    action: Action | None
    error: str = ""


class Driver(Protocol):
    """How actions travel between the model and the loop."""

    tools: tuple[Tool, ...]  # offered as native tools (none for the text protocol)

    def system_prompt(self, workspace: Workspace, config: AgentConfig) -> str: ...

    def reply(self, completion: Completion) -> str:
        """The reply as the trajectory keeps it and the repeat rule compares it."""
        ...

    def read(self, completion: Completion) -> Read: ...

    def turn(self, completion: Completion, observation: str) -> tuple[Message, ...]:
        """The history entries of one step: the model's turn and the observation's."""
        ...


def prompt_fields(workspace: Workspace, config: AgentConfig) -> dict[str, object]:
    """What both drivers' system prompts are filled with."""
    task = workspace.task
    return {
        "dialect": dialect_label(task.engine),
        "readme": readme(task),
        "max_steps": config.max_steps,
    }


class TextProtocol:
    """The paper's driver: `Thought: …` then `Action: Name(…)` in the reply's text."""

    tools: tuple[Tool, ...] = ()

    def system_prompt(self, workspace: Workspace, config: AgentConfig) -> str:
        return SYSTEM.format(**prompt_fields(workspace, config), actions=ACTION_SPACE)

    def reply(self, completion: Completion) -> str:
        return completion.text

    def read(self, completion: Completion) -> Read:
        try:
            parsed = parse_reply(completion.text)
        except ProtocolError as exc:
            return Read("", None, UNREADABLE.format(error=exc))
        return Read(parsed.thought, parsed.action)

    def turn(self, completion: Completion, observation: str) -> tuple[Message, ...]:
        feedback = Message("user", OBSERVATION.format(observation=observation))
        return Message("assistant", completion.text), feedback


TEXT = TextProtocol()


def system_prompt(workspace: Workspace, config: AgentConfig) -> str:
    return TEXT.system_prompt(workspace, config)


def truncate_observation(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[observation truncated: {len(text) - limit} more characters]"


def _tokens(message: Message) -> int:
    calls = "".join(c.name + c.raw for c in message.tool_calls)
    return count_tokens(message.text + calls)


def fit_history(
    head: list[Message], turns: list[tuple[Message, ...]], budget: int
) -> tuple[tuple[Message, ...], int]:
    """The messages to send and how many of the oldest turns were dropped to fit `budget`."""
    sizes = [sum(_tokens(m) for m in turn) for turn in turns]
    total = sum(_tokens(m) for m in head) + sum(sizes)
    dropped = 0
    while total > budget and dropped < len(turns) - 1:
        total -= sizes[dropped]
        dropped += 1
    kept = [m for turn in turns[dropped:] for m in turn]
    return (*head, *kept), dropped


async def run_agent(
    workspace: Workspace,
    model: ChatModel,
    config: AgentConfig,
    sampling: Sampling,
    driver: Driver = TEXT,
    result: AgentResult | None = None,
) -> AgentResult:
    """Drive one task to its end; every failure of an action becomes an observation.

    `result` is filled as the run goes, so a caller that passes one keeps the steps taken
    when an exception (the model, a refused answer, a full workspace) ends the run."""
    sampling = config.sampling(sampling)
    system = driver.system_prompt(workspace, config)
    head = [Message("system", system), Message("user", START)]
    turns: list[tuple[Message, ...]] = []
    tool_choice = "auto" if driver.tools else None
    result = result if result is not None else AgentResult(status=AgentStatus.MAX_STEPS)
    result.status, result.system_prompt = AgentStatus.MAX_STEPS, system
    replies: list[str] = []
    for index in range(config.max_steps):
        messages, dropped = fit_history(head, turns, config.context_tokens)
        started = time.perf_counter()
        request = ChatRequest(messages, sampling, tools=driver.tools, tool_choice=tool_choice)
        completion = await model.complete(request, workspace.task)
        reply = driver.reply(completion)
        step = AgentStep(
            index,
            reply,
            model_s=time.perf_counter() - started,
            prompt_tokens=completion.usage.prompt_tokens,
            completion_tokens=completion.usage.completion_tokens,
            cost=completion.cost,
            dropped_steps=dropped,
        )
        result.steps.append(step)
        read = driver.read(completion)
        # The paper's rule: the same action three times in a row (an unreadable reply by its text).
        acted = to_json(read.action) if read.action is not None else None
        replies.append(repr(acted) if acted is not None else reply.strip())
        if len(replies) >= config.repeat_limit and len(set(replies[-config.repeat_limit :])) == 1:
            result.status = AgentStatus.REPEATED
            break
        step.thought = read.thought
        observation = read.error
        if read.action is not None:
            step.action = to_json(read.action)
            if isinstance(read.action, Terminate):
                result.status, result.answer = AgentStatus.TERMINATED, read.action.output
                result.final_sql = final_sql(workspace, read.action.output)
                break
            if isinstance(read.action, Fail):
                result.status = AgentStatus.FAILED
                break
            action_start = time.perf_counter()
            outcome = await asyncio.to_thread(workspace.act, read.action)
            step.action_s = time.perf_counter() - action_start
            observation = outcome.text
            if outcome.timed_out and not config.continue_after_timeout:
                step.observation = truncate_observation(observation, config.max_observation_chars)
                result.status = AgentStatus.ACTION_TIMEOUT
                result.error = (
                    f"{action_name(read.action)} ran past its time limit of "
                    f"{workspace.options.action_timeout:g} s and was stopped"
                )
                break
        step.observation = truncate_observation(observation, config.max_observation_chars)
        turns.append(driver.turn(completion, step.observation))
    return result


def final_sql(workspace: Workspace, output: str) -> str | None:
    """The SQL behind the answer: the `.sql` file named, else the query saved to the CSV named,
    else the last query that ran. An output that names no workspace file is a text answer;
    one that names a link, a special file or a file too large to read is refused
    (`UnsafePath`, which ends the task with the reason)."""
    ran = [(sql, saved) for sql, saved in workspace.sql_log if sql]
    try:
        named = files.parts(output)
        entry = files.status(workspace.path, output)
    except UnsafePath:
        named, entry = (), None  # not a workspace path: a text answer
    refused_kind = entry is not None and not (S_ISREG(entry.st_mode) or S_ISDIR(entry.st_mode))
    is_sql = entry is not None and S_ISREG(entry.st_mode) and named[-1].lower().endswith(".sql")
    if refused_kind or is_sql:
        try:
            text = workspace.read_answer(output)
        except (UnsafePath, OSError) as exc:
            raise UnsafePath(f"Terminate: {exc}") from None
        return text.strip() or None
    if named:
        for sql, saved in reversed(ran):
            if saved == named:
                return sql
    return ran[-1][0] if ran else None


__all__ = [
    "TEXT",
    "AgentConfig",
    "AgentResult",
    "AgentStatus",
    "AgentStep",
    "Driver",
    "Read",
    "TextProtocol",
    "action_name",
    "run_agent",
]
