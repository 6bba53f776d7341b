"""What decides a `timeout` verdict, said once: the manifest records it, `verify` compares it,
and the engines and the query children (`child.py`, which announces each step's deadline, and
`supervisor.py`, which kills past it, for every path and the RL reward) apply it.

A query on an embedded engine (SQLite, DuckDB and the local stand-ins built on it) is timed by
its own CPU time, so a machine loaded by others does not turn it into a timeout: SQLite's
progress handler reads the thread's CPU time (`time.thread_time`; in a query child, which runs
one query at a time on one thread, the child's, as its parent counts it, from the reading that
announced the step: `child.Progress.cpu_time`), DuckDB's watchdog the query child's (every
DuckDB thread's). A query that blocks rather than computes is stopped by the wall
clock at `wall_cap(timeout)`, well above the timeout. The parent kills a child `GRACE_S` of CPU
time past the timeout (or `GRACE_S` past the wall cap), whatever was stopping it. A server
engine's CPU is spent in the server, out of sight: PostgreSQL, MariaDB, ClickHouse, Snowflake
and BigQuery keep the wall clock, as the official tools do. A timeout's message says which
time decided.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from querybench.errors import EngineError, ErrorCode, QueryTimeout

# How far past its timeout (CPU seconds, or wall seconds past the wall cap) a query may run
# before its child is killed.
GRACE_S = 0.5
# What the timeout message says decided it.
CPU_CLOCK = "cpu"
WALL_CLOCK = "wall"
# The engines whose queries run in the query's own process, and so are timed by its CPU.
CPU_ENGINES = frozenset({"sqlite", "duckdb", "snowflake+local", "bigquery+local"})
# How often a watchdog or a parent looks at a CPU clock.
TICK_S = 0.05
# How often SQLite's progress handler does (a CPU clock costs a system call to read).
CHECK_EVERY_S = 0.005


_QUERY_PROCESS = [False]


def mark_query_process() -> None:
    """Say that this process runs nothing but queries, one at a time (a query child): its CPU
    time is then the running query's."""
    _QUERY_PROCESS[0] = True


def runs_only_queries() -> bool:
    """Whether `mark_query_process` was called in this process."""
    return _QUERY_PROCESS[0]


def finite_timeout(timeout: float) -> float:
    """`timeout` when it is a finite number of seconds. A NaN or an infinity is a deadline no
    clock passes (every comparison with NaN is false), so the step would never be stopped:
    an `EngineError` instead, whoever gave it (a manifest `verify` re-runs, an API caller)."""
    if not math.isfinite(timeout):
        raise EngineError(f"a timeout must be a finite number of seconds, not {timeout!r}")
    return timeout


def wall_cap(timeout: float) -> float:
    """The wall-clock seconds after which a CPU-timed query of timeout `timeout` is stopped
    even though it has not spent its CPU time (it blocks, or waits for a core)."""
    return max(10.0 * timeout, timeout + 30.0)


def counts_cpu(engine: str | None) -> bool:
    """Whether a query on the engine named `engine` is timed by its CPU time."""
    return engine in CPU_ENGINES


def timed_out(timeout: float | None, decided: str) -> QueryTimeout:
    """The error of a query stopped at its timeout, saying which time decided."""
    if decided == CPU_CLOCK:
        how = "cpu time decided"
    elif timeout is not None and decided == f"{WALL_CLOCK} cap":
        how = f"wall time decided: its {wall_cap(timeout):g}s wall-clock cap"
    else:
        how = "wall time decided"
    return QueryTimeout(f"the query ran past its {timeout}s timeout and was stopped ({how})")


def process_cpu_s(pid: int) -> float | None:
    """The CPU seconds (user + system, every thread) process `pid` has used, from Linux's
    /proc; None where that cannot be read (another platform, the process gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class Budget:
    """One query's time from its start: `timeout` of the clock `cpu` reads (None: the wall
    clock only, as a server engine's), capped by the wall clock at `wall_s`. Never changed
    once made (a plain class with slots: one is made for every query, and a frozen
    dataclass costs microseconds to build)."""

    __slots__ = ("cpu", "cpu_started", "started", "timeout", "wall_s")

    def __init__(
        self,
        timeout: float,
        wall_s: float,
        started: float,
        cpu: Callable[[], float | None] | None = None,
        cpu_started: float = 0.0,
    ) -> None:
        self.timeout, self.wall_s, self.started = timeout, wall_s, started
        self.cpu, self.cpu_started = cpu, cpu_started

    @classmethod
    def start(cls, timeout: float, cpu: Callable[[], float | None] | None = None) -> Budget:
        begun = None if cpu is None else cpu()
        if begun is None:  # no CPU clock to read: the wall clock decides, at the timeout
            return cls(timeout, timeout, time.monotonic())
        return cls(timeout, wall_cap(timeout), time.monotonic(), cpu, begun)

    def spent(self, grace: float = 0.0) -> str | None:
        """Which time is spent (`grace` past the limit): "cpu", "wall cap", "wall", or None."""
        if self.cpu is not None:
            used = self.cpu()
            if used is not None and used - self.cpu_started > self.timeout + grace:
                return CPU_CLOCK
            if time.monotonic() - self.started > self.wall_s + grace:
                return f"{WALL_CLOCK} cap"
            return None
        return WALL_CLOCK if time.monotonic() - self.started > self.wall_s + grace else None

    def wait_s(self, grace: float = 0.0) -> float:
        """How long to wait before looking again: a tick while CPU time counts, else until
        the wall clock's limit."""
        left = max(0.0, self.started + self.wall_s + grace - time.monotonic())
        return left if self.cpu is None else min(left, TICK_S)


@dataclass(frozen=True)
class TimeoutPolicy:
    """How a timeout of `seconds` is decided: `counts` the clock held against it, the wall
    clock's cap for queries that block, and the error code a gold query's timeout gets."""

    seconds: float | None
    counts: str = WALL_CLOCK
    wall_cap_s: float | None = None
    kill_grace_s: float = GRACE_S
    gold_timeout_code: str = ErrorCode.GOLD_ERROR

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# The `counts` of this querybench's policy, as the manifest records it.
_COUNTS = f"{CPU_CLOCK}: {', '.join(sorted(CPU_ENGINES))}; {WALL_CLOCK}: server engines"


def timeout_policy(seconds: float | None) -> TimeoutPolicy:
    """The policy this querybench applies to a per-query timeout of `seconds` (None: none)."""
    if seconds is None:
        return TimeoutPolicy(None, counts="none")
    return TimeoutPolicy(float(seconds), _COUNTS, wall_cap(float(seconds)))
