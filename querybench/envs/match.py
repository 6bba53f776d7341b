"""The reward rule itself: which SQL an answer submits and how its rows are judged.

Pure functions shared by the in-process `SQLReward`, its worker processes and the multi-turn
toolbox; `execution_match` is BIRD's `bird_verdict` / `bird_metrics`, never a second copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from querybench.engines.base import Result
from querybench.errors import EngineError
from querybench.evaluation.bird import bird_metrics, bird_verdict
from querybench.evaluation.sql_extract import extract_sql
from querybench.evaluation.verdict import Verdict

Outcome = Result | EngineError


@dataclass(frozen=True)
class RewardOutcome:
    """The reward (1 or 0), why, and the `error` / `trivial` / `gold_error` metrics."""

    reward: float
    verdict: Verdict
    metrics: dict[str, float] = field(default_factory=dict)


def answer_sql(completion: str) -> str | None:
    """The SQL of the answer's first fenced block (```sql preferred), None without a fence.

    Unlike `extract_sql` alone, text with no fence at all is not taken as raw SQL: the
    environment asks for a ```sql block, and prose must not be run as a query.
    """
    if "```" not in completion:
        return None
    return extract_sql(completion)


def execution_match(gold: Outcome, answer: Outcome | None) -> RewardOutcome:
    """The reward of one executed pair; `answer` is None when there was no SQL to run.

    1 when the answer's rows equal the gold's as sets (row order, duplicates and 1 vs 1.0 do
    not matter), else 0: no partial credit, so a runnable wrong query never beats an honest
    failure. A failed gold scores 0 with `gold_error`.
    """
    verdict = bird_verdict(gold, answer)
    return RewardOutcome(verdict.score, verdict, bird_metrics(gold, answer))
