"""The OpenAI-compatible client against a real scripted HTTP server on loopback."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from querybench.errors import BudgetExhausted, ModelError
from querybench.models import (
    ChatRequest,
    Completion,
    ConstantModel,
    Message,
    OpenAICompatibleModel,
    OracleModel,
    Price,
    PriceTable,
    RequestBudget,
    ResponseCache,
    RetryPolicy,
    Sampling,
)
from querybench.models.retry import parse_retry_after
from querybench.models.truncate import fit_messages, prompt_tokens
from querybench.tasks.model import GoldRef, Task
from tests.openai_server import Fault, Reply, ScriptedServer

FAST = RetryPolicy(max_retries=3, base=0.01, max_delay=0.05)
REQUEST = ChatRequest((Message("system", "be brief"), Message("user", "Question: q", "schema")))


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


def _complete(model: OpenAICompatibleModel, request: ChatRequest = REQUEST) -> Completion:
    async def go() -> Completion:
        try:
            return await model.complete(request)
        finally:
            await model.aclose()

    return asyncio.run(go())


def _model(server: ScriptedServer, **kw: Any) -> OpenAICompatibleModel:
    kw.setdefault("retry", FAST)
    kw.setdefault("prices", PriceTable({"m": Price(prompt=2.0, completion=10.0)}))
    return OpenAICompatibleModel("m", base_url=server.url, api_key="k", **kw)


def test_reply_usage_and_cost(server: ScriptedServer) -> None:
    server.script([Reply("```sql\nSELECT 2\n```", prompt_tokens=1000, completion_tokens=100)])
    sampling = Sampling(temperature=0.5, top_p=0.9, max_tokens=64, seed=7, stop=(";",))
    c = _complete(_model(server), ChatRequest(REQUEST.messages, sampling))
    assert c.text == "```sql\nSELECT 2\n```"
    assert (c.usage.prompt_tokens, c.usage.completion_tokens) == (1000, 100)
    assert c.cost == pytest.approx((1000 * 2.0 + 100 * 10.0) / 1e6)
    assert c.attempts == 1 and c.retried_for == () and c.finish_reason == "stop"
    body = server.requests[0]
    assert body["model"] == "m"
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "schema\n\nQuestion: q"},
    ]
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (
        0.5,
        0.9,
        64,
        7,
    )
    assert body["stop"] == [";"]


def test_429_retry_after_is_honoured(server: ScriptedServer) -> None:
    server.script([Fault(429, retry_after=0.3), Reply("SELECT 1")])
    start = time.perf_counter()
    c = _complete(_model(server))
    assert time.perf_counter() - start >= 0.3
    assert c.attempts == 2 and c.retried_for == ("429",)
    assert len(server.requests) == 2


def test_500_malformed_and_hang_are_retried(server: ScriptedServer) -> None:
    server.script([Fault(500), Fault(malformed=True), Fault(hang=1.0), Reply("SELECT 1")])
    c = _complete(_model(server, timeout=0.3))
    assert c.text == "SELECT 1"
    assert c.retried_for == ("500", "malformed", "timeout")
    assert c.attempts == 4


def test_endpoint_down_gives_one_clear_error(server: ScriptedServer) -> None:
    with ScriptedServer(default=Fault(503)) as down:
        with pytest.raises(ModelError, match=r"no usable reply after 4 attempts \(503, 503"):
            _complete(_model(down))
        assert len(down.requests) == 4


def test_refused_connection_is_a_model_error() -> None:
    with ScriptedServer() as s:
        url = s.url
    model = OpenAICompatibleModel("m", base_url=url, retry=RetryPolicy(1, 0.01, 0.01))
    with pytest.raises(ModelError, match=r"connection failed at 127\.0\.0\.1:.*Connection refused"):
        _complete(model)


@pytest.mark.parametrize(
    ("step", "transient", "status"),
    [
        (Fault(503), True, 503),
        (Fault(429), True, 429),
        (Fault(hang=1.0), True, None),
        (Fault(malformed=True), False, None),
        (Fault(400), False, 400),
    ],
)
def test_failures_say_whether_any_answer_came_back(
    step: Fault, transient: bool, status: int | None
) -> None:
    """Transport failures (no answer) are `transient`: a resumed run asks again; a reply that
    came back unusable is not."""
    with ScriptedServer(default=step) as s, pytest.raises(ModelError) as caught:
        _complete(_model(s, retry=RetryPolicy(1, 0.01, 0.01), timeout=0.3))
    assert (caught.value.transient, caught.value.status) == (transient, status)


def test_client_error_is_not_retried(server: ScriptedServer) -> None:
    server.script([Fault(400)])
    with pytest.raises(ModelError, match="HTTP 400"):
        _complete(_model(server))
    assert len(server.requests) == 1


def test_request_budget_counts_retries(server: ScriptedServer) -> None:
    server.script([Fault(500)])
    model = _model(server, budget=RequestBudget(2))

    async def go() -> None:
        await model.complete(REQUEST)  # 2 requests: a 500 and the reply
        with pytest.raises(BudgetExhausted):
            await model.complete(REQUEST)
        await model.aclose()

    asyncio.run(go())
    assert len(server.requests) == 2


def test_response_cache_keyed_by_full_request(server: ScriptedServer, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    first = _complete(_model(server, cache=cache))
    again = _complete(_model(server, cache=cache))
    assert len(server.requests) == 1
    assert again.cached and again.cost == 0.0 and again.text == first.text
    assert again.usage == first.usage
    _complete(_model(server, cache=cache), ChatRequest(REQUEST.messages, sample=1))
    _complete(_model(server, cache=cache), ChatRequest(REQUEST.messages, Sampling(seed=1)))
    assert len(server.requests) == 3


def test_missing_usage_is_estimated(server: ScriptedServer) -> None:
    server.script([Reply("SELECT 1", usage=False)])
    c = _complete(_model(server))
    assert c.usage.prompt_tokens > 0 and c.usage.completion_tokens > 0


def test_concurrency_limit(server: ScriptedServer) -> None:
    with ScriptedServer(default=lambda body: Reply("SELECT 1")) as s:
        model = _model(s, concurrency=2)
        active = 0
        peak = 0
        original = model._post

        async def counting(body: dict[str, Any]) -> dict[str, Any]:
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.05)
            try:
                return await original(body)
            finally:
                active -= 1

        model._post = counting  # type: ignore[method-assign]

        async def go() -> None:
            await asyncio.gather(*(model.complete(REQUEST) for _ in range(6)))
            await model.aclose()

        asyncio.run(go())
    assert peak == 2


def test_context_overflow_cuts_history_not_system_or_question(server: ScriptedServer) -> None:
    schema = "\n".join(f"- column_{i} INTEGER" for i in range(400))
    request = ChatRequest(
        (Message("system", "rules"), Message("user", "Question: how many?", schema))
    )
    c = _complete(_model(server, context_window=300), request)
    assert c.truncation is not None
    assert c.truncation.tokens_before > 300 >= c.truncation.tokens_after
    sent = server.requests[0]["messages"]
    assert sent[0] == {"role": "system", "content": "rules"}
    assert sent[1]["content"].endswith("Question: how many?")
    assert "column_399" in sent[1]["content"] and "column_0 " not in sent[1]["content"]


def test_fit_messages_drops_oldest_history_first() -> None:
    messages = (
        Message("system", "S"),
        Message("user", "old " * 50),
        Message("assistant", "older reply " * 50),
        Message("user", "Question: q"),
    )
    fitted, cut = fit_messages(messages, prompt_tokens((messages[0], messages[-1])) + 5)
    assert [m.role for m in fitted] == ["system", "user"]
    assert fitted[-1].content == "Question: q"
    assert cut is not None and cut.dropped_messages == 2
    same, none = fit_messages(messages, 10_000)
    assert same == messages and none is None


def test_retry_policy_and_retry_after() -> None:
    policy = RetryPolicy(base=1.0, max_delay=4.0)
    for attempt, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (5, 4.0)]:
        assert ceiling / 2 <= policy.delay(attempt) <= ceiling
    assert policy.delay(0, retry_after=7.0) == 7.0
    assert parse_retry_after("3") == 3.0
    now = datetime(2025, 1, 1, tzinfo=UTC)
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(date, now=now) == pytest.approx(30.0)
    assert parse_retry_after("soon") is None


def test_labelled_models_need_no_http() -> None:
    task = Task("t1", "custom", "q?", "db", "sqlite", gold=GoldRef(sql="SELECT 42"))

    async def go() -> tuple[Completion, Completion]:
        return await OracleModel().complete(REQUEST, task), await ConstantModel(
            "SELECT 0"
        ).complete(REQUEST, task)

    oracle, constant = asyncio.run(go())
    assert oracle.text == "```sql\nSELECT 42\n```" and oracle.usage.prompt_tokens > 0
    assert constant.text == "```sql\nSELECT 0\n```"
    with pytest.raises(ModelError):
        asyncio.run(OracleModel().complete(REQUEST, None))


def test_a_refused_request_shows_the_endpoints_message_not_its_json() -> None:
    with ScriptedServer(default=Fault(400)) as s, pytest.raises(ModelError) as caught:
        _complete(_model(s))
    assert str(caught.value).endswith("refused the request: HTTP 400: scripted fault")


def test_a_cause_chain_that_loops_still_gives_a_message() -> None:
    from querybench.models.openai_compat import _root_cause

    first, second = RuntimeError("outer"), ValueError("inner")
    first.__cause__, second.__cause__ = second, first
    assert _root_cause(first) == "outer"
