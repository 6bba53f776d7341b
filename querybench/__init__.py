"""querybench: benchmark, evaluate and train text-to-SQL systems, faithful to official scores."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from querybench.errors import QuerybenchError

if TYPE_CHECKING:
    from querybench.engines import connect
    from querybench.evaluation.record import InstanceResult
    from querybench.evaluation.spider2_eval import evaluate_spider2
    from querybench.evaluation.verdict import Verdict
    from querybench.tasks import load_tasks

__version__ = "0.1.0"

# Imported on first use, so `import querybench` (and the CLI's --help) stays fast.
_LAZY = {
    "connect": "querybench.engines",
    "evaluate_spider2": "querybench.evaluation.spider2_eval",
    "InstanceResult": "querybench.evaluation.record",
    "Verdict": "querybench.evaluation.verdict",
    "load_tasks": "querybench.tasks",
}

__all__ = [
    "InstanceResult",
    "QuerybenchError",
    "Verdict",
    "__version__",
    "connect",
    "evaluate_spider2",
    "load_tasks",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'querybench' has no attribute {name!r}")
