"""A loopback relay that streams for an OpenAI-compatible endpoint that does not.

verifiers' harness asks every chat completion with `stream: true` and reads the reply as
server-sent events; an endpoint that ignores `stream` answers with one JSON completion, and
every task then fails with "upstream stream ended before its terminal event". `vf-run` puts
this relay in front of such an endpoint: each request is sent on without `stream`, and the
JSON completion that comes back is served as the event stream a streaming endpoint sends (one
delta chunk with the whole message, one with the finish reason, the usage, then `[DONE]`).
Anything else (GET /models, an error reply) is passed through as it came.

The relay passes on only what it is sent (no credential of its own), only to its upstream: a
request path that is not absolute is refused (it could move the upstream URL's host), and a
request or reply beyond `MAX_BODY_BYTES` is refused rather than held in memory.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from querybench import json_input

_HOP_HEADERS = {"host", "content-length", "connection", "accept-encoding", "transfer-encoding"}
MAX_BODY_BYTES = 64 << 20  # a chat request or completion far beyond any model's context


def completion_events(completion: dict[str, Any]) -> bytes:
    """A chat completion as the `stream: true` events that carry the same reply."""
    choices = completion.get("choices") or [{}]
    choice = choices[0]
    delta = dict(choice.get("message") or {})
    if "tool_calls" in delta:
        delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(delta["tool_calls"])]
    base: dict[str, Any] = {k: completion[k] for k in ("id", "model", "created") if k in completion}
    base["object"] = "chat.completion.chunk"
    finish = choice.get("finish_reason") or "stop"
    chunks: list[dict[str, Any]] = [
        base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        base | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
    ]
    if completion.get("usage"):
        chunks.append(base | {"choices": [], "usage": completion["usage"]})
    events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
    return "".join(events).encode()


class StreamRelay:
    """`with StreamRelay(upstream) as relay:` serves `relay.url` (an OpenAI base URL) on
    127.0.0.1 for as long as the block runs."""

    def __init__(self, upstream: str, timeout: float = 600.0) -> None:
        self.upstream = upstream.rstrip("/")
        client = httpx.Client(timeout=timeout)
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return None

            def do_GET(self) -> None:
                self._relay("GET", None)

            def do_POST(self) -> None:
                try:
                    length = int(self.headers.get("Content-Length", "0"))
                except ValueError:
                    length = -1
                if not 0 <= length <= MAX_BODY_BYTES:
                    self._refuse(413 if length > 0 else 400, "a request body of unusable length")
                    return
                self._relay("POST", self.rfile.read(length))

            def _refuse(self, status: int, why: str) -> None:
                self.close_connection = True
                self._send(status, json.dumps({"error": {"message": f"relay: {why}"}}).encode())

            def _relay(self, method: str, raw: bytes | None) -> None:
                if not self.path.startswith("/"):
                    self._refuse(400, f"not an absolute path: {self.path[:80]!r}")
                    return
                body: Any = None
                streamed = False
                if raw:
                    try:
                        body = json_input.loads(raw)
                    except ValueError:
                        body = None
                if isinstance(body, dict) and body.get("stream"):
                    streamed = True
                    body = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
                    raw = json.dumps(body).encode()
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                path = self.path.removeprefix("/v1")  # relay.url ends in /v1, upstream its own
                url = relay.upstream + path
                try:
                    with client.stream(method, url, content=raw, headers=headers) as reply:
                        content = _bounded(reply)
                except httpx.HTTPError as exc:
                    self._refuse(502, str(exc))
                    return
                if content is None:
                    self._refuse(502, f"the upstream reply exceeds {MAX_BODY_BYTES} bytes")
                    return
                kind = reply.headers.get("content-type", "application/json")
                if streamed and reply.status_code == 200 and kind.startswith("application/json"):
                    try:
                        events = completion_events(json_input.loads(content))
                    except (ValueError, AttributeError, TypeError):
                        self._send(reply.status_code, content, kind)
                        return
                    self._send(200, events, "text/event-stream")
                    return
                self._send(reply.status_code, content, kind)

            def _send(self, status: int, data: bytes, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._client = client
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{port}/v1"

    def __enter__(self) -> StreamRelay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()


def _bounded(reply: httpx.Response) -> bytes | None:
    """The reply's body, or None past `MAX_BODY_BYTES` (read no further)."""
    parts: list[bytes] = []
    size = 0
    for part in reply.iter_bytes():
        size += len(part)
        if size > MAX_BODY_BYTES:
            return None
        parts.append(part)
    return b"".join(parts)
