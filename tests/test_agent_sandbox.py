"""Escapes tried by scripted `Bash` actions: each fails or is stopped, and the run goes on.

Every case drives the agent through the scripted loopback server: the Bash action, then a
Terminate, so "the run continues" is checked by the agent reaching its answer.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from querybench.agent import AgentConfig, AgentResult, Workspace, WorkspaceOptions, run_agent
from querybench.agent.protocol import format_action
from querybench.agent.sandbox import (
    Limits,
    Toolchain,
    run_shell,
    sandbox_available,
    sandbox_drops_privileges,
)
from querybench.engines import connect
from querybench.models import Sampling
from tests.methods_fixture import make_data, model, task
from tests.openai_server import Reply, ScriptedServer


def _bwrap_works() -> bool:
    try:
        probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"], capture_output=True)
    except OSError:
        return False
    return probe.returncode == 0 and sandbox_available()


pytestmark = pytest.mark.skipif(
    not _bwrap_works(), reason="bwrap is missing or cannot create namespaces in this container"
)
LIMITS = Limits(cpu_s=5, memory_bytes=512 * 1024**2, processes=32, file_bytes=1024**2)


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return make_data(tmp_path / "data")


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


def bash_then_stop(data: Path, server: ScriptedServer, code: str, timeout: float = 5.0) -> str:
    """The observation of one Bash action; asserts the agent then terminates normally."""
    server.script(
        [
            Reply(f"Thought: try\nAction: {format_action('Bash', code=code)}"),
            Reply('Thought: done\nAction: Terminate(output="ok")'),
        ]
    )
    engine = connect(data / "spider1" / "shop" / "shop.sqlite")
    options = WorkspaceOptions(action_timeout=timeout, limits=LIMITS)
    workspace = Workspace(task(data, 0), engine, options)
    try:
        result: AgentResult = asyncio.run(
            run_agent(workspace, model(server), AgentConfig(), Sampling())
        )
    finally:
        workspace.close()
    assert result.status == "terminated" and result.answer == "ok"
    return result.steps[0].observation


def test_workspace_is_writable(data: Path, server: ScriptedServer) -> None:
    out = bash_then_stop(data, server, "echo hi > a.txt && cat a.txt README.md && pwd")
    assert "hi" in out and "## Question" in out and "/workspace" in out


def test_cannot_read_secrets(data: Path, server: ScriptedServer) -> None:
    out = bash_then_stop(data, server, "cat /etc/shadow; ls ~/.ssh /root; echo end")
    assert "root:" not in out and "No such file" in out and out.strip().endswith("end")


def test_cannot_see_checkout_or_data(data: Path, server: ScriptedServer) -> None:
    checkout = Path(__file__).resolve().parents[1]
    out = bash_then_stop(data, server, f"ls {checkout} {data}; cat {data}/spider1/dev.json")
    assert "No such file" in out and "SELECT" not in out


def test_cannot_write_outside(data: Path, server: ScriptedServer, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    out = bash_then_stop(data, server, f"echo x > /usr/escaped; echo x > {target}; echo end")
    assert "Read-only file system" in out
    assert not target.exists() and not Path("/usr/escaped").exists()


def test_no_network_to_loopback_services(data: Path, server: ScriptedServer) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        code = f"echo hi > /dev/tcp/127.0.0.1/{port} && echo CONNECTED; echo end"
        out = bash_then_stop(data, server, code)
    finally:
        listener.close()
    assert "CONNECTED" not in out and "end" in out


def test_clean_environment(
    data: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QB_SECRET_TOKEN", "s3cret")
    out = bash_then_stop(data, server, "env")
    assert "s3cret" not in out and "HOME=/workspace" in out


def test_fork_bomb_is_contained(data: Path, server: ScriptedServer) -> None:
    out = bash_then_stop(data, server, "b() { b | b & }; b; sleep 1; echo end", timeout=4.0)
    assert "stopped after" in out or "Resource temporarily unavailable" in out


def test_huge_file_is_capped(data: Path, server: ScriptedServer) -> None:
    out = bash_then_stop(data, server, "head -c 50000000 /dev/zero > big; ls -l big")
    assert "File size limit exceeded" in out or "exit code" in out


def test_long_sleep_is_stopped(data: Path, server: ScriptedServer) -> None:
    out = bash_then_stop(data, server, "sleep 60", timeout=1.0)
    assert "stopped after 1 s" in out


def test_killing_the_parent_does_not_escape(data: Path, server: ScriptedServer) -> None:
    out = bash_then_stop(data, server, "kill -9 $PPID; kill -9 1; echo still-here")
    assert "still-here" in out or "exit code" in out


def test_concurrent_sandboxes_each_have_their_own_process_limit() -> None:
    """Linux counts the process limit per uid: a sandbox holding most of it must not leave a
    sandbox of another task unable to start its own processes."""
    if not sandbox_drops_privileges():
        pytest.skip("not root: the sandboxes run as this user, sharing its process count")
    limits = Limits(cpu_s=5, memory_bytes=512 * 1024**2, processes=26, file_bytes=1024**2)
    busy = "for i in $(seq 20); do sleep 3 & done; id -u; wait"
    second = "sleep 0.5; for i in $(seq 12); do sleep 0.2 & done; wait; id -u; echo ok"
    with (
        tempfile.TemporaryDirectory() as a,
        tempfile.TemporaryDirectory() as b,
        ThreadPoolExecutor(2) as pool,
    ):
        first = pool.submit(run_shell, Path(a), busy, timeout=20, limits=limits)
        other = pool.submit(run_shell, Path(b), second, timeout=20, limits=limits)
        one, two = first.result(), other.result()
    assert one.returncode == 0 and two.returncode == 0, (one.output, two.output)
    assert "ok" in two.output
    assert one.output.split()[0] != two.output.split()[0]  # two uids


def test_a_toolchain_under_tmp_is_visible_read_only() -> None:
    """A toolchain mount (as dbt's environment is) that lives under /tmp must not be hidden
    by the sandbox's private /tmp, and stays read-only."""
    with tempfile.TemporaryDirectory() as tools, tempfile.TemporaryDirectory() as workspace:
        program = Path(tools) / "bin" / "hello"
        program.parent.mkdir()
        program.write_text("#!/bin/sh\necho hello from $0\n")
        program.chmod(0o755)
        Path(tools).chmod(0o755)
        toolchain = Toolchain(program.parent, (Path(tools),), (("GREETING", "hi"),))
        code = f"hello; echo $GREETING; touch {tools}/planted; echo touch=$?"
        result = run_shell(Path(workspace), code, timeout=20, limits=Limits(), toolchain=toolchain)
        assert f"hello from {program}" in result.output, result.output
        assert "hi\n" in result.output and "touch=1" in result.output
        assert not (Path(tools) / "planted").exists()
