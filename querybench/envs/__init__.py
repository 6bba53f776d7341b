"""RL environments: the execution-match rule (`match.py`) and reward (`reward.py`, with its
worker processes in `reward_workers.py` / `reward_child.py` and `ascore` batching in
`coalesce.py`), the multi-turn
SQL tools and turn loop (`multi_turn.py`), the BIRD train skip list (`skiplist.py`), all
without extra dependencies; the verifiers tasksets built on them (`single_turn.py`,
`multi_turn_env.py` with its tool server `sql_toolset.py`) need `querybench[rl]`.

The names below are imported on first use, so that a reward worker process, which imports
`querybench.envs.reward_child` and so this package, starts without `reward.py`'s asyncio.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from querybench.envs.reward import (
        ANSWER_TIMEOUT,
        GOLD_TIMEOUT,
        RewardItem,
        RewardOutcome,
        SQLReward,
        answer_sql,
        execution_match,
        sql_workers,
    )

__all__ = [
    "ANSWER_TIMEOUT",
    "GOLD_TIMEOUT",
    "RewardItem",
    "RewardOutcome",
    "SQLReward",
    "answer_sql",
    "execution_match",
    "sql_workers",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("querybench.envs.reward"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
