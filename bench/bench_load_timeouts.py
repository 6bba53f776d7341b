"""Timeout verdicts under load: the same verdicts on the machine as it is and while busy
processes saturate it.

A BIRD-shaped task set on one SQLite database: `--per` predictions at each of 30, 40, 50, 60 and
70 % of `--timeout` in CPU time alone (a recursive count whose length is calibrated here by
`time.thread_time`), half of them right (the gold is their count) and half wrong, plus two at
200 % that must be `timeout` in every pass. Each pass scores the set twice: `querybench eval
bird` (a subprocess, a fresh result cache each time, so every query runs) and the RL reward
(`SQLReward.score_many`, no disk cache). Passes: `as-is` (the machine as it is, other
processes included), then `busy` with `--busy` processes spinning `while True: pass` for the
whole pass. Printed: each pass's verdicts by code, its wall seconds and load average, and the
verdicts that differ from the first pass (the target: none).

    .venv/bin/python -m bench.bench_load_timeouts [--timeout 1.0] [--per 2] [--busy 4]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from querybench.engines.sqlite import SQLiteEngine
from querybench.envs.reward import RewardItem, SQLReward

COUNT = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < {n}) "
COUNT += "SELECT count(*) FROM c"
FRACTIONS = (0.3, 0.4, 0.5, 0.6, 0.7)
OVER = 2.0  # these must time out
DB_ID = "load"


def rows_per_cpu_second(database: Path) -> float:
    """How many rows of `COUNT` SQLite makes per CPU second here (the median of three, with a
    timeout set, as the scorers run it)."""
    engine = SQLiteEngine(database)
    n, took = 1_000_000, []
    for _ in range(3):
        start = time.thread_time()
        engine.execute(COUNT.format(n=n), timeout=100.0)
        took.append(time.thread_time() - start)
    engine.close()
    return n / sorted(took)[1]


def task_set(rate: float, timeout: float, per: int) -> list[tuple[str, float, str, str]]:
    """(instance id, CPU share of the timeout, gold SQL, predicted SQL)."""
    tasks = []
    for fraction in (*FRACTIONS, OVER):
        for k in range(per if fraction != OVER else 1):
            n = int(fraction * timeout * rate)
            right = k % 2 == 0
            gold = f"SELECT {n if right else n + 1}"
            tasks.append((f"{fraction:.1f}-{k}", fraction, gold, COUNT.format(n=n)))
    return tasks


def write_bird(root: Path, tasks: list[tuple[str, float, str, str]]) -> tuple[Path, Path, Path]:
    """The task set as BIRD files: questions, predictions, databases folder."""
    questions = [
        {"question_id": i, "db_id": DB_ID, "question": name, "SQL": gold, "difficulty": "simple"}
        for i, (name, _, gold, _) in enumerate(tasks)
    ]
    predictions = {
        str(i): f"{sql}\t----- bird -----\t{DB_ID}" for i, (_, _, _, sql) in enumerate(tasks)
    }
    (root / "questions.json").write_text(json.dumps(questions))
    (root / "predictions.json").write_text(json.dumps(predictions))
    return root / "questions.json", root / "predictions.json", root / "dbs"


def eval_verdicts(root: Path, timeout: float, tag: str) -> dict[str, str]:
    """`querybench eval bird` on the set: question id -> verdict code ("pass" for a pass)."""
    questions, predictions, dbs = root / "questions.json", root / "predictions.json", root / "dbs"
    output = root / f"eval-{tag}.jsonl"
    env = {**os.environ, "QUERYBENCH_CACHE": str(root / f"cache-{tag}")}
    command = [
        *(str(Path(sys.executable).parent / "querybench"), "eval", "bird"),
        *("--questions", str(questions), "--predictions", str(predictions)),
        *("--db-dir", str(dbs), "--timeout", str(timeout), "--output", str(output)),
    ]
    subprocess.run(command, env=env, check=True, capture_output=True)
    verdicts = {}
    for line in output.read_text().splitlines():
        record = json.loads(line)
        verdicts[str(record["instance_id"])] = record.get("error") or "pass"
    return verdicts


def reward_verdicts(
    database: Path, tasks: list[tuple[str, float, str, str]], timeout: float
) -> dict[str, str]:
    items = [RewardItem(database, gold, f"```sql\n{sql}\n```") for _, _, gold, sql in tasks]
    with SQLReward(workers=2, answer_timeout=timeout, gold_timeout=timeout, disk_cache=False) as r:
        outcomes = r.score_many(items)
    return {str(i): (o.verdict.error or "pass") for i, o in enumerate(outcomes)}


@contextlib.contextmanager
def busy(count: int) -> Iterator[None]:
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(1.0)  # let them take their share before the pass starts
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--per", type=int, default=2, help="predictions per CPU share")
    parser.add_argument("--busy", type=int, default=4, help="spinning processes in `busy`")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="qb-load-") as tmp:
        root = Path(tmp)
        database = root / "dbs" / DB_ID / f"{DB_ID}.sqlite"
        database.parent.mkdir(parents=True)
        with sqlite3.connect(database) as conn:
            conn.execute("CREATE TABLE t (x INTEGER)")
        conn.close()
        rate = rows_per_cpu_second(database)
        tasks = task_set(rate, args.timeout, args.per)
        write_bird(root, tasks)
        print(json.dumps({"rows_per_cpu_s": round(rate), "tasks": len(tasks), **vars(args)}))
        first: dict[str, dict[str, str]] = {}
        for tag in ("as-is", "busy"):
            with busy(args.busy) if tag == "busy" else contextlib.nullcontext():
                load = os.getloadavg()[0]
                for scorer in ("eval", "reward"):
                    start = time.monotonic()
                    if scorer == "eval":
                        verdicts = eval_verdicts(root, args.timeout, tag)
                    else:
                        verdicts = reward_verdicts(database, tasks, args.timeout)
                    wall = time.monotonic() - start
                    base = first.setdefault(scorer, verdicts)
                    differ = sorted(k for k in verdicts if verdicts[k] != base.get(k))
                    over = {verdicts[str(i)] for i, t in enumerate(tasks) if t[1] == OVER}
                    print(
                        json.dumps(
                            {
                                "pass": tag,
                                "scorer": scorer,
                                "load_1min_at_start": round(load, 1),
                                "wall_s": round(wall, 1),
                                "verdicts": dict(collections.Counter(verdicts.values())),
                                "over_timeout_verdicts": sorted(over),
                                "differ_from_as_is": [tasks[int(k)][0] for k in differ],
                            }
                        )
                    )


if __name__ == "__main__":
    main()
