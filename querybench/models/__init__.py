"""Chat models behind one `ChatModel` interface: any OpenAI-compatible endpoint, and the
labelled `oracle` and `constant` models for pipeline checks.

    model = make_model("gpt-4o-mini", base_url="http://localhost:8000/v1")
    completion = await model.complete(ChatRequest((Message("user", "SELECT?"),)))
"""

from __future__ import annotations

from pathlib import Path

from querybench.errors import BudgetExhausted, EndpointUnavailable, ModelError
from querybench.models.base import (
    ChatModel,
    ChatRequest,
    Completion,
    Message,
    Sampling,
    Truncation,
    Usage,
)
from querybench.models.cache import ResponseCache
from querybench.models.labelled import LABELLED, ConstantModel, OracleModel
from querybench.models.openai_compat import (
    DEFAULT_BASE_URL,
    OpenAICompatibleModel,
    RequestBudget,
)
from querybench.models.pricing import Price, PriceTable
from querybench.models.retry import RetryPolicy
from querybench.models.tools import Tool, ToolCall

__all__ = [
    "LABELLED",
    "BudgetExhausted",
    "ChatModel",
    "ChatRequest",
    "Completion",
    "ConstantModel",
    "EndpointUnavailable",
    "Message",
    "ModelError",
    "OpenAICompatibleModel",
    "OracleModel",
    "Price",
    "PriceTable",
    "RequestBudget",
    "ResponseCache",
    "RetryPolicy",
    "Sampling",
    "Tool",
    "ToolCall",
    "Truncation",
    "Usage",
    "make_model",
]


def make_model(
    name: str,
    *,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    constant_sql: str | None = None,
    timeout: float = 120.0,
    retry: RetryPolicy | None = None,
    concurrency: int = 8,
    max_requests: int | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    prices: PriceTable | None = None,
    context_window: int | None = None,
) -> ChatModel:
    """`oracle` and `constant` are the labelled models; any other name is sent to the endpoint
    at `base_url` (default: `$OPENAI_BASE_URL`, then OpenAI's)."""
    import os

    if name == "oracle":
        return OracleModel()
    if name == "constant":
        return ConstantModel(constant_sql) if constant_sql else ConstantModel()
    url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    return OpenAICompatibleModel(
        name,
        base_url=url,
        api_key_env=api_key_env,
        timeout=timeout,
        retry=retry,
        concurrency=concurrency,
        budget=RequestBudget(max_requests),
        cache=ResponseCache(cache_dir) if use_cache else None,
        prices=prices,
        context_window=context_window,
    )
