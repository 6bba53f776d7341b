"""A loopback relay that streams for an OpenAI-compatible endpoint that does not.

verifiers' harness asks every chat completion with `stream: true` and reads the reply as
server-sent events; an endpoint that ignores `stream` answers with one JSON completion, and
every task then fails with "upstream stream ended before its terminal event". `vf-run` puts
this relay in front of such an endpoint: each request is sent on without `stream`, and the
JSON completion that comes back is served as the event stream a streaming endpoint sends (one
delta chunk with the whole message, one with the finish reason, the usage, then `[DONE]`).
Anything else (GET /models, an error reply) is passed through as it came.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

_HOP_HEADERS = {"host", "content-length", "connection", "accept-encoding", "transfer-encoding"}


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
                length = int(self.headers.get("Content-Length", "0"))
                self._relay("POST", self.rfile.read(length))

            def _relay(self, method: str, raw: bytes | None) -> None:
                body: Any = None
                streamed = False
                if raw:
                    try:
                        body = json.loads(raw)
                    except ValueError:
                        body = None
                if isinstance(body, dict) and body.get("stream"):
                    streamed = True
                    body = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
                    raw = json.dumps(body).encode()
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                path = self.path.removeprefix("/v1")  # relay.url ends in /v1, upstream its own
                try:
                    reply = client.request(
                        method, relay.upstream + path, content=raw, headers=headers
                    )
                except httpx.HTTPError as exc:
                    message = json.dumps({"error": {"message": f"relay: {exc}"}}).encode()
                    self._send(502, message, "application/json")
                    return
                kind = reply.headers.get("content-type", "application/json")
                if streamed and reply.status_code == 200 and kind.startswith("application/json"):
                    try:
                        events = completion_events(reply.json())
                    except (ValueError, AttributeError, TypeError):
                        self._send(reply.status_code, reply.content, kind)
                        return
                    self._send(200, events, "text/event-stream")
                    return
                self._send(reply.status_code, reply.content, kind)

            def _send(self, status: int, data: bytes, kind: str) -> None:
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
