"""The one supervisor with a work kind of its own: the deadline the child announces for a step
is the one the parent kills at, whichever way the child was started, and the next message
goes to a fresh child."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import time
from typing import Any

import pytest

from querybench.engines.child import PROGRESS, WORK, Child, ChildSetup, Progress
from querybench.engines.sqlite import SQLiteEngine
from querybench.engines.supervisor import Launch, Stopped, Supervisor, _shared_file
from querybench.errors import QueryTimeout

# A step of this kind that runs past its deadline (seconds) is killed GRACE_S later.
DEADLINE = 0.3
# Generous: the kill comes 0.5 s past the deadline, later on a loaded machine.
DID_NOT_HANG = 30.0


class Sleeper:
    """A work kind for the tests: `(seconds, deadline)` sleeps under an announced deadline
    (a sleep spends no CPU: the wall clock decides) and answers the child's pid."""

    def __init__(self, child: Child, tag: str) -> None:
        self.child = child
        self.tag = tag

    def __call__(self, seconds: float, deadline: float) -> Any:
        self.child.progress.index = 7
        self.child.progress.step(WORK, deadline)
        try:
            time.sleep(seconds)
        finally:
            self.child.progress.done()
        return self.tag, os.getpid()


def _supervisor(launch: Launch) -> Supervisor:
    work = "tests.test_engines_supervisor:Sleeper"
    return Supervisor(
        ChildSetup(ignore_ctrl_c=True, work=work, work_args=("slept",)), launch=launch
    )


@pytest.mark.parametrize("launch", ["fork", "subprocess"])
def test_a_step_past_its_announced_deadline_is_killed_and_the_next_gets_a_fresh_child(
    launch: Launch,
) -> None:
    child = _supervisor(launch)
    try:
        number = child.send("work", 0.0, DEADLINE)
        reply = child.receive()
        assert not isinstance(reply, Stopped)
        assert reply[:2] == (number, "ok") and reply[2][0] == "slept"
        first = reply[2][1]
        assert first == child.pid and first != os.getpid()

        number = child.send("work", 60.0, DEADLINE)
        start = time.monotonic()
        stopped = child.receive()
        assert time.monotonic() - start < DID_NOT_HANG
        assert stopped == Stopped(number, 7, WORK, killed=True, spent="wall")
        assert child.pid is None  # killed, and none started until asked

        number = child.send("work", 0.0, DEADLINE)
        reply = child.receive()
        assert not isinstance(reply, Stopped) and reply[0] == number
        assert reply[2][1] != first
    finally:
        child.close()


def test_a_child_killed_from_outside_is_said_so_and_replaced() -> None:
    child = _supervisor("fork")
    try:
        child.start()
        pid = child.pid
        assert pid is not None
        number = child.send("work", 60.0, 600.0)
        time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)  # e.g. the kernel's out-of-memory killer
        stopped = child.receive()
        assert isinstance(stopped, Stopped) and not stopped.killed
        assert (stopped.number, stopped.index) == (number, 7)
        assert "killed by signal 9" in str(stopped.ended())
        child.send("work", 0.0, DEADLINE)
        again = child.receive()
        assert not isinstance(again, Stopped) and again[2][1] != pid
    finally:
        child.close()


def test_a_cpu_timed_step_hands_its_own_start_to_the_first_clock_read_only() -> None:
    progress = Progress(_shared_file(PROGRESS.size))
    progress.step(WORK, 30.0, cpu=True)
    _, cpu_deadline = progress.deadlines()
    started = cpu_deadline - 30.0
    while time.process_time() < started + 0.001:
        pass  # a millisecond of CPU time past the step's reading
    assert progress.cpu_time() == pytest.approx(started, abs=1e-6)  # the step's, not the clock
    assert progress.cpu_time() >= started + 0.001  # then the clock itself
    for ended in (
        progress.done,
        lambda: progress.step(WORK, 30.0),
        lambda: progress.at(WORK, 0, 0),
    ):
        progress.step(WORK, 30.0, cpu=True)
        _, cpu_deadline = progress.deadlines()
        ended()  # a step over, or one that is not CPU-timed: its reading is no query's start
        while (before := time.process_time()) <= cpu_deadline - 30.0:
            pass  # CPU time past the step's reading
        assert progress.cpu_time() >= before


def test_a_child_s_sqlite_queries_count_the_cpu_time_the_parent_holds_them_to(
    tmp_path: Any,
) -> None:
    path = tmp_path / "one.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE t (x)")
    child = Child(ChildSetup(), Progress(_shared_file(PROGRESS.size)))
    engine = child.engine(str(path))
    assert isinstance(engine, SQLiteEngine)
    assert engine._cpu_clock == child.progress.cpu_time
    # On that clock: a clock that says the whole timeout went by stops an endless query at
    # its first look, long before the 30 seconds of this thread's CPU time.
    readings = iter([0.0])
    engine.count_cpu_by(lambda: next(readings, 100.0))
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
    started = time.monotonic()
    with pytest.raises(QueryTimeout):
        engine.execute(endless, timeout=30.0)
    assert time.monotonic() - started < 25.0
