"""What decides a `timeout` verdict, said once: the manifest records it, `verify` compares it,
and the query children (`isolated.py`, the RL reward's `envs/reward_child.py`) apply it.

A query's timeout is counted on the wall clock from its start; its child is killed `GRACE_S`
past it (`isolated.py`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from querybench.engines.supervision import GRACE_S
from querybench.errors import ErrorCode

# What the results line says decided a timeout.
CPU_CLOCK = "cpu"
WALL_CLOCK = "wall"


def wall_cap(timeout: float) -> float:
    """The wall-clock seconds after which a query of timeout `timeout` is stopped."""
    return timeout + GRACE_S


@dataclass(frozen=True)
class TimeoutPolicy:
    """How a timeout of `seconds` is decided: `counts` the clock held against it, the wall
    clock's cap for queries that block, and the error code a gold query's timeout gets."""

    seconds: float | None
    counts: str = WALL_CLOCK
    wall_cap_s: float | None = None
    gold_timeout_code: str = ErrorCode.GOLD_ERROR

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def timeout_policy(seconds: float | None) -> TimeoutPolicy:
    """The policy this querybench applies to a per-query timeout of `seconds` (None: none)."""
    if seconds is None:
        return TimeoutPolicy(None, counts="none")
    return TimeoutPolicy(float(seconds), WALL_CLOCK, wall_cap(float(seconds)))
