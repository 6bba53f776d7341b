"""`vf-eval querybench-sql`: the querybench single-turn text-to-SQL taskset for verifiers.

verifiers imports a taskset id as a top-level module exporting one `Taskset` subclass in
`__all__`; this module is that shim over `querybench.envs.single_turn`.
"""

from querybench.envs.single_turn import (
    SQLTask,
    SQLTaskData,
    SQLTaskset,
    SQLTasksetConfig,
    load_environment,
)

__all__ = ["SQLTask", "SQLTaskData", "SQLTaskset", "SQLTasksetConfig", "load_environment"]
