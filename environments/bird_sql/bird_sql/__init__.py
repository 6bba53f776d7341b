"""`vf-eval bird-sql`: the BIRD text-to-SQL taskset for verifiers (see README.md)."""

from querybench.envs.bird_sql import (
    BirdSQLTask,
    BirdSQLTaskData,
    BirdSQLTaskset,
    BirdSQLTasksetConfig,
    load_environment,
)

__all__ = [
    "BirdSQLTask",
    "BirdSQLTaskData",
    "BirdSQLTaskset",
    "BirdSQLTasksetConfig",
    "load_environment",
]
