"""Shell commands of the agent, run under bubblewrap, on a copy of the workspace.

The sandbox sees read-only system directories (`/usr` and the merged-usr links), a private
`/tmp`, `/proc` and `/dev`, the workspace at `/workspace`, and nothing else: no `/etc/shadow`,
no home, no checkout, no data or gold folder, no host path at all (bwrap's own options come
through `--args`, and bwrap itself, the sandbox's PID 1, starts with the sandbox's environment
only). It has no network (`--unshare-all` includes the network namespace, so even loopback
services of the host are out of reach), its own PID namespace (killing bwrap kills everything
it started) and `--die-with-parent`.

`/workspace` and `/tmp` are tmpfs mounts of a bounded size (`Limits.workspace_bytes`,
`tmp_bytes`): the kernel refuses a write past either bound, and hitting one ends the task
(`WorkspaceFull`). The host folder is never mounted: it is packed in through a pipe,
and when the command ends what it left is packed out and replaces the host folder, regular
files and folders only (no symbolic link, FIFO, device or hard link ever reaches the host).
A command stopped at its time limit, or one that kills the copying step, keeps nothing.

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
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from querybench.agent import files
from querybench.agent.files import MOUNT_POINT
from querybench.errors import UnsafeArchive, WorkspaceFull

NOBODY = 65534  # the probe's user
# Uids of sandboxes: above account, dynamic-user and container (systemd-nspawn) ranges, below
# 2**31; `pid * SLOTS + slot` so that concurrent processes (Ray workers) rarely share one.
UID_BASE = 2_000_000_000
SLOTS = 100
_slot_lock = threading.Lock()
_slots_in_use: set[int] = set()
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin", "/etc/alternatives")
ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/mime.types")
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": MOUNT_POINT,
    "LANG": "C.UTF-8",
    "TMPDIR": "/tmp",
}


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 60
    memory_bytes: int = 2 * 1024**3
    processes: int = 256  # threads count too: dbt with DuckDB starts one per core
    file_bytes: int = 256 * 1024**2
    output_bytes: int = 1024**2  # what is read back of stdout + stderr
    tmp_bytes: int = 512 * 1024**2  # the sandbox's /tmp (a tmpfs: host memory)
    shm_bytes: int = 64 * 1024**2  # the sandbox's /dev/shm (a tmpfs too)
    workspace_bytes: int = 1024**3  # the workspace, in the sandbox a tmpfs of this size
    workspace_files: int = 20_000  # files and folders of the workspace


@dataclass(frozen=True)
class ShellResult:
    output: str
    returncode: int | None  # None: stopped at the time limit
    timed_out: bool = False
    sandboxed: bool = True
    note: str = ""  # what happened to the workspace's files, when not simply kept


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


def bwrap_options(toolchain: Toolchain | None, limits: Limits) -> list[str]:
    """bwrap's options (passed through `--args`, so its command line, which the sandbox can
    read at /proc/1/cmdline, names no host path)."""
    cmd = ["--unshare-all", "--unshare-user", "--disable-userns"]  # no namespace of its own
    cmd += ["--die-with-parent", "--new-session", "--clearenv"]
    cmd += ["--hostname", "sandbox"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
    for path in ETC_FILES:
        cmd += ["--ro-bind-try", path, path]
    # bwrap's /dev is a tmpfs of no bound the sandbox could write: read-only, with a bounded
    # /dev/shm (POSIX semaphores, which Python's multiprocessing and so dbt use, live there)
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    cmd += ["--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    cmd += ["--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    # after the private /tmp, which would hide a toolchain that lives under /tmp
    for mount in toolchain.mounts if toolchain else ():
        cmd += ["--ro-bind", str(mount), str(mount)]
    cmd += ["--size", str(limits.workspace_bytes), "--tmpfs", MOUNT_POINT, "--chdir", MOUNT_POINT]
    for key, value in sandbox_env(toolchain).items():
        cmd += ["--setenv", key, value]
    return cmd


def _program(name: str) -> str:
    return shutil.which(name) or name


@functools.cache
def sandbox_available() -> bool:
    """bwrap (0.8 or later: `--disable-userns`, `--size`) is installed and can create its
    namespaces here, as the user it will run as."""
    if not all(shutil.which(p) for p in ("bwrap", "prlimit", "tar")):
        return False
    drop = _drop_privileges(NOBODY) if sandbox_drops_privileges() else []
    features = ["--unshare-user", "--disable-userns", "--size", "1048576", "--tmpfs", "/tmp"]
    probe = [*drop, "bwrap", "--unshare-all", *features[:2], "--ro-bind", "/", "/", *features[2:]]
    probe.append("true")
    try:
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


WRAPPER = r"""
in_fd=$1 out_fd=$2 code=$3
/usr/bin/tar -x -f - -C /workspace <&"$in_fd" || { printf 'QB copy-in\n' >&"$out_fd"; exit 125; }
exec {in_fd}<&-
exec {err_fd}>&2 2>/dev/null  # the command's stderr as it was; this script's own is silent
/bin/bash -c "$code" 2>&"$err_fd" {err_fd}>&- {out_fd}>&-
status=$?
while kill -KILL -1 2>/dev/null; do :; done  # until nothing else runs (a fork bomb, too)
exec </dev/null >/dev/null 2>&1
free=$(/usr/bin/stat -f -c %a /workspace /tmp /dev/shm | /usr/bin/tr '\n' ' ')
size=$(/usr/bin/du -sb --apparent-size /workspace | /usr/bin/cut -f1)
count=$(/usr/bin/find /workspace -mindepth 1 | /usr/bin/wc -l)
printf 'QB %s %s %s %s\n' "$status" "$free" "$size" "$count" >&"$out_fd"
/usr/bin/tar -c --hard-dereference -f - -C /workspace . >&"$out_fd"
exit $status
"""


def run_shell(
    workspace: Path,
    code: str,
    *,
    timeout: float,
    limits: Limits,
    sandboxed: bool = True,
    toolchain: Toolchain | None = None,
) -> ShellResult:
    """Run `code` with bash; sandboxed unless the caller allowed the unsafe way explicitly.

    Sandboxed, the command works on a copy of `workspace` in a tmpfs of its own
    (`limits.workspace_bytes`): the folder is packed in, and what the command leaves is packed
    out and replaces it, regular files and folders only. `WorkspaceFull` when a bound was hit.
    """
    env = sandbox_env(toolchain)
    if not sandboxed:  # still nothing of ours but the programs' search path
        host_path = os.environ.get("PATH", BASE_ENV["PATH"])
        env["PATH"] = f"{toolchain.bin_dir}:{host_path}" if toolchain else host_path
        env["HOME"] = str(workspace)
        cmd = [*_limits(limits), "/bin/bash", "-c", code]
        result = _run(cmd, workspace, env, timeout, limits, sandboxed=False)
        check_usage(workspace, limits)
        return result
    check_usage(workspace, limits)
    staging = Path(tempfile.mkdtemp(prefix=".qb-out-", dir=workspace.parent))
    try:
        with _sandbox_uid() as uid:
            drop = _drop_privileges(uid) if uid is not None else []
            exchange = _Exchange(workspace, staging, limits, bwrap_options(toolchain, limits))
            command = ["/bin/bash", "-c", WRAPPER, "qb", *exchange.fds_for_child, code]
            cmd = [*_limits(limits), *drop, _program("bwrap"), "--args", exchange.args_fd]
            result = _run(
                [*cmd, "--", *command],
                None,
                env,
                timeout,
                limits,
                sandboxed=True,
                exchange=exchange,
            )
        return exchange.finish(result, workspace)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def sandbox_env(toolchain: Toolchain | None) -> dict[str, str]:
    """The whole environment of the sandbox, and of bwrap itself (its PID 1): nothing of ours."""
    env = dict(BASE_ENV)
    if toolchain is not None:
        env["PATH"] = f"{toolchain.bin_dir}:{env['PATH']}"
        env.update(toolchain.env)
    return env


def check_usage(workspace: Path, limits: Limits) -> None:
    """`WorkspaceFull` when the host folder holds more than the limits allow."""
    usage = files.usage(workspace)
    reason = over_limits(usage.bytes, usage.entries, limits)
    if reason:
        raise WorkspaceFull(reason)


def over_limits(size: int, entries: int, limits: Limits) -> str:
    """Why a workspace of `size` bytes and `entries` files and folders is too large ("" when
    it is not)."""
    if size > limits.workspace_bytes:
        return (
            f"the workspace holds {size / 1024**2:.1f} MiB, more than its limit of "
            f"{limits.workspace_bytes / 1024**2:g} MiB (sparse files count at their full size)"
        )
    if entries > limits.workspace_files:
        return (
            f"the workspace holds {entries} files and folders, more than its limit of "
            f"{limits.workspace_files}"
        )
    return ""


class _Exchange:
    """The pipes of one sandboxed command: bwrap's options (so no host path shows in its
    command line), the workspace packed in, and the status line and workspace packed out."""

    def __init__(self, workspace: Path, staging: Path, limits: Limits, options: list[str]):
        self.workspace, self.staging, self.limits = workspace, staging, limits
        self._options = options
        self._args_r, self._args_w = os.pipe()
        self._in_r, self._in_w = os.pipe()
        self._out_r, self._out_w = os.pipe()
        self.args_fd = str(self._args_r)
        self.fds_for_child = (str(self._in_r), str(self._out_w))
        self.pass_fds = (self._args_r, self._in_r, self._out_w)
        self.status: list[str] = []
        self.failure: BaseException | None = None
        self.unpacked: files.Usage | None = None
        self._threads: list[threading.Thread] = []

    def started(self) -> None:
        """Called once the sandbox runs: our copies of its pipe ends are closed, the options
        written, and the workspace streamed in while the result is read back."""
        for fd in self.pass_fds:
            os.close(fd)
        with os.fdopen(self._args_w, "wb") as f:
            f.write(b"".join(os.fsencode(a) + b"\0" for a in self._options))
        for target in (self._pack, self._unpack):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _pack(self) -> None:
        with contextlib.suppress(OSError), os.fdopen(self._in_w, "wb") as f:
            files.pack(self.workspace, f)

    def _unpack(self) -> None:
        with os.fdopen(self._out_r, "rb") as f:
            line = f.readline(512).decode("ascii", "replace").split()
            if len(line) < 2 or line[0] != "QB":
                return
            self.status = line[1:]
            if "0" in self.status[1:4]:
                return  # a bound was reached: the task ends, nothing to keep
            try:  # what the sandbox says it holds, before copying any of it
                size, count = int(self.status[4]), int(self.status[5])
            except (IndexError, ValueError):
                size = count = 0  # unpack's own bounds still hold
            reason = over_limits(size, count, self.limits)
            if reason:
                self.failure = WorkspaceFull(reason)
                return
            try:
                self.unpacked = files.unpack(
                    f,
                    self.staging,
                    max_bytes=self.limits.workspace_bytes,
                    max_entries=self.limits.workspace_files,
                )
            except (tarfile.TarError, OSError, EOFError, UnsafeArchive) as exc:
                self.failure = exc
            except WorkspaceFull as exc:
                self.failure = exc

    def join(self) -> None:
        for thread in self._threads:
            thread.join(timeout=60)

    def finish(self, result: ShellResult, workspace: Path) -> ShellResult:
        """Keep what the command left (or say why not); `WorkspaceFull` on a bound."""
        if isinstance(self.failure, WorkspaceFull):
            raise WorkspaceFull(f"Bash: {self.failure}")
        if self.status[:1] == ["copy-in"]:
            return replace(result, note="ERROR: the workspace could not be copied in")
        bounds = (
            ("the workspace", self.limits.workspace_bytes),
            ("/tmp", self.limits.tmp_bytes),
            ("/dev/shm", self.limits.shm_bytes),
        )
        for (where, size), free in zip(bounds, self.status[1:4], strict=False):
            if free == "0":  # the kernel refused a write there: the bound was reached
                raise WorkspaceFull(
                    f"Bash: {where} reached its size limit of {size / 1024**2:g} MiB"
                )
        if result.timed_out:
            return replace(result, note="the files it changed are not kept")
        if isinstance(self.failure, UnsafeArchive):  # what ran in the sandbox made the tar
            return replace(
                result,
                note=f"ERROR: the workspace was refused as it came out of the sandbox "
                f"({self.failure}); the files this command changed are not kept",
            )
        if not self.status or self.unpacked is None or self.failure is not None:
            return replace(
                result,
                note="ERROR: the sandbox ended before the workspace was saved; the files "
                "this command changed are not kept",
            )
        _swap(self.staging, workspace)
        note = ""
        if self.unpacked.skipped:
            note = (
                f"note: {self.unpacked.skipped} symbolic links or special files were not kept "
                "(the workspace keeps regular files and folders only)"
            )
        return replace(result, note=note)


def _swap(staging: Path, workspace: Path) -> None:
    """Put the unpacked copy in the workspace's place (the old one removed)."""
    old = staging.with_name(staging.name + "-old")
    os.rename(workspace, old)
    os.rename(staging, workspace)
    staging.mkdir()  # the caller removes it
    shutil.rmtree(old, ignore_errors=True)


def _run(
    cmd: list[str],
    cwd: Path | None,
    env: dict[str, str],
    timeout: float,
    limits: Limits,
    *,
    sandboxed: bool,
    exchange: _Exchange | None = None,
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
            pass_fds=exchange.pass_fds if exchange else (),
        )
        if exchange is not None:
            exchange.started()
        try:
            returncode: int | None = proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            returncode, timed_out = None, True
        if exchange is not None:
            exchange.join()
        out.seek(0)
        data = out.read(limits.output_bytes)
    return ShellResult(data.decode("utf-8", "replace"), returncode, timed_out, sandboxed)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
