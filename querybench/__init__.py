"""querybench: benchmark, evaluate and train text-to-SQL systems, faithful to official scores."""

from querybench.engines import connect
from querybench.errors import QuerybenchError
from querybench.evaluation.record import InstanceResult
from querybench.evaluation.spider2_eval import evaluate_spider2
from querybench.evaluation.verdict import Verdict

__version__ = "0.1.0"

__all__ = [
    "InstanceResult",
    "QuerybenchError",
    "Verdict",
    "__version__",
    "connect",
    "evaluate_spider2",
]
