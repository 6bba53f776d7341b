"""querybench: benchmark, evaluate and train text-to-SQL systems, faithful to official scores.

The names below are the library's public surface; everything else is reached through its
module and may change. They are imported on first use, so `import querybench` (and the CLI's
`--help`) stays fast. `evaluate` is the one way to score a benchmark's predictions; the
`evaluate_<benchmark>` functions it dispatches to stay public for their static types, all of
one shape: `(predictions, *, <gold and database locations>, <options>, on_result=None)`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from querybench.errors import DataError, EngineError, ErrorCode, QuerybenchError

if TYPE_CHECKING:
    from querybench.engines import connect
    from querybench.engines.base import Engine, Result
    from querybench.evaluation.bird.evaluate import evaluate_bird
    from querybench.evaluation.record import InstanceResult
    from querybench.evaluation.spider1.evaluate import evaluate_spider1
    from querybench.evaluation.spider2.agentic.dbt import evaluate_spider2_dbt
    from querybench.evaluation.spider2.agentic.evaluate import evaluate_spider2_agentic
    from querybench.evaluation.spider2.evaluate import evaluate_spider2
    from querybench.evaluation.verdict import Verdict
    from querybench.runs.config import RunConfig
    from querybench.runs.evaluate import evaluate
    from querybench.runs.runner import run
    from querybench.tasks import load_tasks
    from querybench.tasks.model import Task

__version__ = "0.1.0"

# Each lazy name and the module that defines it.
_LAZY = {
    "connect": "querybench.engines",
    "Engine": "querybench.engines.base",
    "Result": "querybench.engines.base",
    "evaluate": "querybench.runs.evaluate",
    "evaluate_bird": "querybench.evaluation.bird.evaluate",
    "evaluate_spider1": "querybench.evaluation.spider1.evaluate",
    "evaluate_spider2": "querybench.evaluation.spider2.evaluate",
    "evaluate_spider2_agentic": "querybench.evaluation.spider2.agentic.evaluate",
    "evaluate_spider2_dbt": "querybench.evaluation.spider2.agentic.dbt",
    "InstanceResult": "querybench.evaluation.record",
    "Verdict": "querybench.evaluation.verdict",
    "RunConfig": "querybench.runs.config",
    "run": "querybench.runs.runner",
    "load_tasks": "querybench.tasks",
    "Task": "querybench.tasks.model",
}

__all__ = [
    "DataError",
    "Engine",
    "EngineError",
    "ErrorCode",
    "InstanceResult",
    "QuerybenchError",
    "Result",
    "RunConfig",
    "Task",
    "Verdict",
    "__version__",
    "connect",
    "evaluate",
    "evaluate_bird",
    "evaluate_spider1",
    "evaluate_spider2",
    "evaluate_spider2_agentic",
    "evaluate_spider2_dbt",
    "load_tasks",
    "run",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value  # the next access is a plain lookup
        return value
    raise AttributeError(f"module 'querybench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
