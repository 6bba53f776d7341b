"""A real HTTP file server on 127.0.0.1 for download tests: Range, cuts, error statuses."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest


class FileHandler(BaseHTTPRequestHandler):
    """Serves `files`; honours Range; `cut_after[path]` bytes, then drops the connection once."""

    files: ClassVar[dict[str, bytes]] = {}
    cut_after: ClassVar[dict[str, int]] = {}
    status: ClassVar[dict[str, int]] = {}
    ranges: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        self.ranges.append(self.headers.get("Range"))
        if self.path in self.status:
            self.send_error(self.status[self.path])
            return
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = 0
        requested = self.headers.get("Range")
        if requested and requested.startswith("bytes="):
            start = int(requested.removeprefix("bytes=").split("-")[0])
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        cut = self.cut_after.pop(self.path, None)
        if cut is not None:
            self.wfile.write(body[start : start + cut])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)  # promised more, sent less
            return
        self.wfile.write(body[start:])

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    """The base URL of a fresh server over `FileHandler.files` (reset for every test)."""
    FileHandler.files, FileHandler.cut_after, FileHandler.status, FileHandler.ranges = (
        {},
        {},
        {},
        [],
    )
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FileHandler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
