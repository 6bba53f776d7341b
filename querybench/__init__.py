"""querybench: benchmark, evaluate and train text-to-SQL systems, faithful to official scores."""

from querybench.errors import QuerybenchError

__version__ = "0.1.0"

__all__ = ["QuerybenchError", "__version__"]
