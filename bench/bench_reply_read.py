"""The parent's read of a child's reply (`Supervisor._frame`), against multiprocessing's
`Connection.recv_bytes`, which it replaced because that waits for ever on a stalled frame.

`read`: one small framed reply already in a pipe, read by each (the per-reply cost the RL
reward pays, microseconds); `round trip`: a small message and its reply through a real child,
and a 10,000-row SQLite result, for each way of starting a child. Best of 5 rounds.

    .venv/bin/python -m bench.bench_reply_read [--replies 200000]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

from querybench.engines.child import ChildSetup
from querybench.engines.supervisor import Launch, Supervisor

ROUNDS = 5


def _best_us(read: Callable[[], object], write: Callable[[], object], n: int) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        spent = 0.0
        for _ in range(n):
            write()
            start = time.perf_counter()
            read()
            spent += time.perf_counter() - start
        best = min(best, spent / n)
    return best * 1e6


def _best_loop_us(step: Callable[[], object], n: int) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(n):
            step()
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e6


def read_in_pipe(n: int) -> tuple[float, float]:
    """(recv_bytes, _frame) microseconds for one small reply already in the pipe."""
    data = bytes(ForkingPickler.dumps((1, "ok", None)))
    frame = len(data).to_bytes(4, "big") + data
    r, w = os.pipe()
    old = _best_us(Connection(r, writable=False).recv_bytes, lambda: os.write(w, frame), n)
    r2, w2 = os.pipe()
    os.set_blocking(r2, False)
    child = Supervisor(ChildSetup())
    child._fd = r2  # the read alone: no child is started
    new = _best_us(child._frame, lambda: os.write(w2, frame), n)
    return old, new


def round_trips(launch: Launch, n: int) -> tuple[float, float]:
    """(small reply us, 10,000-row result ms) through a child started by `launch`."""
    folder = Path(tempfile.mkdtemp())
    db = folder / "t.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE t (a INTEGER, b TEXT)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"row {i}") for i in range(10_000)])
    con.close()
    child = Supervisor(ChildSetup(ignore_ctrl_c=True), launch=launch)
    try:

        def small_reply() -> None:
            child.send("forget", "x")
            child.receive()

        def rows_reply() -> None:
            child.send("execute", str(db), "SELECT * FROM t", 10.0, None)
            child.receive()

        small_reply()  # the child started, warm
        small = _best_loop_us(small_reply, n)
        rows = _best_loop_us(rows_reply, 50)
    finally:
        child.close()
    return small, rows / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replies", type=int, default=200_000)
    args = parser.parse_args()
    old, new = read_in_pipe(args.replies)
    print(f"small reply in the pipe: recv_bytes {old:.2f} us, _frame {new:.2f} us")
    launches: tuple[Launch, ...] = ("fork", "subprocess")
    for launch in launches:
        small, rows = round_trips(launch, args.replies // 10)
        print(f"{launch}: small reply round trip {small:.1f} us, 10,000 rows {rows:.2f} ms")


if __name__ == "__main__":
    main()
