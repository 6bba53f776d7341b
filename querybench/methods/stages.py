"""What the multi-stage methods share: the task's context and schema (read once per database),
one model call per stage with its raw reply kept, and accounting that charges every stage to
the candidate it led to.

The runner adds up the completions of a method's candidates, so a stage's tokens and cost must
live there: stages shared by every candidate (schema linking, classification, filtering) are
charged to the first candidate; `combine` folds a candidate's stages into one `Completion`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from querybench.context.builder import Context
from querybench.methods import Candidate
from querybench.methods.schema_cache import ContextCache
from querybench.methods.zero_shot import dialect_name, dialect_notes
from querybench.models.base import ChatRequest, Completion, Message, Sampling, Usage

if TYPE_CHECKING:
    from querybench.models.base import ChatModel
    from querybench.tasks.model import Task

__all__ = [
    "ContextCache",
    "Stage",
    "StageLog",
    "combine",
    "context_extras",
    "dialect_name",
    "dialect_notes",
]


@dataclass(frozen=True)
class Stage:
    name: str
    messages: tuple[Message, ...]
    completion: Completion
    candidate: int = 0  # whose accounting it joins

    @property
    def reply(self) -> str:
        return self.completion.text

    def to_json(self) -> dict[str, Any]:
        return {
            "stage": self.name,
            "candidate": self.candidate,
            "prompt_hash": ChatRequest(self.messages).prompt_hash(),
            "reply": self.reply,
        }


@dataclass
class StageLog:
    """Every call a method made for one task, in call order."""

    model: ChatModel
    task: Task
    sampling: Sampling
    stages: list[Stage] = field(default_factory=list)

    async def ask(
        self, name: str, messages: tuple[Message, ...], *, candidate: int = 0, sample: int = 0
    ) -> str:
        request = ChatRequest(messages, self.sampling, sample=sample)
        completion = await self.model.complete(request, self.task)
        self.stages.append(Stage(name, messages, completion, candidate))
        return completion.text

    def candidate(self, index: int, reply: str, sql: str | None) -> Candidate:
        """Candidate `index` with the final `reply`/`sql` and the accounting of its stages."""
        completions = [s.completion for s in self.stages if s.candidate == index]
        return Candidate(reply, sql, combine(completions, reply))

    def to_json(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self.stages]


def combine(completions: list[Completion], text: str) -> Completion:
    """Several calls as one: usage, cost, latency and attempts added; cached only if all were."""
    usage = Usage()
    for c in completions:
        usage = usage + c.usage
    truncations = [c.truncation for c in completions if c.truncation is not None]
    return Completion(
        text=text,
        usage=usage,
        cost=sum(c.cost for c in completions),
        latency_s=sum(c.latency_s for c in completions),
        attempts=sum(c.attempts for c in completions),
        cached=bool(completions) and all(c.cached for c in completions),
        finish_reason=completions[-1].finish_reason if completions else None,
        truncation=truncations[0] if truncations else None,
        retried_for=tuple(r for c in completions for r in c.retried_for),
    )


def context_extras(context: Context, dialect: str) -> str:
    """The external knowledge and dialect function sections of a built context (the methods
    that render the schema their own way still show these as built)."""
    markers = ["\n\n## External knowledge: ", f"\n\n## {dialect} functions that may help"]
    starts = [i for i in (context.prompt.find(m) for m in markers) if i >= 0]
    return context.prompt[min(starts) :].strip() if starts else ""
