"""Reward throughput: `SQLReward` against the plain naive reward, on Spider 1.0 dev.

`--answers` rollouts (default 2,000) cycle through the 972 dev questions whose database is
present. Each answer is a ```sql block whose text is its own (a `-- rollout N` line before the
SQL, as two rollouts rarely agree to the byte), so no prepared statement or cached result is
ever shared between two answers or with the gold; each timed call gets texts of its own (the
round and the call in that line), so none is shared with an earlier call either. `correct`:
every answer is its question's gold SQL; `mixed`: every other answer is wrong (another
question's gold on the same database, else `SELECT 1`). `grouped` is GRPO's shape instead:
`--group` rollouts per question in a row whose SQL blocks take `--distinct` texts
(`grouped_answers`; the share of repeated answers is printed), where a reward may run a
repeated answer once per call. `ascore` runs twice: each answer a task held back by an
`asyncio.Semaphore(--rollouts)`, and `--rollouts` loops each taking the next answer, the same
calls in flight without the semaphore's own cost in this process (Python 3.11's `acquire`
walks every waiting task: at 2,000 answers about 8 us a call, more with more answers).

`limit` is what the machine allows (`Limit`): each distinct answer's SQL executed once, with
`fetchall`, on a read-only `sqlite3` connection kept open, in `--workers` processes (as many
as the reward has), nothing else; every reward row is then given as a share of its rate, on
the same answers (texts of its own too).

The naive reward is the plain one-thread implementation: for each answer, `sqlite3.connect`,
execute the gold and the answer, `fetchall` both, compare sets, close (`naive`); `naive-reuse`
keeps one connection per database open instead, the faster of the two honest variants.
Ratios are rates measured in the same run, rounds interleaved (A B A B), best round kept;
CPU is user+sys of this process and its children (the reward's worker processes included),
the figure that holds up on a busy machine. `cold` times a fresh process: a new reward on an
empty cache scoring the answers once, against the naive reward in a fresh process too.

    .venv/bin/python -m bench.bench_reward [--workers 2] [--rounds 3] [--rollouts 256] \
        [--batch-size 64] [--group 16] [--distinct 4] [--only warm|cold] \
        [--kinds correct,mixed,grouped]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import multiprocessing.connection
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from querybench.data.roots import data_root
from querybench.envs import RewardItem, SQLReward, answer_sql

Timing = dict[str, float]


def answers(count: int, *, mixed: bool, tag: str = "") -> list[RewardItem]:
    """`count` rollouts over the Spider 1.0 dev questions (see the module docstring); `tag`
    goes into every answer's text (a timed call's own texts)."""
    root, questions = _questions()
    items = []
    for i in range(count):
        question = questions[i % len(questions)]
        answer = _wrong(questions, i) if mixed and i % 2 else question["query"]
        database = root / question["db_id"] / f"{question['db_id']}.sqlite"
        completion = f"```sql\n-- rollout {i}{tag}\n{answer}\n```"
        items.append(RewardItem(database, question["query"], completion))
    return items


def grouped_answers(count: int, group: int, distinct: int, tag: str = "") -> list[RewardItem]:
    """GRPO's shape: `group` rollouts of each question in a row, whose ```sql blocks take only
    `distinct` texts (text v: a `-- variant v` line, then the gold SQL for even v, the mixed
    rows' wrong answer for odd v); the reasoning above each block is the rollout's own.
    Repeated answers: 1 - distinct / group of them."""
    root, questions = _questions()
    items = []
    for i in range(count):
        index = i // group
        question = questions[index % len(questions)]
        variant = (i % group) % distinct
        answer = question["query"] if variant % 2 == 0 else _wrong(questions, index)
        database = root / question["db_id"] / f"{question['db_id']}.sqlite"
        completion = f"rollout {i}: reasoning\n```sql\n-- variant {variant}{tag}\n{answer}\n```"
        items.append(RewardItem(database, question["query"], completion))
    return items


def _questions() -> tuple[Path, list[dict[str, str]]]:
    root = data_root() / "spider1"
    return root, json.loads((root / "dev_subset_available_dbs.json").read_text())


def _wrong(questions: list[dict[str, str]], i: int) -> str:
    """Another question's gold on the same database, else `SELECT 1`."""
    question, other = questions[i % len(questions)], questions[(i + 1) % len(questions)]
    return other["query"] if other["db_id"] == question["db_id"] else "SELECT 1"


def _sql(completion: str) -> str:
    return completion.split("```sql\n", 1)[1].rsplit("\n```", 1)[0]


def _matches(conn: sqlite3.Connection, item: RewardItem) -> bool:
    """Execute the gold and the answer, `fetchall` both, compare them as sets."""
    try:
        gold = conn.execute(item.gold_sql).fetchall()
        return set(gold) == set(conn.execute(_sql(item.completion)).fetchall())
    except sqlite3.Error:
        return False


def naive(items: Sequence[RewardItem]) -> float:
    """Connect, execute, fetchall, compare sets, one thread: a new connection per answer."""
    matched = 0.0
    for item in items:
        conn = sqlite3.connect(item.database)
        try:
            matched += _matches(conn, item)
        finally:
            conn.close()
    return matched


def naive_reuse(items: Sequence[RewardItem]) -> float:
    """`naive` with one connection per database kept open across answers."""
    connections: dict[str, sqlite3.Connection] = {}
    matched = 0.0
    try:
        for item in items:
            conn = connections.get(str(item.database))
            if conn is None:
                conn = connections[str(item.database)] = sqlite3.connect(item.database)
            matched += _matches(conn, item)
    finally:
        for conn in connections.values():
            conn.close()
    return matched


class Limit:
    """The machine's limit for a batch of answers: each distinct answer's SQL executed once
    (`fetchall`) on a `sqlite3` connection kept open (read-only, one per database), in
    `workers` processes taking every `workers`-th answer, nothing else (no gold, no
    comparison, no extraction, no guards). The processes and their connections are started
    once; a round's SQL texts reach each process before its clock starts, and the span is
    from the first process's start to the last one's end."""

    def __init__(self, workers: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipes = []
        self._processes = []
        for _ in range(max(1, workers)):
            ours, theirs = context.Pipe()
            process = context.Process(target=_limit_worker, args=(theirs,), daemon=True)
            process.start()
            theirs.close()
            self._pipes.append(ours)
            self._processes.append(process)

    def __call__(self, items: Sequence[RewardItem]) -> Timing:
        """The rate (distinct answers per second) and CPU (user+sys of the processes)."""
        distinct = list(dict.fromkeys((str(i.database), _sql(i.completion)) for i in items))
        count = len(self._pipes)
        for n, pipe in enumerate(self._pipes):
            pipe.send(distinct[n::count])
        for pipe in self._pipes:
            pipe.recv()  # its texts received and its databases open: ready
        for pipe in self._pipes:
            pipe.send(None)
        spans = [pipe.recv() for pipe in self._pipes]
        elapsed = max(end for _, end, _ in spans) - min(start for start, _, _ in spans)
        return {
            "rate": len(distinct) / elapsed,
            "cpu": sum(cpu for _, _, cpu in spans),
            "matched": float("nan"),
        }

    def close(self) -> None:
        for pipe in self._pipes:
            pipe.close()  # the process reads EOF and ends
        for process in self._processes:
            process.join(5)
            if process.is_alive():
                process.kill()


def _limit_worker(pipe: multiprocessing.connection.Connection) -> None:
    connections: dict[str, sqlite3.Connection] = {}
    while True:
        try:
            work: list[tuple[str, str]] = pipe.recv()
        except EOFError:
            return
        for database, _ in work:
            if database not in connections:
                uri = Path(database).resolve().as_uri() + "?mode=ro"
                connections[database] = sqlite3.connect(uri, uri=True)
        jobs = [(connections[database], sql) for database, sql in work]
        pipe.send("ready")
        pipe.recv()
        cpu, start = time.process_time(), time.monotonic()
        for conn, sql in jobs:
            with contextlib.suppress(sqlite3.Error):
                conn.execute(sql).fetchall()
        end = time.monotonic()
        pipe.send((start, end, time.process_time() - cpu))


def tree_cpu() -> float:
    """User+sys seconds of this process and all its live descendants (Linux `/proc`), plus
    the children already reaped (a process pool's workers, and their own query processes)."""
    pids, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        pids.add(pid)
        for tasks in Path(f"/proc/{pid}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo += [int(child) for child in tasks.read_text().split()]
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ticks / os.sysconf("SC_CLK_TCK") + reaped.ru_utime + reaped.ru_stime


def timed(run: Callable[[Sequence[RewardItem]], float], items: Sequence[RewardItem]) -> Timing:
    cpu, start = tree_cpu(), time.perf_counter()
    matched = run(items)
    elapsed = time.perf_counter() - start
    return {"rate": len(items) / elapsed, "cpu": tree_cpu() - cpu, "matched": matched}


def best(rounds: list[Timing]) -> Timing:
    top = max(rounds, key=lambda r: r["rate"])
    return {**top, "cpu": min(r["cpu"] for r in rounds)}


def scoring_many(reward: SQLReward) -> Callable[[Sequence[RewardItem]], float]:
    return lambda items: sum(o.reward for o in reward.score_many(items))


def scoring_one_by_one(reward: SQLReward) -> Callable[[Sequence[RewardItem]], float]:
    return lambda items: sum(
        reward.score(i.database, i.gold_sql, i.completion).reward for i in items
    )


async def concurrent_ascore(
    reward: SQLReward, items: Sequence[RewardItem], rollouts: int
) -> Timing:
    """`ascore` as a trainer calls it: `rollouts` rollouts at a time on one event loop, each
    scoring its own answer when it finishes (a new one starts as one ends), every answer a
    task held back by an `asyncio.Semaphore` (a common way to cap rollouts in flight)."""
    slots = asyncio.Semaphore(rollouts)

    async def run(score: Callable[[RewardItem], Awaitable[float]]) -> float:
        async def one(item: RewardItem) -> float:
            async with slots:
                return await score(item)

        return sum(await asyncio.gather(*(one(item) for item in items)))

    return await _timed_ascore(reward, run)


async def looped_ascore(reward: SQLReward, items: Sequence[RewardItem], rollouts: int) -> Timing:
    """`concurrent_ascore` with `rollouts` loops instead, each taking the next answer when its
    last one is scored: the same calls in flight, without the semaphore's own cost (on Python
    3.11 each `acquire` walks every waiting task, each `release` those woken before it)."""
    pending = iter(items)

    async def run(score: Callable[[RewardItem], Awaitable[float]]) -> float:
        async def loop() -> float:
            return sum([await score(item) for item in pending])

        return sum(await asyncio.gather(*(loop() for _ in range(rollouts))))

    return await _timed_ascore(reward, run)


async def _timed_ascore(
    reward: SQLReward,
    run: Callable[[Callable[[RewardItem], Awaitable[float]]], Awaitable[float]],
) -> Timing:
    """The rate, CPU and latencies of `run`, which scores every answer with the `score` given."""
    latencies: list[float] = []

    async def score(item: RewardItem) -> float:
        start = time.perf_counter()
        outcome = await reward.ascore(item.database, item.gold_sql, item.completion)
        latencies.append(time.perf_counter() - start)
        return outcome.reward

    cpu, start = tree_cpu(), time.perf_counter()
    matched = await run(score)
    elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "rate": len(latencies) / elapsed,
        "cpu": tree_cpu() - cpu,
        "matched": matched,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
    }


def row(label: str, timing: Timing, baselines: Timing, reuse: Timing | None = None) -> None:
    ratio = f"{timing['rate'] / baselines['rate']:5.1f}x"
    if reuse is not None:
        ratio += f" {timing['rate'] / reuse['rate']:5.1f}x"
    latency = ""
    if "p50_ms" in timing:
        latency = f"  p50 {timing['p50_ms']:.1f} ms  p99 {timing['p99_ms']:.1f} ms"
    print(f"{label:>34}: {timing['rate']:7.0f}/s  {ratio}  cpu {timing['cpu']:.2f}s"
          f"  matched {timing['matched']:.0f}{latency}")  # fmt: skip


def warm_run(args: argparse.Namespace) -> None:
    kinds: dict[str, Callable[[str], list[RewardItem]]] = {
        "correct": lambda tag: answers(args.answers, mixed=False, tag=tag),
        "mixed": lambda tag: answers(args.answers, mixed=True, tag=tag),
        "grouped": lambda tag: grouped_answers(args.answers, args.group, args.distinct, tag),
    }
    limit = Limit(args.workers)
    try:
        for kind, make in kinds.items():
            if kind not in args.kinds.split(","):
                continue
            with (
                tempfile.TemporaryDirectory() as cache,
                SQLReward(
                    workers=args.workers, cache_dir=cache, batch_size=args.batch_size
                ) as reward,
            ):
                warm_kind(reward, limit, make, args, kind)
    finally:
        limit.close()


def repeated_share(items: Sequence[RewardItem]) -> float:
    """The share of answers that repeat an earlier one to the byte (database, gold, SQL)."""
    keys = {(str(i.database), i.gold_sql, answer_sql(i.completion)) for i in items}
    return 1 - len(keys) / len(items)


def warm_kind(
    reward: SQLReward,
    limit: Limit,
    make: Callable[[str], list[RewardItem]],
    args: argparse.Namespace,
    kind: str,
) -> None:
    """Each timed call scores answers of its own text (`make(tag)`): SQLite keeps the last 128
    statements prepared per connection, so texts met in an earlier call would skip their
    preparing there (5 us of the 48 us of an answer query here) where no rollout does."""
    many = scoring_many(reward)
    items = make("")
    many(items)  # the gold computed and the databases opened before timing
    limit(make(" limit"))  # its databases opened
    rounds: dict[str, list[Timing]] = {
        "naive": [], "reuse": [], "many": [], "ascore": [], "looped": [], "limit": []
    }  # fmt: skip
    for r in range(args.rounds):
        rounds["limit"].append(limit(make(f" {r}f")))
        rounds["naive"].append(timed(naive, make(f" {r}a")))
        rounds["many"].append(timed(many, make(f" {r}b")))
        rounds["reuse"].append(timed(naive_reuse, make(f" {r}c")))
        work = make(f" {r}d")
        rounds["ascore"].append(asyncio.run(concurrent_ascore(reward, work, args.rollouts)))
        work = make(f" {r}e")
        rounds["looped"].append(asyncio.run(looped_ascore(reward, work, args.rollouts)))
    plain, reuse = best(rounds["naive"]), best(rounds["reuse"])
    repeated = f", {100 * repeated_share(items):.1f}% repeated"
    print(f"{kind} answers ({len(items)}{repeated}); ratios against naive, naive-reuse")
    row("naive (connect per answer)", plain, plain, reuse)
    row("naive-reuse (connection per db)", reuse, plain, reuse)
    row("score_many", best(rounds["many"]), plain, reuse)
    row(f"ascore x{args.rollouts}", best(rounds["ascore"]), plain, reuse)
    row(f"ascore x{args.rollouts}, no semaphore", best(rounds["looped"]), plain, reuse)
    top = best(rounds["limit"])
    row("limit (distinct answers only)", top, plain, reuse)
    shares = ", ".join(
        f"{name} {100 * best(rounds[name])['rate'] / top['rate']:.0f}%"
        for name in ("many", "ascore", "looped")
    )
    print(f"{'of the limit':>34}: {shares} (by rate); CPU: limit {top['cpu']:.2f}s")
    if kind == "correct":
        one_by_one = timed(scoring_one_by_one(reward), make(" one"))
        row("score, one call at a time", one_by_one, plain, reuse)
    matched = {name: best(r)["matched"] for name, r in rounds.items() if name != "limit"}
    assert len(set(matched.values())) == 1, f"the rewards disagree: {matched}"


def cold_run(args: argparse.Namespace) -> None:
    """Fresh processes, interleaved: the naive reward, then a new reward on an empty cache."""
    results: dict[str, list[Timing]] = {"naive": [], "ours": []}
    for _ in range(args.rounds):
        for mode in results:
            command = [sys.executable, "-m", "bench.bench_reward", "--cold-child", mode]
            command += ["--answers", str(args.answers), "--workers", str(args.workers)]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            reply = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            process_s = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            inside = json.loads(reply)
            results[mode].append({**inside, "process_s": process_s, "process_cpu": cpu})
    print(f"cold start ({args.answers} answers, a fresh process each, best of {args.rounds})")
    naive_best = min(results["naive"], key=lambda r: r["seconds"])
    for mode, rounds in results.items():
        top = min(rounds, key=lambda r: r["seconds"])
        whole = min(rounds, key=lambda r: r["process_s"])
        ratio = naive_best["seconds"] / top["seconds"]
        print(f"{mode:>34}: call {top['seconds']:.3f}s ({ratio:.2f}x naive)"
              f"  cpu {min(r['cpu'] for r in rounds):.2f}s  whole process"
              f" {whole['process_s']:.3f}s  cpu {min(r['process_cpu'] for r in rounds):.2f}s"
              f"  matched {top['matched']:.0f}")  # fmt: skip


def cold_child(mode: str, count: int, workers: int) -> None:
    items = answers(count, mixed=False)
    with tempfile.TemporaryDirectory() as cache:
        cpu, start = tree_cpu(), time.perf_counter()
        if mode == "naive":
            matched = naive(items)
        else:
            with SQLReward(workers=workers, cache_dir=cache) as reward:
                matched = scoring_many(reward)(items)
        seconds = time.perf_counter() - start
        print(json.dumps({"seconds": seconds, "cpu": tree_cpu() - cpu, "matched": matched}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rollouts", type=int, default=256, help="concurrent ascore calls")
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--only", choices=["warm", "cold"])
    parser.add_argument("--batch-size", type=int, default=64, help="SQLReward's batch_size")
    parser.add_argument("--group", type=int, default=16, help="grouped: rollouts per question")
    parser.add_argument("--distinct", type=int, default=4, help="grouped: SQL texts per group")
    parser.add_argument("--kinds", default="correct,mixed,grouped", help="warm: which answers")
    parser.add_argument("--cold-child", choices=["naive", "ours"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_child:
        cold_child(args.cold_child, args.answers, args.workers)
        return
    if args.only != "cold":
        warm_run(args)
    if args.only != "warm":
        cold_run(args)


if __name__ == "__main__":
    main()
