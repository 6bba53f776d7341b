"""Shell commands of the agent, run under bubblewrap with the workspace as the only writable path.

The sandbox sees read-only system directories (`/usr` and the merged-usr links), a private
`/tmp`, `/proc` and `/dev`, the workspace at `/workspace`, and nothing else: no `/etc/shadow`,
no home, no checkout, no gold files. It has no network (`--unshare-all` includes the network
namespace, so even loopback services of the host are out of reach), a clean environment, its
own PID namespace (killing bwrap kills everything it started) and `--die-with-parent`.
Run as root, it drops to an unprivileged uid of its own first (one per sandbox running at the
same time, so the process-count limit, which Linux counts per uid, is each sandbox's own and a
busy task cannot starve another's).
CPU time, address space, process count and file size are capped with `prlimit`; stdout and
stderr go to a file outside the workspace, so a flood of output stops at the file-size cap.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534  # the probe's user
# Uids of sandboxes: above account, dynamic-user and container (systemd-nspawn) ranges, below
# 2**31; `pid * SLOTS + slot` so that concurrent processes (Ray workers) rarely share one.
UID_BASE = 2_000_000_000
SLOTS = 100
_slot_lock = threading.Lock()
_slots_in_use: set[int] = set()
MOUNT_POINT = "/workspace"
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin", "/etc/alternatives")
ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/mime.types")


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 60
    memory_bytes: int = 2 * 1024**3
    processes: int = 256  # threads count too: dbt with DuckDB starts one per core
    file_bytes: int = 256 * 1024**2
    output_bytes: int = 1024**2  # what is read back of stdout + stderr


@dataclass(frozen=True)
class ShellResult:
    output: str
    returncode: int | None  # None: stopped at the time limit
    timed_out: bool = False
    sandboxed: bool = True


def sandbox_drops_privileges() -> bool:
    """Whether shell commands run as an unprivileged uid (what they use must be world-readable)."""
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


def _drop_privileges(uid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


@contextlib.contextmanager
def _sandbox_uid() -> Iterator[int | None]:
    """A uid no other sandbox of this process is using (None: not root, nothing to drop)."""
    if not sandbox_drops_privileges():
        yield None
        return
    with _slot_lock:
        slot = next((i for i in range(SLOTS) if i not in _slots_in_use), SLOTS - 1)
        _slots_in_use.add(slot)
    try:
        yield UID_BASE + (os.getpid() % 1_000_000) * SLOTS + slot
    finally:
        with _slot_lock:
            _slots_in_use.discard(slot)


def _limits(limits: Limits) -> list[str]:
    return [
        "prlimit",
        f"--cpu={limits.cpu_s}",
        f"--as={limits.memory_bytes}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_bytes}",
        "--core=0",
        "--",
    ]


@dataclass(frozen=True)
class Toolchain:
    """Programs offered besides the system's: `bin_dir` goes first on `PATH`, each of `mounts`
    is bound read-only at its own path (venv scripts name their Python by path), `env` is added
    to the clean environment."""

    bin_dir: Path
    mounts: tuple[Path, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


def bwrap_command(workspace: Path, code: str, toolchain: Toolchain | None = None) -> list[str]:
    cmd = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
    for path in ETC_FILES:
        cmd += ["--ro-bind-try", path, path]
    cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    # after the private /tmp, which would hide a toolchain that lives under /tmp
    for mount in toolchain.mounts if toolchain else ():
        cmd += ["--ro-bind", str(mount), str(mount)]
    cmd += ["--bind", str(workspace), MOUNT_POINT, "--chdir", MOUNT_POINT]
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": MOUNT_POINT,
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
    }
    if toolchain is not None:
        env["PATH"] = f"{toolchain.bin_dir}:{env['PATH']}"
        env.update(toolchain.env)
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    return [*cmd, "--", "/bin/bash", "-c", code]


@functools.cache
def sandbox_available() -> bool:
    """bwrap is installed and can create its namespaces here (as the user it will run as)."""
    if not (shutil.which("bwrap") and shutil.which("prlimit")):
        return False
    drop = _drop_privileges(NOBODY) if sandbox_drops_privileges() else []
    probe = [*drop, "bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def prepare_workspace(workspace: Path, uid: int) -> None:
    """Let the unprivileged sandbox user write the workspace."""
    for path in [workspace, *workspace.rglob("*")]:
        os.chown(path, uid, uid, follow_symlinks=False)


def run_shell(
    workspace: Path,
    code: str,
    *,
    timeout: float,
    limits: Limits,
    sandboxed: bool = True,
    toolchain: Toolchain | None = None,
) -> ShellResult:
    """Run `code` with bash; sandboxed unless the caller allowed the unsafe way explicitly."""
    if not sandboxed:
        env = {**os.environ}
        if toolchain is not None:
            env.update(toolchain.env)
            env["PATH"] = f"{toolchain.bin_dir}:{env.get('PATH', '')}"
        cmd = [*_limits(limits), "/bin/bash", "-c", code]
        return _run(cmd, workspace, env, timeout, limits, sandboxed=False)
    with _sandbox_uid() as uid:
        drop = []
        if uid is not None:
            prepare_workspace(workspace, uid)
            drop = _drop_privileges(uid)
        cmd = [*_limits(limits), *drop, *bwrap_command(workspace, code, toolchain)]
        return _run(cmd, None, None, timeout, limits, sandboxed=True)


def _run(
    cmd: list[str],
    cwd: Path | None,
    env: dict[str, str] | None,
    timeout: float,
    limits: Limits,
    *,
    sandboxed: bool,
) -> ShellResult:
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        try:
            returncode: int | None = proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            returncode, timed_out = None, True
        out.seek(0)
        data = out.read(limits.output_bytes)
    return ShellResult(data.decode("utf-8", "replace"), returncode, timed_out, sandboxed)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
