"""The loopback relay `vf-run` puts before an endpoint that does not stream: it reaches only its
upstream and holds no unbounded body (`querybench.envs.stream_relay`)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from querybench.envs import stream_relay
from querybench.envs.stream_relay import StreamRelay


class _Upstream:
    """A plain (non-streaming) endpoint that records each request's path and answers with
    `reply_bytes` bytes of JSON."""

    def __init__(self, reply_bytes: int = 0) -> None:
        self.paths: list[str] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return None

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                upstream.paths.append(self.path)
                message = {"role": "assistant", "content": "x" * reply_bytes}
                data = json.dumps({"choices": [{"message": message}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> _Upstream:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _raw(url: str, request: bytes) -> bytes:
    """One HTTP request sent as these bytes; the reply's bytes."""
    host, port = url.removeprefix("http://").split("/", 1)[0].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(request)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setattr(stream_relay, "MAX_BODY_BYTES", 4096)
    yield 4096


def test_a_reply_beyond_the_cap_is_refused_not_held(small_cap: int) -> None:
    with _Upstream(reply_bytes=small_cap * 4) as up, StreamRelay(up.url) as relay:
        body = {"model": "m", "messages": [], "stream": True}
        reply = httpx.post(f"{relay.url}/chat/completions", json=body, timeout=30)
    assert reply.status_code == 502
    assert f"exceeds {small_cap} bytes" in reply.json()["error"]["message"]


def test_a_reply_within_the_cap_is_streamed(small_cap: int) -> None:
    with _Upstream(reply_bytes=100) as up, StreamRelay(up.url) as relay:
        body = {"model": "m", "messages": [], "stream": True}
        reply = httpx.post(f"{relay.url}/chat/completions", json=body, timeout=30)
    assert reply.status_code == 200 and reply.text.endswith("data: [DONE]\n\n")
    assert up.paths == ["/chat/completions"]


def test_a_request_body_beyond_the_cap_or_of_no_length_is_refused(small_cap: int) -> None:
    with _Upstream() as up, StreamRelay(up.url) as relay:
        big = b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n"
        assert _raw(relay.url, big).startswith(b"HTTP/1.1 413")
        bad = b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"
        assert _raw(relay.url, bad).startswith(b"HTTP/1.1 400")
    assert up.paths == []  # nothing reached the upstream


def test_a_path_that_would_move_the_upstream_host_is_refused() -> None:
    # upstream + "@host/..." would make the upstream's host:port a user name and `host` the host
    with _Upstream() as up, StreamRelay(up.url) as relay:
        body = b"{}"
        request = (
            b"POST @127.0.0.1:9/chat/completions HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: 2\r\n\r\n" + body
        )
        reply = _raw(relay.url, request)
    assert reply.startswith(b"HTTP/1.1 400") and b"not an absolute path" in reply
    assert up.paths == []
