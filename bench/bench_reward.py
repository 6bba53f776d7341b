"""Reward throughput: `SQLReward` against a naive per-call reward, on Spider 1.0 dev.

Each of the 972 available dev questions is answered with its gold SQL in a ```sql block.
The naive reward opens both queries with `sqlite3.connect`, `fetchall`s them and compares
sets; ours reuses persistent read-only connections and the cached gold, in 2 worker processes
(the default) or, with `processes=False`, on 2 threads. All run on 2 workers. The `ascore`
mode scores as a trainer's rollouts do: `--rollouts` concurrent calls on one event loop.

    .venv/bin/python -m bench.bench_reward [--workers 2] [--rounds 3] [--rollouts 256]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from querybench.data import data_root
from querybench.envs import RewardItem, SQLReward


def naive_reward(item: RewardItem) -> float:
    sql = item.completion.split("```sql\n", 1)[1].rsplit("\n```", 1)[0]
    conn = sqlite3.connect(item.database)
    try:
        gold = conn.execute(item.gold_sql).fetchall()
    finally:
        conn.close()
    conn = sqlite3.connect(item.database)
    try:
        answer = conn.execute(sql).fetchall()
    finally:
        conn.close()
    return float(set(gold) == set(answer))


def timed(
    fn: Callable[[RewardItem], float], items: list[RewardItem], workers: int
) -> dict[str, float]:
    latencies: list[float] = []

    def one(item: RewardItem) -> float:
        start = time.perf_counter()
        value = fn(item)
        latencies.append(time.perf_counter() - start)
        return value

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        total = sum(pool.map(one, items))
    return summary(len(items), time.perf_counter() - start, latencies, total)


def summary(n: int, elapsed: float, latencies: list[float], matched: float) -> dict[str, float]:
    """Rate, median and 99th-percentile latency of `n` rewards timed in `elapsed` seconds."""
    latencies = sorted(latencies)
    return {
        "rewards_per_s": n / elapsed,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
        "matched": matched,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rollouts", type=int, default=256, help="concurrent ascore calls")
    args = parser.parse_args()
    root = data_root() / "spider1"
    questions = json.loads((root / "dev_subset_available_dbs.json").read_text())
    items = [
        RewardItem(
            root / q["db_id"] / f"{q['db_id']}.sqlite", q["query"], f"```sql\n{q['query']}\n```"
        )
        for q in questions
    ]
    naive = max((timed(naive_reward, items, args.workers) for _ in range(args.rounds)),
                key=lambda r: r["rewards_per_s"])  # fmt: skip
    print(f"{'naive':>30}: {naive['rewards_per_s']:7.0f} rewards/s  p50 {naive['p50_ms']:.2f} ms"
          f"  p99 {naive['p99_ms']:.2f} ms")  # fmt: skip
    for processes in (False, True):
        bench_reward(
            items, args.workers, args.rounds, processes, naive["rewards_per_s"], args.rollouts
        )


def bench_reward(
    items: list[RewardItem],
    workers: int,
    rounds: int,
    processes: bool,
    naive: float,
    rollouts: int = 256,
) -> None:
    mode = "processes" if processes else "threads"
    with (
        tempfile.TemporaryDirectory() as cache,
        SQLReward(workers=workers, cache_dir=cache, processes=processes) as reward,
    ):
        start = time.perf_counter()
        reward.warm((item.database, item.gold_sql) for item in items)
        print(f"gold computed once: {len(items)} queries in {time.perf_counter() - start:.2f}s")
        reward.score_many(items)  # workers start and read the warmed gold before timing

        def ours(item: RewardItem) -> float:
            return reward.score(item.database, item.gold_sql, item.completion).reward

        best = max((timed(ours, items, workers) for _ in range(rounds)),
                   key=lambda r: r["rewards_per_s"])  # fmt: skip
        rate, p50, p99 = best["rewards_per_s"], best["p50_ms"], best["p99_ms"]
        print(f"{'score, ' + mode:>30}: {rate:7.0f} rewards/s  p50 {p50:.2f} ms  p99 {p99:.2f} ms"
              f"  {rate / naive:.1f}x")  # fmt: skip
        rates = []
        for _ in range(rounds):
            start = time.perf_counter()
            outcomes = reward.score_many(items)
            rates.append(len(items) / (time.perf_counter() - start))
        matched = sum(o.reward for o in outcomes)
        print(f"{'score_many, ' + mode:>30}: {max(rates):7.0f} rewards/s  {max(rates) / naive:.1f}x"
              f"  ({matched:.0f} matched)")  # fmt: skip
        best = max((asyncio.run(concurrent_ascore(reward, items, rollouts))
                    for _ in range(rounds)), key=lambda r: r["rewards_per_s"])  # fmt: skip
        rate, p50, p99 = best["rewards_per_s"], best["p50_ms"], best["p99_ms"]
        label = f"ascore x{rollouts}, {mode}"
        print(f"{label:>30}: {rate:7.0f} rewards/s  p50 {p50:.2f} ms  p99 {p99:.2f} ms"
              f"  {rate / naive:.1f}x  ({best['matched']:.0f} matched)")  # fmt: skip


async def concurrent_ascore(
    reward: SQLReward, items: list[RewardItem], rollouts: int
) -> dict[str, float]:
    """`ascore` as a trainer calls it: `rollouts` rollouts at a time on one event loop, each
    scoring its own answer when it finishes (a new one starts as one ends)."""
    latencies: list[float] = []
    slots = asyncio.Semaphore(rollouts)

    async def one(item: RewardItem) -> float:
        async with slots:
            start = time.perf_counter()
            outcome = await reward.ascore(item.database, item.gold_sql, item.completion)
            latencies.append(time.perf_counter() - start)
            return outcome.reward

    start = time.perf_counter()
    total = sum(await asyncio.gather(*(one(item) for item in items)))
    return summary(len(items), time.perf_counter() - start, latencies, total)


if __name__ == "__main__":
    main()
