"""`vf-eval querybench-sql-tools`: the querybench multi-turn text-to-SQL taskset for verifiers.

verifiers imports a taskset id as a top-level module exporting one `Taskset` subclass in
`__all__`; this module is that shim over `querybench.envs.multi_turn_env`.
"""

from querybench.envs.multi_turn_env import (
    MultiTurnSQLTask,
    SQLToolsTaskConfig,
    SQLToolsTaskset,
    SQLToolsTasksetConfig,
    load_environment,
)

__all__ = [
    "MultiTurnSQLTask",
    "SQLToolsTaskConfig",
    "SQLToolsTaskset",
    "SQLToolsTasksetConfig",
    "load_environment",
]
