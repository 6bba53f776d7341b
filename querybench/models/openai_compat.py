"""An async client for any OpenAI-compatible chat-completions endpoint, on httpx.

httpx rather than the `openai` SDK: it is already a dependency, and the SDK retries on its own
(hiding attempts we must count, budget and record), while what we send and read is one small
JSON shape that vLLM, Ollama, llama.cpp and gateways all speak.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import time
from typing import TYPE_CHECKING, Any

import httpx

from querybench.context.tokens import count_tokens
from querybench.errors import (
    BudgetExhausted,
    EndpointUnavailable,
    MalformedToolCall,
    ModelError,
    RetryableReply,
)
from querybench.models.base import ChatRequest, Completion, Truncation, Usage
from querybench.models.cache import ResponseCache, request_key
from querybench.models.pricing import PriceTable
from querybench.models.retry import RETRY_STATUS, RetryPolicy, parse_retry_after
from querybench.models.tools import ToolCall, tool_calls_from_api
from querybench.models.truncate import fit_messages

DEFAULT_BASE_URL = "https://api.openai.com/v1"  # what `run` asks without --base-url

if TYPE_CHECKING:
    from querybench.tasks.model import Task


class RequestBudget:
    """At most `limit` HTTP requests (retries included) in one run; None means no limit."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.used = 0

    def take(self) -> None:
        if self.limit is not None and self.used >= self.limit:
            raise BudgetExhausted(f"request budget of {self.limit} requests spent")
        self.used += 1


class OpenAICompatibleModel:
    """`complete()` sends one chat request, retrying 429, 5xx, timeouts, dropped connections
    and malformed replies; other HTTP errors fail at once. Either way a `ModelError` ends it."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        concurrency: int = 8,
        budget: RequestBudget | None = None,
        cache: ResponseCache | None = None,
        prices: PriceTable | None = None,
        context_window: int | None = None,
    ) -> None:
        self.name = model
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        key = api_key if api_key is not None else os.environ.get(api_key_env, "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        # said with a refused key: no key at all is the usual reason
        self._no_key = "" if key else f" (no API key was sent: ${api_key_env} is not set)"
        self._api_key_env = api_key_env
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(max_connections=max(concurrency, 1)),
        )
        self.retry = retry or RetryPolicy()
        self._slots = asyncio.Semaphore(max(concurrency, 1))
        self.budget = budget or RequestBudget()
        self.cache = cache
        self.prices = prices or PriceTable()
        self.context_window = context_window

    async def aclose(self) -> None:
        await self._client.aclose()

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.name,
            "messages": [m.to_api() for m in request.messages],
        }
        body.update(request.sampling.to_api())
        if request.tools:
            body["tools"] = [t.to_api() for t in request.tools]
        if request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
        return body

    async def complete(self, request: ChatRequest, task: Task | None = None) -> Completion:
        truncation: Truncation | None = None
        if self.context_window is not None:
            room = self.context_window - (request.sampling.max_tokens or 0)
            messages, truncation = fit_messages(request.messages, room)
            request = request.with_messages(messages)
        body = self.payload(request)
        key = request_key({"base_url": self.base_url, "body": body, "sample": request.sample})
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return _from_cache(hit, truncation)
        start = time.perf_counter()
        reasons: list[str] = []
        for attempt in range(self.retry.max_retries + 1):
            self.budget.take()
            try:
                async with self._slots:
                    data = await self._post(body)
                break
            except RetryableReply as exc:
                reasons.append(exc.reason)
                if attempt == self.retry.max_retries:
                    raise ModelError(
                        f"{self.base_url} gave no usable reply after {attempt + 1} attempts "
                        f"({', '.join(reasons)}); last: {exc}",
                        transient=exc.transient,
                        status=exc.status,
                    ) from None
                await asyncio.sleep(self.retry.delay(attempt, exc.retry_after))
        text, usage, finish, calls = _parse(data, request)
        completion = Completion(
            text=text,
            usage=usage,
            cost=self.prices.cost(self.name, usage),
            latency_s=time.perf_counter() - start,
            attempts=len(reasons) + 1,
            finish_reason=finish,
            truncation=truncation,
            retried_for=tuple(reasons),
            tool_calls=calls,
        )
        if self.cache is not None:
            self.cache.put(
                key,
                {
                    "text": text,
                    "usage": [usage.prompt_tokens, usage.completion_tokens],
                    "finish_reason": finish,
                    "tool_calls": [c.to_api() for c in calls],
                },
            )
        return completion

    def _default_endpoint_hint(self) -> str:
        """What to set when the unreachable endpoint is the default one (OpenAI's): the key,
        or --base-url for a local or other OpenAI-compatible server."""
        if self.base_url != DEFAULT_BASE_URL:
            return ""
        key = "set" if not self._no_key else "not set"
        return (
            f" (the default endpoint, OpenAI's; ${self._api_key_env} is {key}: for another "
            "OpenAI-compatible server, e.g. vLLM or Ollama, pass --base-url "
            "http://HOST:PORT/v1 or set OPENAI_BASE_URL; for OpenAI, check the network)"
        )

    async def preflight(self) -> None:
        """One cheap request before a run: GET /models. Unreachable, 401/403, or a model the
        endpoint does not list (and refuses by name) raise `EndpointUnavailable` naming the
        host, the HTTP status and the reply's message; a busy or list-less endpoint passes."""
        url = f"{self.base_url}/models"
        try:
            response = await self._client.get(url, timeout=min(self.timeout, 30.0))
        except httpx.HTTPError as exc:
            raise EndpointUnavailable(
                f"cannot reach the model endpoint {self.base_url}: {_transport_error(exc)}"
                + self._default_endpoint_hint(),
                transient=True,
            ) from None
        status = response.status_code
        if status in (401, 403):
            raise EndpointUnavailable(
                f"{self.base_url} refused the API key{self._no_key}: HTTP {status}: "
                f"{_reply_message(response)}",
                status=status,
            )
        if status != 200:
            return  # no model list here (404/405) or busy (5xx, 429): the run's retries cope
        try:
            listed = [str(m["id"]) for m in response.json()["data"]]
        except (ValueError, KeyError, TypeError):
            return
        if self.name in listed:
            return
        # not listed: some gateways list a subset, so ask for one token by name to be sure
        probe = {"model": self.name, "messages": [{"role": "user", "content": "ping"}]}
        try:
            answer = await self._client.post(
                f"{self.base_url}/chat/completions",
                json=probe | {"max_tokens": 1},
                timeout=min(self.timeout, 30.0),
            )
        except httpx.HTTPError:
            return
        if answer.status_code in (400, 401, 403, 404):
            shown = ", ".join(listed[:10]) + (", ..." if len(listed) > 10 else "")
            raise EndpointUnavailable(
                f"{self.base_url} does not serve the model {self.name!r} (it lists "
                f"{shown or 'no model'}): HTTP {answer.status_code}: {_reply_message(answer)}",
                status=answer.status_code,
            )

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        url = f"{self.base_url}/chat/completions"
        try:
            response = await self._client.post(url, json=body)
        except httpx.TimeoutException as exc:
            raise RetryableReply("timeout", f"no reply within the timeout ({exc!r})") from None
        except httpx.TransportError as exc:
            raise RetryableReply("connection", _transport_error(exc)) from None
        if response.status_code in RETRY_STATUS:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            message = f"HTTP {response.status_code}: {_reply_message(response)}"
            status = response.status_code
            raise RetryableReply(str(status), message, retry_after, status)
        if response.status_code >= 400:
            reason = _reply_message(response)
            raise ModelError(
                f"{url} refused the request: HTTP {response.status_code}: {reason}",
                status=response.status_code,
            )
        try:
            data = response.json()
        except ValueError:
            raise RetryableReply(
                "malformed", f"reply is not JSON: {response.text[:120]!r}"
            ) from None
        if not isinstance(data, dict) or not data.get("choices"):
            raise RetryableReply("malformed", f"reply has no choices: {str(data)[:120]}")
        return data


def _transport_error(exc: httpx.HTTPError) -> str:
    """`connection refused at 127.0.0.1:9`-style text for a request that got no reply."""
    where = ""
    with contextlib.suppress(RuntimeError):  # an error raised before any request was built
        where = f" at {exc.request.url.netloc.decode('ascii', 'replace')}"
    if isinstance(exc, httpx.TimeoutException):
        return f"no reply within the timeout{where} ({type(exc).__name__})"
    return f"connection failed{where}: {_root_cause(exc)}"


def _root_cause(exc: BaseException) -> str:
    """The operating system's words where there are some (`Connection refused`): httpx's own
    message for a refused connection is only `All connection attempts failed`."""
    seen: BaseException | None = exc
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:  # a chain may loop back on itself
        visited.add(id(seen))
        if isinstance(seen, socket.gaierror):  # strerror(-2) is "Unknown error -2"
            return f"cannot resolve the host name ({seen.strerror or seen})"
        if isinstance(seen, OSError) and seen.errno:
            return os.strerror(seen.errno)
        seen = seen.__cause__ or seen.__context__
    return str(exc) or type(exc).__name__


def _reply_message(response: httpx.Response) -> str:
    """The error message of an OpenAI-style reply (`{"error": {"message": ...}}`), else its
    first characters."""
    try:
        data = response.json()
        error = data.get("error") if isinstance(data, dict) else None
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str) and message:
            return message[:300]
    except ValueError:
        pass
    return response.text[:300] or "(empty reply)"


def _parse(
    data: dict[str, Any], request: ChatRequest
) -> tuple[str, Usage, str | None, tuple[ToolCall, ...]]:
    try:
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
        finish = choice.get("finish_reason")
        calls = tool_calls_from_api(choice["message"].get("tool_calls"))
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ModelError(f"malformed chat completion: {exc!r}: {json.dumps(data)[:200]}") from exc
    except MalformedToolCall as exc:
        raise ModelError(f"malformed chat completion: {exc}") from exc
    raw = data.get("usage") or {}
    if isinstance(raw, dict) and "prompt_tokens" in raw:
        usage = Usage(int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0))
    else:  # some servers omit usage: estimate with o200k so costs are not silently 0
        prompt = sum(count_tokens(m.text) for m in request.messages)
        usage = Usage(prompt, count_tokens(text))
    return str(text), usage, finish, calls


def _from_cache(hit: dict[str, Any], truncation: Truncation | None) -> Completion:
    prompt, completion = hit.get("usage") or (0, 0)
    return Completion(
        text=str(hit.get("text", "")),
        usage=Usage(int(prompt), int(completion)),
        cost=0.0,
        attempts=0,
        cached=True,
        finish_reason=hit.get("finish_reason"),
        truncation=truncation,
        tool_calls=tool_calls_from_api(hit.get("tool_calls")),
    )
