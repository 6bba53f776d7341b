"""BIRD mini-dev's two extra metrics, Soft-F1 and R-VES, and its by-difficulty averages.

Both reproduce the official mini-dev evaluation (bird-bench/mini_dev, `evaluation/`, commit
4d970a9): `evaluation_f1.py` for Soft-F1, `evaluation_ves.py` for R-VES, `evaluation_utils.py`
for the table. Written from reading those scripts, not copied; where they differ from the
mini-dev README, the scripts win (see `soft_f1`).

Per instance, `soft_f1` is in [0, 1] and `r_ves` is sqrt(reward) for reward in
{0, 0.25, 0.5, 0.75, 1, 1.25}, so the mean of either times 100 is the official score.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from querybench.data.layout import BIRD_DIFFICULTIES as DIFFICULTIES

if TYPE_CHECKING:
    from querybench.engines.base import Engine

Row = tuple[Any, ...]


class BirdMetric(StrEnum):
    """The official mini-dev metrics, by the names `--metrics` takes."""

    EX = "ex"
    SOFT_F1 = "soft_f1"
    R_VES = "r_ves"

    @property
    def label(self) -> str:
        """The name the official scripts print."""
        return {"ex": "EX", "soft_f1": "Soft-F1", "r_ves": "R-VES"}[self.value]


def parse_metrics(text: str) -> tuple[BirdMetric, ...]:
    """`"ex,soft_f1"` -> the metrics in that order; ValueError names an unknown one."""
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError("no metric named; choose from ex, soft_f1, r_ves")
    known = {m.value: m for m in BirdMetric}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown metric {unknown[0]!r}; choose from ex, soft_f1, r_ves")
    return tuple(dict.fromkeys(known[n] for n in names))


# --- Soft-F1 ------------------------------------------------------------------------------


def _cell_counts(pred_row: Row, gold_row: Row) -> tuple[float, float, float]:
    """(matched, prediction-only, gold-only) for one pair of rows, each over the gold width.

    A cell matches when its value occurs anywhere in the other row (Python `in`, so column
    order is ignored, 1 == 1.0, and NULL matches NULL); a repeated predicted value counts
    each time. The official script has no case for a zero-width gold row (it divides by zero
    and the instance scores 0); none can come from a SELECT.
    """
    width = len(gold_row)
    matched = sum(1 for value in pred_row if value in gold_row)
    pred_only = len(pred_row) - matched
    gold_only = sum(1 for value in gold_row if value not in pred_row)
    return matched / width, pred_only / width, gold_only / width


def soft_f1(pred_rows: Sequence[Row], gold_rows: Sequence[Row]) -> float:
    """The official Soft-F1 of one prediction (`calculate_f1_score` of `evaluation_f1.py`).

    Duplicate rows are dropped, first occurrence kept, and the rows are then paired **by
    position**: the i-th distinct predicted row against the i-th distinct gold row (so, unlike
    EX, row order matters). Unpaired gold rows count 1 gold-only each, unpaired predicted rows
    1 prediction-only each. tp, fp, fn are the sums of the per-row fractions; F1 = 2PR/(P+R),
    0 when tp is 0; two empty results score 1.

    NULL is an ordinary value here, as in the script: the README's worked example (which
    skips empty cells and gets 0.8) gives 2/3 under the script, and the script is what
    produces the published numbers.
    """
    if not pred_rows and not gold_rows:
        return 1.0
    pred = list(dict.fromkeys(pred_rows))
    gold = list(dict.fromkeys(gold_rows))
    tp = fp = fn = 0.0
    for pred_row, gold_row in zip(pred, gold, strict=False):
        matched, pred_only, gold_only = _cell_counts(pred_row, gold_row)
        tp, fp, fn = tp + matched, fp + pred_only, fn + gold_only
    fn += max(0, len(gold) - len(pred))
    fp += max(0, len(pred) - len(gold))
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


# --- R-VES --------------------------------------------------------------------------------

# (lowest time ratio, reward), highest first: `iterated_execute_sql` of `evaluation_ves.py`
_REWARD_STEPS = ((2.0, 1.25), (1.0, 1.0), (0.5, 0.75), (0.25, 0.5))
_SLOWEST_REWARD = 0.25


def ves_reward(time_ratio: float) -> float:
    """The reward for a mean time ratio (gold time / predicted time); 0 stands for "no match".

    >= 2 -> 1.25, [1, 2) -> 1, [0.5, 1) -> 0.75, [0.25, 0.5) -> 0.5, below 0.25 -> 0.25.
    """
    if time_ratio == 0:
        return 0.0
    return next((reward for low, reward in _REWARD_STEPS if time_ratio >= low), _SLOWEST_REWARD)


def trim_outliers(samples: Sequence[float]) -> list[float]:
    """The samples strictly within 3 population standard deviations of their mean
    (`clean_abnormal`). When every sample is equal the official strict test keeps none and the
    script then divides by zero (reward 0); there is no outlier then, so all are kept."""
    import statistics  # R-VES only: `eval bird` imports this module for EX too

    if not samples:
        return []
    mean = statistics.fmean(samples)
    spread = statistics.pstdev(samples)
    if spread == 0:
        return list(samples)
    return [x for x in samples if mean - 3 * spread < x < mean + 3 * spread]


def mean_time_ratio(ratios: Sequence[float]) -> float:
    """The mean of the time ratios left after `trim_outliers`."""
    kept = trim_outliers(ratios)
    return sum(kept) / len(kept) if kept else 0.0


def time_ratios(
    run_pred: Callable[[], object],
    run_gold: Callable[[], object],
    repeats: int,
    clock: Callable[[], float] = time.perf_counter,
    budget_s: float | None = None,
) -> list[float]:
    """`repeats` timed runs of the prediction, then the gold, each time: gold / predicted time.

    The official script alternates them the same way, 100 times by default. `clock` is
    injectable so tests can control the timings. TimeoutError when `budget_s` (the official
    `meta_time_out * iterate_num`) is spent before the runs end; a predicted run measured as 0
    seconds raises ZeroDivisionError, as it does in the script.
    """
    ratios = []
    start = clock()
    for _ in range(repeats):
        t0 = clock()
        run_pred()
        t1 = clock()
        run_gold()
        t2 = clock()
        ratios.append((t2 - t1) / (t1 - t0))
        if budget_s is not None and t2 - start > budget_s:
            raise TimeoutError(f"R-VES timing took over {budget_s:g} s")
    return ratios


def r_ves_value(reward: float) -> float:
    """One instance's contribution: sqrt(reward); the official R-VES is their mean x 100."""
    return math.sqrt(reward)


# --- the official by-difficulty table -----------------------------------------------------


@dataclass(frozen=True)
class LevelScores:
    """Counts and scores (x 100) for simple, moderate, challenging and total, in that order;
    a level with no question has score None (the official script divides by zero there)."""

    metric: BirdMetric
    counts: tuple[int, int, int, int]
    scores: tuple[float | None, float | None, float | None, float | None]


def level_scores(metric: BirdMetric, entries: Iterable[tuple[str | None, float]]) -> LevelScores:
    """`entries` are (difficulty, per-instance value in [0, 1.25]); the mean x 100 per level.

    The total is over every entry, also those without one of the three levels, as the
    official total is over all questions.
    """
    buckets: dict[str, list[float]] = {level: [] for level in DIFFICULTIES}
    everything: list[float] = []
    for difficulty, value in entries:
        everything.append(value)
        if difficulty in buckets:
            buckets[difficulty].append(value)
    groups = [buckets[level] for level in DIFFICULTIES] + [everything]
    counts = tuple(len(g) for g in groups)
    scores = tuple(100 * sum(g) / len(g) if g else None for g in groups)
    return LevelScores(metric, counts, scores)  # type: ignore[arg-type]


_RULE = "=" * 38


def official_table(table: LevelScores) -> str:
    """The block `print_data` of `evaluation_utils.py` prints: a header of the levels, the
    counts, a rule naming the metric and the scores with two decimals (20-wide columns)."""
    name = table.metric.label
    scores = ["-" if s is None else f"{s:.2f}" for s in table.scores]
    lines = [
        "{:20} {:20} {:20} {:20} {:20}".format("", *DIFFICULTIES, "total"),
        "{:20} {:<20} {:<20} {:<20} {:<20}".format("count", *table.counts),
        f"{_RULE}    {name}    {_RULE[:-1]}",
        "{:20} {:<20} {:<20} {:<20} {:<20}".format(name, *scores),
    ]
    return "\n".join(line.rstrip() for line in lines)


# --- timing matched pairs on the engines ---------------------------------------------------


@dataclass(frozen=True)
class TimedPair:
    key: str
    database: str | Path  # anything `engines.connect` accepts
    pred_sql: str
    gold_sql: str


def measure_rewards(
    pairs: Sequence[TimedPair],
    *,
    repeats: int = 100,
    timeout: float | None = 30.0,
    workers: int = 1,
    clock: Callable[[], float] = time.perf_counter,
    on_pair: Callable[[], None] | None = None,
) -> dict[str, float]:
    """The R-VES reward of each pair whose results already matched (EX 1), by key.

    Each pair is timed on one worker's open connection (the official script reconnects per
    run; the connection's cost is the same on both sides and only adds noise). Any error or
    a run past `timeout x repeats` in all gives reward 0, as in the script. Timings are only
    as steady as the machine: run with `workers=1` on an idle host for figures to compare.
    """
    from querybench.engines.pool import QueryPool

    def timed(pair: TimedPair) -> Callable[[Engine], float]:
        def work(engine: Engine) -> float:
            ratios = time_ratios(
                lambda: engine.execute(pair.pred_sql, timeout=timeout),
                lambda: engine.execute(pair.gold_sql, timeout=timeout),
                repeats,
                clock,
                None if timeout is None else timeout * repeats,
            )
            return ves_reward(mean_time_ratio(ratios))

        return work

    rewards: dict[str, float] = {}
    with QueryPool(workers=workers, timeout=timeout) as pool:
        futures = {pair.key: pool.submit(pair.database, timed(pair)) for pair in pairs}
        for key, future in futures.items():
            try:
                rewards[key] = future.result()
            except Exception:  # an error or timeout in any run: reward 0, as officially
                rewards[key] = 0.0
            if on_pair is not None:
                on_pair()
    return rewards
