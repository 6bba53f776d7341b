"""Failures of a run said out loud: one writer per run folder (a real second process is refused,
a SIGKILLed one loses nothing), the endpoint checked before the first task, a run stopped when
the endpoint goes down, and transport failures retried on resume."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.errors import DataError, EndpointUnavailable, RunFolderBusy
from querybench.runs.config import Execution, Selection
from querybench.runs.runner import run
from querybench.runs.store import RecordStore, RunLock
from tests.openai_server import Fault, Reply, ScriptedServer
from tests.test_run_harness import QUESTIONS, _config, _lines, _model, answering, data

__all__ = ["data"]  # the fixture, shared with test_run_harness
ROOT = Path(__file__).resolve().parent.parent


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cli(data: Path, out: Path, base_url: str, *extra: str) -> list[str]:
    return [
        "run",
        "spider1",
        "--model",
        "scripted",
        "--base-url",
        base_url,
        "--out",
        str(out),
        "--no-cache",
        "--max-retries",
        "1",
        *extra,
    ]


def _env(data: Path, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "QUERYBENCH_DATA": str(data),
        "QUERYBENCH_CACHE": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT),
        "OPENAI_API_KEY": "test",
    }


def _slow(body: dict[str, Any]) -> Reply:
    time.sleep(0.4)
    return answering(body)


@pytest.fixture()
def slow_server() -> Iterator[ScriptedServer]:
    with ScriptedServer(default=_slow) as s:
        yield s


def _spawn(data: Path, tmp_path: Path, out: Path, url: str) -> subprocess.Popen[bytes]:
    code = "from querybench.cli import main; main()"
    args = [sys.executable, "-c", code, *_cli(data, out, url, "--workers", "1")]
    return subprocess.Popen(
        args, env=_env(data, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _wait_for(condition: Any, what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def _stop_after(proc: subprocess.Popen[bytes], out: Path, records: int, sig: signal.Signals) -> str:
    """Send `sig` to a spawned run once it has `records` records; its stderr."""
    path = out / "records.jsonl"

    def enough() -> bool:
        return path.is_file() and path.read_text().count("\n") >= records

    try:
        _wait_for(enough, f"{records} records")
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    return err.decode()


def _each_task_once(out: Path) -> bool:
    ids = [line["instance_id"] for line in _lines(out)]
    return sorted(ids) == [str(i) for i in range(len(QUESTIONS))]


def test_second_run_on_a_folder_fails_at_once_naming_the_holder(
    data: Path, slow_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUERYBENCH_DATA", str(data))
    out = tmp_path / "run"
    first = _spawn(data, tmp_path, out, slow_server.url)
    try:
        _wait_for(lambda: len(slow_server.requests) >= 1, "the first run's first request")
        started = time.monotonic()
        second = CliRunner().invoke(app, _cli(data, out, slow_server.url))
        assert time.monotonic() - started < 30  # did not wait for the first run
        assert second.exit_code == 2, second.output
        said = " ".join(second.output.split())
        assert f"pid {first.pid}" in said and "in use by another querybench run" in said
        assert first.wait(timeout=120) == 0, first.stderr.read() if first.stderr else ""
    finally:
        first.kill()
        first.wait()
    assert _each_task_once(out)  # by one writer
    results = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sum(r["score"] for r in results) == len(QUESTIONS)


def test_ctrl_c_then_sigkill_mid_run_lose_nothing_and_resume_finishes_each_task_once(
    data: Path, slow_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUERYBENCH_DATA", str(data))
    out = tmp_path / "run"
    proc = _spawn(data, tmp_path, out, slow_server.url)
    err = _stop_after(proc, out, 1, signal.SIGINT)
    assert proc.returncode == 130
    said = " ".join(err.split())
    kept = len(RecordStore(out).load())
    assert f"interrupted: {kept} of {len(QUESTIONS)} finished instances are kept" in said
    assert "run the same command again to resume" in said
    # the same command again, killed outright this time: the kernel frees its lock
    proc = _spawn(data, tmp_path, out, slow_server.url)
    _stop_after(proc, out, kept + 1, signal.SIGKILL)
    done = RecordStore(out).load()
    assert kept < len(done) < len(QUESTIONS) and all(r.ok for r in done.values())
    again = CliRunner().invoke(app, _cli(data, out, slow_server.url, "--workers", "2"))
    assert again.exit_code == 0, again.output
    assert _each_task_once(out)
    results = {
        r["instance_id"]: r
        for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())
    }
    assert [results[str(i)]["score"] for i in range(len(QUESTIONS))] == [1.0] * len(QUESTIONS)


def test_run_lock_refuses_a_second_holder_and_frees_on_exit(tmp_path: Path) -> None:
    busy = pytest.raises(RunFolderBusy, match=f"pid {os.getpid()}")
    with RunLock(tmp_path / "r"), busy, RunLock(tmp_path / "r"):
        pass
    with RunLock(tmp_path / "r"):  # released: taken again
        pass
    (tmp_path / "file").write_text("x")
    with (
        pytest.raises(DataError, match="as a run folder: a file, not a folder"),
        RunLock(tmp_path / "file"),
    ):
        pass


def test_unreachable_endpoint_stops_before_the_first_task(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUERYBENCH_DATA", str(data))
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    started = time.monotonic()
    result = CliRunner().invoke(app, _cli(data, out, url))
    assert time.monotonic() - started < 30
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "cannot reach the model endpoint" in text and "127.0.0.1" in text
    assert "refused" in text.lower() and "nothing was run" in text
    assert RecordStore(out).load() == {}
    # nothing left behind: it was config.json, run.lock and sessions.jsonl
    assert not out.exists() or list(out.iterdir()) == []


def test_refused_key_and_unknown_model_stop_with_status_and_message(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer(models=Fault(401)) as locked:
        said = r"refused the API key \(no API key was sent: \$OPENAI_API_KEY is not set\)"
        with pytest.raises(EndpointUnavailable, match=said + r": HTTP 401: scripted fault"):
            run(_config(data, tmp_path / "a"), model=_model(locked))
        assert locked.requests == []  # no task was sent
    with ScriptedServer(models=("other-model",)) as wrong:
        wrong.script([Fault(404)])  # the one-token probe by name: the model is not served
        with pytest.raises(EndpointUnavailable, match=r"'scripted'.*other-model.*HTTP 404"):
            run(_config(data, tmp_path / "b"), model=_model(wrong))
        assert len(wrong.requests) == 1
    with ScriptedServer(default=answering, models=("scripted",)) as right:
        outcome = run(_config(data, tmp_path / "c", Selection(ids=("0",))), model=_model(right))
        assert right.model_listings == 1 and outcome.summary["correct"] == 1
    assert RecordStore(tmp_path / "a").load() == {} == RecordStore(tmp_path / "b").load()


def test_consecutive_transport_failures_stop_the_run_and_resume_retries_them(
    data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    with ScriptedServer(default=answering) as flaky:
        flaky.script([Reply("```sql\nSELECT 1\n```")] + [Fault(503)] * 40)
        config = _config(data, out, execution=Execution(workers=1, max_consecutive_failures=3))
        with pytest.raises(EndpointUnavailable, match="3 tasks in a row") as caught:
            run(config, model=_model(flaky))
    assert "HTTP 503" in str(caught.value)
    kept = RecordStore(out).load()
    assert len(kept) == 4 and sum(r.transient for r in kept.values()) == 3
    with ScriptedServer(default=answering) as up:
        outcome = run(_config(data, out, execution=Execution(workers=1)), model=_model(up))
        assert len(up.requests) == 5  # the 3 transport failures and the 2 never tried
    assert outcome.complete and outcome.summary["correct"] == 5  # task 0 kept its SELECT 1


def test_the_default_endpoint_unreachable_names_the_key_and_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # no --base-url, no network: it said `connection failed at api.openai.com: Unknown error -2`
    import asyncio
    import socket

    import httpx

    from querybench.models import OpenAICompatibleModel

    async def no_network(self: httpx.AsyncClient, url: str, **kw: Any) -> httpx.Response:
        error = httpx.ConnectError("[Errno -2] Name or service not known")
        error.__cause__ = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        raise error

    monkeypatch.setattr(httpx.AsyncClient, "get", no_network)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = OpenAICompatibleModel("gpt-4o-mini")
    with pytest.raises(EndpointUnavailable) as caught:
        asyncio.run(model.preflight())
    said = str(caught.value)
    assert "cannot resolve the host name (Name or service not known)" in said
    assert "$OPENAI_API_KEY is not set" in said and "--base-url" in said
    assert "Unknown error" not in said
    other = OpenAICompatibleModel("m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(EndpointUnavailable) as local:
        asyncio.run(other.preflight())
    assert "--base-url" not in str(local.value)  # a server the user named: no such hint
