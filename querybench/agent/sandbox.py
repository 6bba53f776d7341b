"""Shell commands of the agent, run under bubblewrap with the workspace as the only writable path.

The sandbox sees read-only system directories (`/usr` and the merged-usr links), a private
`/tmp`, `/proc` and `/dev`, the workspace at `/workspace`, and nothing else: no `/etc/shadow`,
no home, no checkout, no gold files. It has no network (`--unshare-all` includes the network
namespace, so even loopback services of the host are out of reach), a clean environment, its
own PID namespace (killing bwrap kills everything it started) and `--die-with-parent`.
Run as root, it drops to `nobody` first, so the process-count limit really counts.
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
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534
MOUNT_POINT = "/workspace"
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin", "/etc/alternatives")
ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/mime.types")


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 60
    memory_bytes: int = 2 * 1024**3
    processes: int = 64
    file_bytes: int = 256 * 1024**2
    output_bytes: int = 1024**2  # what is read back of stdout + stderr


@dataclass(frozen=True)
class ShellResult:
    output: str
    returncode: int | None  # None: stopped at the time limit
    timed_out: bool = False
    sandboxed: bool = True


def _drop_privileges() -> list[str]:
    if os.geteuid() == 0 and shutil.which("setpriv"):
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return []


def sandbox_drops_privileges() -> bool:
    """Whether shell commands run as `nobody` (everything they use must be world-readable)."""
    return bool(_drop_privileges())


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
    for mount in toolchain.mounts if toolchain else ():
        cmd += ["--ro-bind", str(mount), str(mount)]
    cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
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
    probe = [*_drop_privileges(), "bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def prepare_workspace(workspace: Path) -> None:
    """Let the unprivileged sandbox user write the workspace."""
    if _drop_privileges():
        for path in [workspace, *workspace.rglob("*")]:
            os.chown(path, NOBODY, NOBODY, follow_symlinks=False)


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
    env = None
    if sandboxed:
        prepare_workspace(workspace)
        cmd = [*_limits(limits), *_drop_privileges(), *bwrap_command(workspace, code, toolchain)]
        cwd = None
    else:
        cmd = [*_limits(limits), "/bin/bash", "-c", code]
        cwd = workspace
        if toolchain is not None:
            env = {**os.environ, **dict(toolchain.env)}
            env["PATH"] = f"{toolchain.bin_dir}:{env.get('PATH', '')}"
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
