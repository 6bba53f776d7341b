"""RL environments: the execution-match reward (`reward.py`, no extra dependency) and the
verifiers tasksets built on it (`single_turn.py`, `multi_turn.py`, need `querybench[rl]`)."""

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
