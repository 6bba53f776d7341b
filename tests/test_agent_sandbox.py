"""Escapes tried by scripted `Bash` actions: each fails or is stopped, and the run goes on.

Every case drives the agent through the scripted loopback server: the Bash action, then a
Terminate, so "the run continues" is checked by the agent reaching its answer.
"""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from querybench.agent import AgentConfig, AgentResult, Workspace, WorkspaceOptions, run_agent
from querybench.agent.protocol import format_action
from querybench.agent.sandbox import (
    UID_BASE,
    Limits,
    Toolchain,
    run_shell,
    sandbox_drops_privileges,
)
from querybench.engines import connect
from querybench.errors import WorkspaceFull
from querybench.models import Sampling
from tests.conftest import require_sandbox
from tests.methods_fixture import make_data, model, task
from tests.openai_server import Reply, ScriptedServer


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()  # skipped without bwrap, failed under CI=true


LIMITS = Limits(cpu_s=5, memory_bytes=512 * 1024**2, processes=32, file_bytes=1024**2)


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return make_data(tmp_path / "data")


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


def session(
    data: Path,
    server: ScriptedServer,
    actions: list[str],
    *,
    timeout: float = 5.0,
    limits: Limits = LIMITS,
) -> list[str]:
    """The observations of `actions` (protocol text) in one workspace; asserts the agent then
    terminates normally."""
    server.script([Reply(f"Thought: try\nAction: {a}") for a in actions])
    server.script([Reply('Thought: done\nAction: Terminate(output="ok")')])
    engine = connect(data / "spider1" / "shop" / "shop.sqlite")
    options = WorkspaceOptions(action_timeout=timeout, limits=limits)
    workspace = Workspace(task(data, 0), engine, options)
    try:
        result = bounded(lambda: run_agent(workspace, model(server), AgentConfig(), Sampling()))
    finally:
        workspace.close()
    assert result.status == "terminated" and result.answer == "ok"
    return [s.observation for s in result.steps[:-1]]


def bounded(agent: Callable[[], Coroutine[Any, Any, AgentResult]]) -> AgentResult:
    """Run the agent in a thread of its own: a host thread that blocks fails the test (after a
    generous bound) instead of hanging it."""
    done: list[AgentResult | BaseException] = []

    def target() -> None:
        try:
            done.append(asyncio.run(agent()))
        except BaseException as exc:
            done.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(120)
    assert done, "the agent hung (a host thread blocked)"
    if isinstance(done[0], BaseException):
        raise done[0]
    return done[0]


def bash(code: str) -> str:
    return format_action("Bash", code=code)


def bash_then_stop(data: Path, server: ScriptedServer, code: str, timeout: float = 5.0) -> str:
    """The observation of one Bash action; asserts the agent then terminates normally."""
    return session(data, server, [bash(code)], timeout=timeout)[0]


def sandbox_processes() -> list[int]:
    """Processes running as a sandbox uid (none once every action has ended)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            uid = os.stat(f"/proc/{pid}").st_uid
        except FileNotFoundError:
            continue
        if uid >= UID_BASE:
            found.append(int(pid))
    return found


def test_workspace_is_writable_and_kept_between_actions(data: Path, server: ScriptedServer) -> None:
    first, second = session(
        data,
        server,
        [
            bash("echo hi > a.txt && mkdir -p d/e && echo x > d/e/f && cat README.md && pwd"),
            bash("cat a.txt d/e/f"),
        ],
    )
    assert "## Question" in first and first.endswith("/workspace\n")
    assert second == "hi\nx\n"


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
    # bwrap's own network namespace has its loopback up and nothing listening on it
    assert f"/dev/tcp/127.0.0.1/{port}: Connection refused" in out
    assert "CONNECTED" not in out and out.endswith("end\n")


def test_no_host_variable_or_path_reaches_the_sandbox(
    data: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bwrap itself is the sandbox's PID 1: its environment and command line are readable
    there, so they must hold nothing of the host's."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-s3cret-key")
    monkeypatch.setenv("QUERYBENCH_DATA", str(data))
    monkeypatch.setenv("QB_SECRET_TOKEN", "s3cret-token")
    code = (
        "tr '\\0' '\\n' < /proc/1/environ; echo ---; env; cat /proc/self/environ; echo; "
        "tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/self/mountinfo; ls /proc"
    )
    out = bash_then_stop(data, server, code)
    assert "HOME=/workspace" in out and "bwrap" in out and "/workspace" in out
    for leaked in ("sk-s3cret-key", "s3cret-token", "QUERYBENCH", "OPENAI", str(data), "/tmp/"):
        assert leaked not in out, leaked
    environ = out.split("---")[0].splitlines()
    assert sorted(v.split("=")[0] for v in environ) == ["HOME", "LANG", "PATH", "TMPDIR"]


def test_fork_bomb_is_contained(data: Path, server: ScriptedServer) -> None:
    out = bash_then_stop(data, server, "b() { b | b & }; b; sleep 1; echo end", timeout=30.0)
    assert "fork: retry: Resource temporarily unavailable" in out
    deadline = time.monotonic() + 10  # killed processes take a moment to be reaped
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sandbox_processes() == []  # nothing of it outlives the action


def test_huge_file_is_capped(data: Path, server: ScriptedServer) -> None:
    out = bash_then_stop(data, server, "head -c 50000000 /dev/zero > big; stat -c %s big")
    assert "File size limit exceeded" in out and out.endswith(f"\n{1024**2}\n")


def test_long_sleep_is_stopped_and_ends_the_episode(data: Path, server: ScriptedServer) -> None:
    server.script([Reply(f"Thought: wait\nAction: {bash('sleep 60')}")])
    engine = connect(data / "spider1" / "shop" / "shop.sqlite")
    workspace = Workspace(task(data, 0), engine, WorkspaceOptions(action_timeout=1.0))
    try:
        result = bounded(lambda: run_agent(workspace, model(server), AgentConfig(), Sampling()))
    finally:
        workspace.close()
    assert result.status == "action_timeout" and len(result.steps) == 1
    assert "stopped after 1 s" in result.steps[0].observation and result.steps[0].action_s < 30


def test_killing_the_sandbox_keeps_the_workspace_as_it_was(
    data: Path, server: ScriptedServer
) -> None:
    """Killing the copying step (the command's parent) ends the sandbox before the workspace
    is packed out: that command's files are not kept, said so, and the run goes on."""
    first, killed, after = session(
        data,
        server,
        [
            bash("echo kept > before.txt"),
            bash("echo lost > during.txt; kill -9 $PPID; kill -9 1; sleep 5"),
            bash("cat before.txt; ls"),
        ],
    )
    assert first == "(no output)"
    assert killed.endswith(
        "(exit code 137)\nERROR: the sandbox ended before the workspace was saved; the files "
        "this command changed are not kept"
    )
    assert after == "kept\nREADME.md\nbefore.txt\n"


def test_concurrent_sandboxes_each_have_their_own_process_limit() -> None:
    """Linux counts the process limit per uid: a sandbox holding most of it must not leave a
    sandbox of another task unable to start its own processes."""
    if not sandbox_drops_privileges():
        reason = "not root: the sandboxes run as this user, sharing its process count"
        if os.environ.get("CI") == "true":  # CI runs as root: this must run there
            pytest.fail(reason)
        pytest.skip(reason)
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


def host_snapshot(*paths: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of every file under `paths`, to show the host was not touched."""
    files = [p for path in paths for p in [path, *path.rglob("*")] if p.is_file()]
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


def test_links_planted_in_the_sandbox_never_reach_the_host(
    data: Path, server: ScriptedServer, tmp_path: Path
) -> None:
    """The issue's attack: links to a host folder and file, then the host-side actions write
    through them. The links are not carried out of the sandbox (said so), so each action
    writes a new workspace file and the host folder and file stay as they were."""
    host_dir = tmp_path / "host_dir"
    host_dir.mkdir()
    host_file = tmp_path / "host.txt"
    host_file.write_text("host content\n")
    before = host_snapshot(host_dir, host_file)
    gold = data / "spider1" / "dev.json"
    observations = session(
        data,
        server,
        [
            bash(f"ln -s {host_dir} vd; ln -s {host_file} t.txt; ln -s {gold} answer.sql; ls"),
            bash("ls -la vd t.txt answer.sql 2>&1 | wc -l; ls"),
            format_action("CreateFile", filepath="vd/x", code="planted"),
            format_action("EditFile", filepath="t.txt", code="overwritten"),
            format_action("ExecuteSQL", sql_query="SELECT 1", is_save=True, save_path="vd/x.csv"),
            format_action("SampleRows", table="items", save_path="vd/s.json"),
            bash("cat vd/x; ls vd"),
        ],
    )
    planted, listed, create, edit, sql, sample, inside = observations
    assert planted == (
        "README.md\nanswer.sql\nt.txt\nvd\n"
        "note: 3 symbolic links or special files were not kept (the workspace keeps regular "
        "files and folders only)"
    )
    assert listed.startswith("3\nREADME.md\n")  # three "No such file" lines: no link is left
    assert create == "File vd/x created."
    assert edit == "ERROR: t.txt does not exist; use CreateFile"
    assert sql == "Saved 1 rows to vd/x.csv." and sample.startswith("Saved 3 rows")
    assert inside == "planteds.json\nx\nx.csv\n"  # CreateFile writes no final newline
    assert host_snapshot(host_dir, host_file) == before and not list(host_dir.iterdir())


def test_a_fifo_made_in_the_sandbox_blocks_nothing(data: Path, server: ScriptedServer) -> None:
    fifo, sql, read = session(
        data,
        server,
        [
            bash("mkfifo out.csv; ls -l out.csv | cut -c1"),
            format_action(
                "ExecuteSQL", sql_query="SELECT 1 AS a", is_save=True, save_path="out.csv"
            ),
            bash("cat out.csv"),
        ],
    )
    assert fifo.startswith("p\n") and "1 symbolic links or special files were not kept" in fifo
    assert sql == "Saved 1 rows to out.csv." and read == "a\r\n1\r\n"


def test_hard_links_and_nested_namespaces_are_refused(data: Path, server: ScriptedServer) -> None:
    out = bash_then_stop(
        data,
        server,
        "ln /usr/bin/env e; echo link=$?; unshare -U true; echo unshare=$?; "
        "mount -t tmpfs x /workspace; echo mount=$?; echo x > /dev/x; echo dev=$?; "
        "ls /sys /root 2>&1 | wc -l",
    )
    assert "Invalid cross-device link" in out and "link=1" in out
    assert "/dev/x: Read-only file system" in out and "dev=1" in out  # bwrap's /dev tmpfs
    assert "unshare=1" in out and "mount=32" in out and out.endswith("2\n")


SMALL = Limits(
    cpu_s=5,
    memory_bytes=512 * 1024**2,
    processes=32,
    file_bytes=64 * 1024**2,
    tmp_bytes=4 * 1024**2,
    shm_bytes=2 * 1024**2,
    workspace_bytes=8 * 1024**2,
    workspace_files=200,
)


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        # the 12 x 250 MB, scaled: each file is under the per-file cap
        (
            "for i in $(seq 12); do head -c 1000000 /dev/zero > f$i; done",
            "Bash: the workspace reached its size limit of 8 MiB",
        ),
        ("head -c 6000000 /dev/zero > /tmp/fill", "Bash: /tmp reached its size limit of 4 MiB"),
        (
            "head -c 3000000 /dev/zero > /dev/shm/x",
            "Bash: /dev/shm reached its size limit of 2 MiB",
        ),
        (
            "truncate -s 60M sparse",
            "Bash: the workspace holds 60.0 MiB, more than its limit of 8 MiB (sparse files",
        ),
        (
            "touch f{1..300}",
            "Bash: the workspace holds 301 files and folders, more than its limit of 200",
        ),
    ],
)
def test_disk_bounds_end_the_task_with_the_reason(
    code: str, reason: str, data: Path, server: ScriptedServer
) -> None:
    server.script([Reply(f"Thought: fill\nAction: {bash(code)}")])
    engine = connect(data / "spider1" / "shop" / "shop.sqlite")
    workspace = Workspace(task(data, 0), engine, WorkspaceOptions(limits=SMALL))
    try:
        with pytest.raises(WorkspaceFull) as raised:
            asyncio.run(run_agent(workspace, model(server), AgentConfig(), Sampling()))
        held = sum(p.stat().st_size for p in workspace.path.rglob("*") if p.is_file())
        assert held < 1024**2  # the host folder never took the command's bytes
    finally:
        workspace.close()
    assert str(raised.value).startswith(reason)
