"""`querybench data fetch` against a real HTTP server on 127.0.0.1 (no other network)."""

from __future__ import annotations

import hashlib
import io
import json
import socket
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from querybench import fetch as fetch_module
from querybench.cli import app
from querybench.fetch import FetchError, Source, download, fetch, unpack


class _Handler(BaseHTTPRequestHandler):
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
    _Handler.files, _Handler.cut_after, _Handler.status, _Handler.ranges = {}, {}, {}, []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _archive() -> bytes:
    """A small Spider-1.0-like release: spider_data/dev.json plus padding to span many chunks."""
    buffer = io.BytesIO()
    entry = {"db_id": "d", "question": "How many?", "query": "SELECT count(*) FROM t"}
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("spider_data/dev.json", json.dumps([entry]))
        zf.writestr("spider_data/database/d/notes.txt", bytes(range(256)) * 2000)
    return buffer.getvalue()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_full_download_verified(server: str, tmp_path: Path) -> None:
    data = _archive()
    _Handler.files["/a.zip"] = data
    seen: list[tuple[int, int | None]] = []
    path = download(
        f"{server}/a.zip",
        tmp_path / "a.zip",
        sha256=_sha(data),
        on_progress=lambda done, total: seen.append((done, total)),
    )
    assert path.read_bytes() == data
    assert seen[-1] == (len(data), len(data))
    assert not (tmp_path / "a.zip.part").exists()
    # already there and verified: no second request
    download(f"{server}/a.zip", tmp_path / "a.zip", sha256=_sha(data))
    assert len(_Handler.ranges) == 1


def test_resume_after_a_cut(server: str, tmp_path: Path) -> None:
    data = _archive()
    _Handler.files["/a.zip"] = data
    _Handler.cut_after["/a.zip"] = 100_000
    with pytest.raises(FetchError, match=r"cut after 100000 bytes.*run again to resume"):
        download(f"{server}/a.zip", tmp_path / "a.zip", sha256=_sha(data), retries=0)
    assert (tmp_path / "a.zip.part").stat().st_size == 100_000
    path = download(f"{server}/a.zip", tmp_path / "a.zip", sha256=_sha(data))
    assert path.read_bytes() == data
    assert _Handler.ranges == [None, "bytes=100000-"]


def test_a_cut_is_resumed_within_one_call(server: str, tmp_path: Path) -> None:
    data = _archive()
    _Handler.files["/a.zip"] = data
    _Handler.cut_after["/a.zip"] = 4096
    assert download(f"{server}/a.zip", tmp_path / "a.zip", retries=1).read_bytes() == data
    assert _Handler.ranges == [None, "bytes=4096-"]


def test_checksum_mismatch(server: str, tmp_path: Path) -> None:
    _Handler.files["/a.zip"] = _archive()
    with pytest.raises(FetchError, match=r"checksum mismatch .* expected sha256 0{64}, got "):
        download(f"{server}/a.zip", tmp_path / "a.zip", sha256="0" * 64)
    assert not (tmp_path / "a.zip").exists() and not (tmp_path / "a.zip.part").exists()


def test_refused_connection(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(FetchError, match=rf"cannot connect to 127.0.0.1:{port}.*offline"):
        download(f"http://127.0.0.1:{port}/a.zip", tmp_path / "a.zip")


def test_host_refusing_with_an_http_error(server: str, tmp_path: Path) -> None:
    _Handler.status["/a.zip"] = 403
    with pytest.raises(FetchError, match=r"127.0.0.1:\d+ refused .*HTTP 403"):
        download(f"{server}/a.zip", tmp_path / "a.zip")


def test_unpack_refuses_escaping_members(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../outside.txt", "x")
    with pytest.raises(FetchError, match="would unpack outside"):
        unpack(archive, tmp_path / "out")
    (tmp_path / "page.zip").write_text("<html>quota exceeded</html>")
    with pytest.raises(FetchError, match="neither a zip nor a tar"):
        unpack(tmp_path / "page.zip", tmp_path / "out")


def _serve_spider1(server: str, monkeypatch: pytest.MonkeyPatch) -> bytes:
    data = _archive()
    _Handler.files["/spider_data.zip"] = data
    source = Source(
        "spider_data.zip", f"{server}/spider_data.zip", _sha(data), "spider1", "spider_data"
    )
    monkeypatch.setitem(fetch_module.SOURCES, "spider1", (source,))
    return data


def test_fetch_unpacks_where_the_loader_reads(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from querybench.tasks import load_tasks

    _serve_spider1(server, monkeypatch)
    (folder,) = fetch("spider1", tmp_path)
    assert folder == tmp_path / "spider1"
    assert (folder / "database" / "d" / "notes.txt").stat().st_size == 512_000
    (task,) = load_tasks("spider1", data_dir=tmp_path)
    assert task.question == "How many?"


def test_cli_fetch_and_errors(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _serve_spider1(server, monkeypatch)
    runner = CliRunner()
    result = runner.invoke(app, ["data", "fetch", "spider1", "--to", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"unpacked into {tmp_path / 'spider1'}" in result.output
    assert (tmp_path / "spider1" / "dev.json").is_file()

    _Handler.status["/spider_data.zip"] = 503
    (tmp_path / ".downloads" / "spider_data.zip").unlink()
    result = runner.invoke(app, ["data", "fetch", "spider1", "--to", str(tmp_path)])
    assert result.exit_code == 2
    assert "HTTP 503" in result.output

    result = runner.invoke(app, ["data", "fetch", "spider9", "--to", str(tmp_path)])
    assert result.exit_code == 2 and "nothing to fetch for 'spider9'" in result.output


def test_official_sources_table() -> None:
    for benchmark in (
        "spider2-lite",
        "spider2-snow",
        "spider2-dbt",
        "bird",
        "bird-mini-dev",
        "spider1",
    ):
        sources = fetch_module.SOURCES[benchmark]
        assert sources and all(s.url.startswith("https://") for s in sources)
    assert any("xlang-ai/Spider2" in s.url for s in fetch_module.SOURCES["spider2-lite"])


def test_cli_data_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYBENCH_DATA", str(tmp_path))
    result = CliRunner().invoke(app, ["data", "path"])
    assert result.exit_code == 0
    first, second = result.output.splitlines()
    assert first == f"* {tmp_path}  [$QUERYBENCH_DATA]"
    assert second.endswith("[user data dir]")
