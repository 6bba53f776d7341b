"""RL environments: the execution-match rule (`match.py`) and reward (`reward.py`, with its
worker processes in `reward_workers.py`), the multi-turn SQL tools and turn loop
(`multi_turn.py`), all without extra dependencies; the verifiers taskset built on them
(`single_turn.py`) needs `querybench[rl]`."""

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
