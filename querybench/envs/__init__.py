"""RL environments: the execution-match rule (`match.py`) and reward (`reward.py`, with its
worker processes in `reward_workers.py` and `ascore` batching in `coalesce.py`), the multi-turn
SQL tools and turn loop (`multi_turn.py`), the BIRD train skip list (`skiplist.py`), all
without extra dependencies; the verifiers tasksets built on them (`single_turn.py`,
`multi_turn_env.py` with its tool server `sql_toolset.py`) need `querybench[rl]`."""

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
