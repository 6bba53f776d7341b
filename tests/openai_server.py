"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests: real HTTP, no network.

    with ScriptedServer() as server:
        server.script([Reply("```sql\\nSELECT 1\\n```", prompt_tokens=100), Fault(429, 0.1)])
        model = OpenAICompatibleModel("m", base_url=server.url)

Each POST /v1/chat/completions takes the next scripted step (then the `default` step once the
script is spent): a `Reply` (text, and optionally native `tool_calls` as `(name, arguments
string)` pairs, sent verbatim so malformed arguments can be scripted), or a `Fault` (an HTTP
status with optional Retry-After, a hang past the client's timeout, or malformed JSON).
Every request body is kept in `requests`. GET /v1/models lists `models` (a `Fault` there
answers with that status; None, the default, answers 404 as a server without the route does).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    text: str
    prompt_tokens: int = 10
    completion_tokens: int = 5
    usage: bool = True
    tool_calls: tuple[tuple[str, str], ...] = ()  # (function name, arguments JSON text)


@dataclass(frozen=True)
class Fault:
    status: int = 500
    retry_after: float | None = None
    hang: float = 0.0  # seconds to sleep before answering (past the client timeout)
    malformed: bool = False  # 200 with a body that is not JSON


Step = Reply | Fault
Responder = Callable[[dict[str, Any]], Step]


class ScriptedServer:
    def __init__(
        self,
        default: Step | Responder | None = None,
        models: tuple[str, ...] | Fault | None = None,
        streams: bool = True,  # False: a plain JSON reply even to `stream: true`
    ) -> None:
        self.requests: list[dict[str, Any]] = []
        self.model_listings = 0  # GET /v1/models served
        self.faults_served = 0
        self._script: list[Step] = []
        self._default: Step | Responder = default or Reply("```sql\nSELECT 1\n```")
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return None

            def do_GET(self) -> None:
                if self.path != "/v1/models" or models is None:
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                server.model_listings += 1
                if isinstance(models, Fault):
                    self._fault(models)
                    return
                listing = {"object": "list", "data": [{"id": m, "object": "model"} for m in models]}
                self._send(200, json.dumps(listing).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path != "/v1/chat/completions":
                    self._send(404, b'{"error": "not found"}')
                    return
                step = server._next(body)
                if isinstance(step, Fault):
                    self._fault(step)
                    return
                completion = _completion(body, step)
                if body.get("stream") and streams:
                    self._send(200, _event_stream(completion), {}, "text/event-stream")
                else:
                    self._send(200, json.dumps(completion).encode())

            def _fault(self, fault: Fault) -> None:
                if fault.hang:
                    time.sleep(fault.hang)
                if fault.malformed:
                    self._send(200, b'{"choices": [ not json')
                    return
                headers = {}
                if fault.retry_after is not None:
                    headers["Retry-After"] = f"{fault.retry_after:g}"
                self._send(fault.status, b'{"error": {"message": "scripted fault"}}', headers)

            def _send(
                self,
                status: int,
                data: bytes,
                headers: dict[str, str] | None = None,
                content_type: str = "application/json",
            ) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def script(self, steps: list[Step]) -> None:
        with self._lock:
            self._script.extend(steps)

    def _next(self, body: dict[str, Any]) -> Step:
        with self._lock:
            self.requests.append(body)
            if self._script:
                step = self._script.pop(0)
            else:
                step = self._default(body) if callable(self._default) else self._default
            if isinstance(step, Fault):
                self.faults_served += 1
            return step

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "model": body.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": _message(reply),
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
    }
    if reply.usage:
        out["usage"] = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
    return out


def _event_stream(completion: dict[str, Any]) -> bytes:
    """The same completion as `stream: true` clients read it: one delta chunk with the whole
    message, a final chunk with the finish reason (and usage), then `[DONE]`."""
    choice = completion["choices"][0]
    delta = dict(choice["message"])
    if "tool_calls" in delta:
        delta["tool_calls"] = [dict(call, index=i) for i, call in enumerate(delta["tool_calls"])]
    base = {k: completion[k] for k in ("id", "model")} | {"object": "chat.completion.chunk"}
    chunks = [
        base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
    ]
    if "usage" in completion:
        chunks.append(base | {"choices": [], "usage": completion["usage"]})
    events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
    return "".join(events).encode()


def _message(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["content"] = reply.text or None
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
            for i, (name, args) in enumerate(reply.tool_calls)
        ]
    return message
