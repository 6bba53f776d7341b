"""The reward rule itself: which SQL an answer submits and how its rows are judged.

Pure functions shared by the in-process `SQLReward`, its worker processes and the multi-turn
toolbox; `execution_match` is BIRD's `bird_verdict` / `bird_metrics`, never a second copy.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from querybench.engines import Engine
from querybench.engines.base import EngineBase, Result, feed_batches
from querybench.engines.memory import out_of_memory
from querybench.errors import AnswerTooLarge, EngineError
from querybench.evaluation.bird.evaluate import (
    StreamedMatch,
    StreamMatcher,
    bird_metrics,
    bird_verdict,
)
from querybench.evaluation.prediction_file import oversized_answer
from querybench.evaluation.sql_extract import sql_block
from querybench.evaluation.verdict import Verdict

Outcome = Result | EngineError
# An answer as the reward sees it: whole rows, or only what streaming them against the gold found.
AnswerOutcome = Result | StreamedMatch | EngineError
# An answer's SQL as the reward takes it: the SQL, None when there is none, or why it is not
# run (`bounded`), settled before it goes anywhere.
Submitted = str | AnswerTooLarge | None


@dataclass(frozen=True)
class RewardOutcome:
    """The reward (1 or 0), why, and the `error` / `trivial` / `gold_error` metrics."""

    reward: float
    verdict: Verdict
    metrics: dict[str, float] = field(default_factory=dict)


def answer_sql(completion: str) -> str | None:
    """The SQL of the answer's first ```sql block, None when it has none.

    The environments ask for a ```sql block, and only that is taken: unfenced prose, a bare
    ``` block and a block in another language are never run as a query (`sql_block`).
    """
    return sql_block(completion)


def bounded(text: str | None) -> Submitted:
    """`text` (an answer's SQL, or the completion it comes from), or why it is not run: past
    the bound of one answer of a predictions file (`prediction_file.MAX_ANSWER_BYTES`, 16 MiB)
    it is that answer's `AnswerTooLarge`, settled here, so it is never sent to a child,
    extracted or run, and the rest of its batch is scored as usual."""
    if text is None:
        return None
    why = oversized_answer(text)
    return text if why is None else AnswerTooLarge(f"{why}: not run")


def submitted(completion: str) -> Submitted:
    """The SQL a completion submits (`answer_sql`) once the completion is within the bound of
    one answer (`bounded`)."""
    checked = bounded(completion)
    return checked if not isinstance(checked, str) else answer_sql(checked)


def run_answer(
    engine: Engine,
    sql: str,
    gold: Outcome,
    *,
    timeout: float | None,
    max_rows: int | None,
    gold_rows: AbstractSet[tuple[Any, ...]] | None = None,
) -> AnswerOutcome:
    """The answer's outcome, streamed against the gold rows where the engine can stream.

    On an engine that streams (`spec.capabilities.streams`: SQLite, directly or in a
    `QueryProcess`) the answer's rows are compared batch by batch (`bird_stream_match`), so a
    huge wrong result stops at its first foreign row and memory holds one batch plus the gold
    set; `max_rows` still caps how many rows a result made only of gold rows may run to. Other
    engines, and a failed gold (whose score never depends on the answer's rows), return whole
    results. Errors come back as values. `gold_rows` is the set of `gold`'s rows when the
    caller keeps it (one gold, many answers).
    """
    matcher = None
    try:
        if engine.spec.capabilities.streams and isinstance(gold, Result):
            matcher = StreamMatcher(gold.rows if gold_rows is None else gold_rows)
            if isinstance(engine, EngineBase):  # pushed: no generator per batch
                engine.feed_batches(sql, matcher.feed, timeout=timeout, max_rows=max_rows)
            else:
                batches = engine.execute_batches(sql, timeout=timeout, max_rows=max_rows)
                feed_batches(batches, matcher.feed)
            return matcher.result()
        return engine.execute(sql, timeout=timeout, max_rows=max_rows)
    except EngineError as exc:
        if matcher is not None and matcher.mismatched:  # cut short after a mismatch
            return matcher.result()
        return exc
    except MemoryError:  # past a query child's memory cap, in this process's own work
        return out_of_memory("comparing the answer's rows")
    except Exception as exc:  # a bug on one answer must not take the others down
        return EngineError(f"unexpected {type(exc).__name__}: {exc}")


def execution_match(gold: Outcome, answer: AnswerOutcome | None) -> RewardOutcome:
    """The reward of one executed pair; `answer` is None when there was no SQL to run.

    1 when the answer's rows equal the gold's as sets (row order, duplicates and 1 vs 1.0 do
    not matter), else 0: no partial credit, so a runnable wrong query never beats an honest
    failure. A failed gold scores 0 with `gold_error`.
    """
    verdict, metrics = judged(gold, answer)
    return RewardOutcome(verdict.score, verdict, metrics)


# A reward's verdict (whose score is the reward) and its metrics.
Judged = tuple[Verdict, dict[str, float]]


def judged(gold: Outcome, answer: AnswerOutcome | None) -> Judged:
    """`execution_match`'s verdict and metrics, without the `RewardOutcome` around them (the
    reward's child sends these, packed, and the caller makes the outcome)."""
    return bird_verdict(gold, answer), bird_metrics(gold, answer)
