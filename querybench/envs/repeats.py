"""Rollouts that submit the same query, scored once.

GRPO samples each prompt 8 to 16 times and many rollouts end on the same SQL. A reward is a
function of (database, gold SQL, answer SQL) on a read-only database, so an answer repeated
to the byte is run once and its outcome given to every copy (each its own `RewardOutcome`,
the metrics dict too). The key is the exact text the engine would run: two answers that differ
only in a comment or in spacing are two queries here (no SQL is rewritten to find repeats). A
query that calls `random()` / `randomblob()` is never shared: each copy draws its own rows.
Only work that is scored together is shared (one `score_many` call, or `ascore` calls in
flight at once), never a result kept from an earlier call.
"""

from __future__ import annotations

from collections.abc import Sequence

from querybench.envs.match import RewardOutcome
from querybench.envs.reward_child import WorkItem


def shareable(item: WorkItem) -> bool:
    """Whether a copy of `item` may take its outcome: it has a query (not one settled unrun,
    `match.bounded`), and one whose rows do not depend on a random draw."""
    sql = item[2]
    return isinstance(sql, str) and "random" not in sql.lower()


class Repeats:
    """The items to score, each repeat once (first-seen order), and for every item added the
    index of its outcome among them; built an item at a time, so that a caller can send the
    first items off while it reads the rest."""

    def __init__(self) -> None:
        self.unique: list[WorkItem] = []
        self.where: list[int] = []
        self._first: dict[WorkItem, int] = {}

    def add(self, item: WorkItem) -> None:
        index = self._first.get(item)
        if index is None:
            index = len(self.unique)
            self.unique.append(item)
            if shareable(item):
                self._first[item] = index
        self.where.append(index)


def unique_items(work: Sequence[WorkItem]) -> tuple[list[WorkItem], list[int]]:
    """The items to score (each repeat once, first-seen order) and, for every item of `work`,
    the index of its outcome among them."""
    repeats = Repeats()
    for item in work:
        repeats.add(item)
    return repeats.unique, repeats.where


def fan_out(outcomes: Sequence[RewardOutcome], where: Sequence[int]) -> list[RewardOutcome]:
    """The outcome of every item: `outcomes[where[i]]`, a copy for each repeat after the first."""
    given = [False] * len(outcomes)
    out = []
    for index in where:
        outcome = outcomes[index]
        out.append(copy_outcome(outcome) if given[index] else outcome)
        given[index] = True
    return out


def copy_outcome(outcome: RewardOutcome) -> RewardOutcome:
    """A `RewardOutcome` of its own (the verdict is frozen and shared; the metrics are not)."""
    return RewardOutcome(outcome.reward, outcome.verdict, dict(outcome.metrics))
