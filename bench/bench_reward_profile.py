"""Where a reward's CPU goes: microseconds per answer, layer by layer, on the bench's answers.

CPU seconds (user+sys), the minimum of `--rounds` interleaved rounds, divided by the answers:

* `naive` / `naive-reuse`: the baselines of `bench_reward.py` (gold and answer run each time);
* `answer query alone`: only the answer, on a kept `sqlite3` connection, `fetchall`, compared
  as a set with the gold set computed beforehand: the floor for any reward that runs the
  answer, whatever it does around it;
* `engine + rule`: `match.run_answer` on a kept `SQLiteEngine` (read-only opening, authorizer,
  one-statement rule, row and byte caps, timeout, rows streamed against the gold set) and
  `execution_match`, in this process;
* `the child's loop`: `engine + rule` as the reward's child runs it (gold lookup, the
  progress bytes announcing each step), in this process, without the pipe;
* `score_many`: the whole reward, this process (parent: SQL extraction, batching, outcomes)
  and its worker children (everything else) apart.

    .venv/bin/python -m bench.bench_reward_profile [--rounds 5] [--answers 2000]

Instruction counts repeat where CPU times do not (a busy machine): `--layer floor|engine|
child|many` only sets the layer up and runs it `--rounds` times; the count of one run is
(rounds 2 - rounds 0) / 2, e.g. for the whole reward, children included (one worker: with two,
which child first meets a gold, and so runs it, changes from run to run):

    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=/tmp/cg.%p \
        .venv/bin/python -m bench.bench_reward_profile --layer many --workers 1 --answers 1000 \
        --rounds 2
    # sum the "Collected" lines of every process, minus the same with --rounds 0
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence

from bench.bench_reward import answers, naive, naive_reuse, tree_cpu
from querybench.engines.base import Result
from querybench.engines.child import PROGRESS, Child, ChildSetup, Progress
from querybench.engines.sqlite import SQLiteEngine
from querybench.engines.supervisor import _shared_file
from querybench.envs import RewardItem, SQLReward, answer_sql, execution_match
from querybench.envs.match import run_answer
from querybench.envs.reward_child import RewardWork, WorkerConfig


def answer_alone(items: Sequence[RewardItem]) -> Callable[[], object]:
    connections: dict[str, sqlite3.Connection] = {}
    golds: dict[tuple[str, str], set[tuple[object, ...]]] = {}
    work = []
    for item in items:
        database = str(item.database)
        if database not in connections:
            connections[database] = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        conn = connections[database]
        golds.setdefault((database, item.gold_sql), set(conn.execute(item.gold_sql).fetchall()))
        work.append((conn, answer_sql(item.completion) or "", golds[(database, item.gold_sql)]))
    return lambda: [set(conn.execute(sql).fetchall()) == gold for conn, sql, gold in work]


def engine_and_rule(items: Sequence[RewardItem]) -> Callable[[], object]:
    engines: dict[str, SQLiteEngine] = {}
    golds: dict[tuple[str, str], Result] = {}
    gold_rows: dict[tuple[str, str], frozenset[tuple[object, ...]]] = {}
    work = []
    for item in items:
        database = str(item.database)
        if database not in engines:
            engines[database] = SQLiteEngine(database)
        engine = engines[database]
        key = (database, item.gold_sql)
        if key not in golds:
            golds[key] = engine.execute(item.gold_sql, timeout=120)
            gold_rows[key] = frozenset(golds[key].rows)  # as the reward's child keeps them
        work.append((engine, answer_sql(item.completion) or "", golds[key], gold_rows[key]))

    def run() -> object:
        return [
            execution_match(
                gold,
                run_answer(engine, sql, gold, timeout=30, max_rows=1_000_000, gold_rows=rows),
            )
            for engine, sql, gold, rows in work
        ]

    return run


def child_loop(items: Sequence[RewardItem]) -> Callable[[], object]:
    """The reward child's own loop (`reward_child.RewardWork.score`: gold lookup, engine, the
    progress bytes, the rule) in this process, without the pipe."""
    config = WorkerConfig(30, 120, 1_000_000, None, False)
    child = Child(
        ChildSetup(open_databases=config.open_databases), Progress(_shared_file(PROGRESS.size))
    )
    worker = RewardWork(child, config)
    tasks = [(str(i.database), i.gold_sql, answer_sql(i.completion), None, None) for i in items]
    return lambda: [worker.score(task) for task in tasks]


LAYERS = {"floor": answer_alone, "engine": engine_and_rule, "child": child_loop}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--layer",
        choices=[*LAYERS, "many"],
        help="only set up this layer and run it --rounds times, untimed (for callgrind)",
    )
    args = parser.parse_args()
    items = answers(args.answers, mixed=False)
    with (
        tempfile.TemporaryDirectory() as cache,
        SQLReward(workers=args.workers, cache_dir=cache) as reward,
    ):
        reward.score_many(items)
        if args.layer is not None:
            layer = LAYERS.get(args.layer)
            run = (lambda: reward.score_many(items)) if layer is None else layer(items)
            if layer is not None:
                run()  # as `score_many` above: the first round, cold, is the set-up's
            for _ in range(args.rounds):
                run()
            return
        runs: dict[str, Callable[[], object]] = {
            "naive (connect per answer)": lambda: naive(items),
            "naive-reuse (connection per db)": lambda: naive_reuse(items),
            "answer query alone (the floor)": answer_alone(items),
            "engine + rule, in process": engine_and_rule(items),
            "the child's loop, in process": child_loop(items),
            "score_many": lambda: reward.score_many(items),
        }
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        parent: list[float] = []
        for _ in range(args.rounds):
            for name, run in runs.items():
                mine, tree = time.process_time(), tree_cpu()
                run()
                cpu[name].append(tree_cpu() - tree)
                if name == "score_many":
                    parent.append(time.process_time() - mine)
    per = 1e6 / len(items)
    print(f"CPU per answer, {len(items)} answers, min of {args.rounds} rounds")
    for name, seconds in cpu.items():
        print(f"{name:>34}: {min(seconds) * per:6.1f} us")
    print(f"{'of which the parent':>34}: {min(parent) * per:6.1f} us")


if __name__ == "__main__":
    main()
