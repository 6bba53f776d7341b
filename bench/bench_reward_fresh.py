"""The reward child's work on answers it has never seen, for instruction counts.

`bench_reward_profile --layer` runs the same texts every round, so from the second round on
SQLite's statement cache prepares nothing and the authorizer is never called: it counts what
surrounds a query, not a rollout's query. Here every round gets texts of its own (`-- r<N>`
in the comment line, as `bench_reward` gives each timed call), after a first round that
computes the golds and opens the databases:

* `floor`: each answer's SQL on a kept read-only `sqlite3` connection, `fetchall`, nothing else
  (the limit's work, one process);
* `batch`: the reward's work kind (`reward_child.RewardWork`) on batches of 64, its packed
  reply pickled as the child sends it, with the child's held read locks (`--no-hold`:
  without them).

The count of one round is (rounds 2 - rounds 0) / 2; divided by `--answers`, per answer:

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p \
        .venv/bin/python -m bench.bench_reward_fresh --layer batch --answers 1000 --rounds 2
    # and --rounds 0; the difference of the two "Collected" lines / 2 / 1000

`--time` prints the CPU per answer instead (the minimum over the rounds).
"""

from __future__ import annotations

import argparse
import pickle
import sqlite3
import time
from collections.abc import Callable, Sequence

from bench.bench_reward import answers
from querybench.engines.child import PROGRESS, Child, ChildSetup, Progress
from querybench.engines.supervisor import _shared_file
from querybench.envs import RewardItem, answer_sql
from querybench.envs.reward_child import RewardWork, WorkerConfig

BATCH = 64


def fresh(items: Sequence[RewardItem], round_: int) -> list[RewardItem]:
    """`items` with texts of their own for this round."""
    tag = f"-- r{round_} rollout"
    return [
        RewardItem(i.database, i.gold_sql, i.completion.replace("-- rollout", tag)) for i in items
    ]


def floor() -> Callable[[Sequence[RewardItem]], object]:
    connections: dict[str, sqlite3.Connection] = {}

    def run(items: Sequence[RewardItem]) -> object:
        for item in items:
            database = str(item.database)
            conn = connections.get(database)
            if conn is None:
                conn = connections[database] = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
            conn.execute(answer_sql(item.completion) or "").fetchall()
        return None

    return run


def batch(*, hold: bool) -> Callable[[Sequence[RewardItem]], object]:
    config = WorkerConfig(30, 120, 1_000_000, None, False)
    setup = ChildSetup(open_databases=config.open_databases, hold_read_locks=hold)
    work = RewardWork(Child(setup, Progress(_shared_file(PROGRESS.size))), config)

    def run(items: Sequence[RewardItem]) -> object:
        tasks = [(str(i.database), i.gold_sql, answer_sql(i.completion), None, None) for i in items]
        for start in range(0, len(tasks), BATCH):
            pickle.dumps(work(tasks[start : start + BATCH]), protocol=pickle.HIGHEST_PROTOCOL)
        return None

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layer", choices=["floor", "batch"], required=True)
    parser.add_argument("--answers", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-hold", action="store_true", help="batch: no held read locks")
    parser.add_argument("--time", action="store_true", help="print the CPU per answer")
    args = parser.parse_args()
    items = answers(args.answers, mixed=True)
    rounds = [fresh(items, r) for r in range(args.rounds + 1)]
    run = floor() if args.layer == "floor" else batch(hold=not args.no_hold)
    run(rounds[0])  # golds computed, databases opened
    spent = []
    for texts in rounds[1:]:
        start = time.process_time()
        run(texts)
        spent.append(time.process_time() - start)
    if args.time and spent:
        print(f"{args.layer}: {min(spent) / args.answers * 1e6:.1f} us CPU per answer")


if __name__ == "__main__":
    main()
