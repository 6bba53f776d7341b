"""The parent's side of every child that runs untrusted execution: one supervisor.

A `Supervisor` starts one child (`child.py`), sends it numbered messages, reads its replies,
and kills it when the step the child announced in the shared progress bytes (message, item,
step, deadline) has run `GRACE_S` past its deadline: its CPU time on an embedded engine (read
from `/proc/<pid>/stat`), else the wall clock. A kill or a crash is a `Stopped`, saying where
the child was, and the next message goes to a fresh child. A reply's frame is read by the
parent itself, within bounds (`_frame`): a length past the reply cap is refused unread, and a
frame that stalls kills its child, so no reply holds the parent past them. Every driver of
untrusted execution is a thin layer over it: `isolated.QueryProcess` (the pool, `run_one`, the
agents and tools, the DuckDB answers, the evaluators' children) and the RL reward's
`envs/reward_workers.py`, which differ only in their work items.

Two ways to start a child, one protocol: `fork` (straight from this process when nothing could
be caught mid-way by the fork, else from a forkserver with the engines imported: milliseconds
a child, for scorers that replace killed children often) and `subprocess` (a fresh interpreter
importing only the child's modules: no `__main__` re-imported, safe in a threaded trainer,
started when the caller asks so that its start overlaps the caller's first work).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import mmap
import multiprocessing
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from multiprocessing import reduction
from multiprocessing.connection import Connection
from typing import Any, Literal

from querybench.engines.child import OPENING, PROGRESS, ChildSetup, serve
from querybench.engines.replies import Global, ReplyReader
from querybench.engines.supervision import (
    OPEN_TIMEOUT_S,
    exit_reason,
    max_reply_bytes,
    query_environment,
)
from querybench.engines.timeouts import CPU_CLOCK, GRACE_S, WALL_CLOCK, process_cpu_s
from querybench.errors import EngineError

# How often the parent reads the progress bytes while a step runs long: a later step may
# have a nearer deadline, and CPU time is read, not waited for.
TICK_S = GRACE_S / 5

# A reply's frame as multiprocessing's `Connection` writes it: a 4-byte big-endian signed
# length (-1: an 8-byte length follows, for 2 GiB and more), then the pickle. The parent reads
# it itself, within bounds: `recv_bytes` waits for ever on a child that wrote a length and
# stopped, and allocates whatever length it is told.
_LENGTH = struct.Struct("!i")
_LONG_LENGTH = struct.Struct("!Q")
# A child pickles a reply whole before it writes its first byte, so the rest comes as fast as
# the pipe goes: no byte for `REPLY_STALL_S` is a child stopped (SIGSTOP) or taken over, and
# so is a frame not whole `REPLY_STALL_S` + a second per `REPLY_BYTES_PER_S` bytes after its
# first read (a child dripping it); a step still running bounds it by its deadline + grace.
REPLY_STALL_S = 2.0
REPLY_BYTES_PER_S = 16 * 1024**2
# The most one read asks for: the pipe holds 64 KiB, so no read brings more while the child
# writes, and `os.read` allocates what it is asked for. A reply up to it that came whole (the
# common case, written with its length at once) costs two reads and no clock.
_READ_CHUNK = 256 * 1024

# `__main__` first, as multiprocessing's own default: imported once in the server, not in
# every child. DuckDB (0.25 s to import) only when the parent has loaded it: a SQLite-only
# run (BIRD, Spider 1.0) does not pay for it before its first query; a child that opens a
# DuckDB database imports it itself.
_PRELOAD = [
    "__main__",
    "querybench.engines",
    "querybench.engines.sqlite",
    "querybench.engines.child",
]
_PRELOAD_IF_LOADED = {"duckdb": "querybench.engines.duckdb"}

Launch = Literal["fork", "subprocess"]
# A reply: (message number, "ok" | "error" | "group", value).
Reply = tuple[int, str, Any]


@dataclass(frozen=True)
class Stopped:
    """Where a child stopped without replying: the message and item it was at (as it last
    wrote them), the step, and how it stopped: `killed` at the deadline (`spent`: the time
    that decided, `timeouts.timed_out`'s words), or it ended by itself (`reason`)."""

    number: int
    index: int
    step: float
    killed: bool
    spent: str = WALL_CLOCK
    reason: str = ""

    def ended(self) -> EngineError:
        """The error of a child that ended (crashed) in the step."""
        return EngineError(f"the query's process ended ({self.reason})")


class Supervisor:
    """One killable child and the messages to it. Not thread-safe: its driver serialises."""

    def __init__(
        self, setup: ChildSetup, *, launch: Launch = "fork", extra_globals: Iterable[Global] = ()
    ) -> None:
        """`extra_globals`: the classes the work kind's replies hold beyond a query child's
        (`replies.BASE_GLOBALS`); a reply naming any other is refused."""
        self.setup = setup
        self.launch = launch
        self._reader = _reader(frozenset(extra_globals))
        self.closed = False
        self._process: _Handle | None = None
        self._requests: Connection | None = None
        self._replies: Connection | None = None
        self._fd = -1  # the replies' descriptor, non-blocking
        self._reply_cap = 0
        self._progress: mmap.mmap | None = None
        self._poller: select.poll | None = None
        self._numbers = 0

    @property
    def running(self) -> bool:
        return self._requests is not None

    @property
    def pid(self) -> int | None:
        """The child's process id (None between a kill and the next message)."""
        return None if self._process is None else self._process.pid

    @property
    def replies(self) -> Connection:
        """The replies' end, for a caller waiting on several children at once."""
        self.start()
        assert self._replies is not None
        return self._replies

    def start(self, *, fork: bool = False) -> None:
        """Start the child, if none runs; `fork`: straight from this process (where
        `may_fork` says it is safe), else from the forkserver (`launch="fork"`)."""
        if self.closed:
            raise EngineError("the query process is closed")
        if self._requests is not None:
            return
        progress_fd = _shared_file(PROGRESS.size)
        try:
            progress = mmap.mmap(progress_fd, PROGRESS.size)
        except BaseException:
            os.close(progress_fd)
            raise
        try:
            # Until the child is up, its start-up has the time a database gets to open.
            deadline = time.monotonic() + OPEN_TIMEOUT_S
            PROGRESS.pack_into(progress, 0, deadline, -1, -1, OPENING, 0.0)
            if self.launch == "subprocess":
                handle, requests, replies = _start_subprocess(progress_fd)
            else:
                handle, requests, replies = _start_forked(progress_fd, fork)
        except BaseException:
            progress.close()  # no child to share it with
            raise
        finally:
            os.close(progress_fd)
        self._process, self._requests, self._replies = handle, requests, replies
        self._progress = progress
        self._fd = replies.fileno()
        os.set_blocking(self._fd, False)  # a read takes what came: `_frame` waits, bounded
        self._poller = select.poll()
        self._poller.register(self._fd, select.POLLIN)
        setup = self.setup
        if setup.ignore_ctrl_c is None:  # as this process does now
            setup = replace(setup, ignore_ctrl_c=ignores_ctrl_c())
        cap = max_reply_bytes() if setup.reply_bytes is None else setup.reply_bytes
        self._reply_cap = cap
        setup = replace(setup, reply_bytes=cap)  # the child's cap on what it sends
        with contextlib.suppress(OSError):  # a child dead at once: the wait reads its end
            requests.send(setup)

    def send(self, kind: str, *args: Any, restart: bool = True) -> int:
        """Send a message (starting a child if none runs); its number, which the replies
        and the progress bytes carry. A child found dead is replaced and the message sent
        to the new one, unless `restart` is False (a message that needs the child's state,
        a stream's next batch): then the child's end is an error."""
        if not restart and self._requests is None:
            raise EngineError("the query's process ended (killed)")
        self.start()
        assert self._requests is not None
        number = self._numbers
        self._numbers += 1
        try:
            self._requests.send((number, kind, args))
        except OSError as exc:  # the child ended since its last reply (killed from outside)
            if not restart:
                raise self._ended().ended() from exc
            self.kill()
            self.start()
            assert self._requests is not None
            with contextlib.suppress(OSError):  # dead at once: the wait reads its end
                self._requests.send((number, kind, args))
        return number

    def receive(self) -> Reply | Stopped:
        """The next reply, or where the child stopped (killed past a deadline, or ended);
        interrupted (Ctrl-C), the child is killed before the interruption goes on, as no
        one will read its reply."""
        try:
            while True:
                found = self.check(self.readable(self.wait_s()))
                if found is not None:
                    return found
        except BaseException:
            self.kill()
            raise

    def wait_s(self) -> float:
        """How long to wait for a reply before `check` must look at the time again."""
        deadline = self._where()[3]
        if deadline == 0.0:
            return TICK_S
        return max(0.0, min(deadline + GRACE_S - time.monotonic(), TICK_S))

    def check(self, ready: bool) -> Reply | Stopped | None:
        """After the replies were ready (`ready`) or `wait_s` passed: the reply, where the
        child stopped (killed once its step's time is spent, + grace), or None: wait on."""
        if ready:
            if self._replies is None:
                return self._ended()
            data = self._frame()
            if not isinstance(data, bytes):
                return data
            try:
                reply = self._reader.load(data)
            except Exception as exc:  # a malformed pickle raises what it happens to raise
                return self._refused(f"{type(exc).__name__}: {exc}")
            if not _well_formed(reply):
                return self._refused("not a numbered reply")
            return reply  # type: ignore[no-any-return]
        where = self._where()
        spent = self._spent(where)
        # Read again after a beat: the step may have just ended.
        if spent is None or self.readable(0.001) or self._where() != where:
            return None
        self.kill()
        return Stopped(where[0], where[1], where[2], killed=True, spent=spent)

    def readable(self, timeout: float) -> bool:
        """Whether the replies have something to read (or their end) within `timeout` s:
        one `poll` system call (`Connection.poll` builds a selector on every call)."""
        if self._poller is None:
            return True  # no child: its end is read at once
        return bool(self._poller.poll(math.ceil(timeout * 1000)))

    def kill(self) -> None:
        """Kill the child (if any) and wait for it; the next message starts a fresh one."""
        self._stop(kill=True)

    def stop(self) -> None:
        """Stop the child: it ends once its current call returns (killed after 5 s); the
        next message starts a fresh one."""
        self._stop(kill=False)

    def close(self) -> None:
        """Stop the child, and start none after."""
        self.closed = True
        self._stop(kill=False)

    def abort(self) -> None:
        """Kill the child now, from any thread, whatever it runs: the thread waiting on it
        reads its end, and nothing starts after."""
        self.closed = True
        process = self._process
        if process is not None:
            with contextlib.suppress(Exception):
                process.kill()

    def _where(self) -> tuple[int, int, float, float, float]:
        """(message number, item index, step, deadline, CPU deadline) as the child last
        wrote them."""
        if self._progress is None:
            return -1, -1, OPENING, 0.0, 0.0
        deadline, number, index, step, cpu_deadline = PROGRESS.unpack_from(self._progress)
        return int(number), int(index), step, deadline, cpu_deadline

    def _spent(self, where: tuple[int, int, float, float, float]) -> str | None:
        """Which time the child's current step has spent `GRACE_S` past its limit: its CPU
        time (when it has a CPU deadline), the wall clock's deadline, or neither (None)."""
        deadline, cpu_deadline = where[3], where[4]
        if deadline == 0.0:
            return None
        if time.monotonic() > deadline + GRACE_S:
            return f"{WALL_CLOCK} cap" if cpu_deadline else WALL_CLOCK
        process = self._process
        if cpu_deadline and process is not None:
            used = process_cpu_s(process.pid)
            if used is not None and used > cpu_deadline + GRACE_S:
                return CPU_CLOCK
        return None

    def _frame(self) -> bytes | Stopped | None:
        """The next reply's bytes, once the pipe is readable; where the child stopped if it
        ended or its frame was refused or stalled; None if nothing came after all."""
        fd = self._fd
        try:
            head = os.read(fd, 4)
        except BlockingIOError:
            return None
        except OSError:
            return self._ended()
        if not head:
            return self._ended()
        body = b""
        if len(head) == 4:
            size = _LENGTH.unpack(head)[0]
            if 0 <= size <= _READ_CHUNK:
                try:
                    body = os.read(fd, size)
                except BlockingIOError:
                    pass
                except OSError:
                    return self._ended()
                if len(body) == size:
                    return body
        return self._rest(head, body)

    def _rest(self, head: bytes, body: bytes) -> bytes | Stopped:
        """The rest of a frame that did not come whole at once (`head`, `body`: what did), read
        as it comes: a length past the reply cap is refused before any of it is read, a frame
        stalled or dripped (`REPLY_STALL_S`, `REPLY_BYTES_PER_S`, the step's deadline + grace)
        kills its child."""
        started = time.monotonic()
        deadline = self._where()[3]
        limit = deadline + GRACE_S if deadline else math.inf
        until = min(started + REPLY_STALL_S, limit)
        read = self._exactly(4, head, until)
        if not isinstance(read, bytes):
            return self._stalled(read, None, started)
        if len(read) < 4:
            return self._ended()
        size = _LENGTH.unpack(read)[0]
        if size == -1:
            read = self._exactly(8, b"", until)
            if not isinstance(read, bytes):
                return self._stalled(read, None, started)
            if len(read) < 8:
                return self._ended()
            size = _LONG_LENGTH.unpack(read)[0]
        if size < 0:
            return self._refused(f"it declares {size:,} bytes")
        if size > self._reply_cap:
            return self._refused(
                f"it declares {size:,} bytes, past the reply cap of {self._reply_cap:,}"
            )
        until = min(started + REPLY_STALL_S + size / REPLY_BYTES_PER_S, limit)
        read = self._exactly(size, body, until)
        if not isinstance(read, bytes):
            return self._stalled(read, size, started)
        if len(read) < size:
            return self._ended()
        return read

    def _exactly(self, count: int, have: bytes, until: float) -> bytes | int:
        """`count` bytes, `have` the first of them, read as they come; fewer: the pipe ended;
        an int: how many came before none came for `REPLY_STALL_S`, or `until` passed."""
        parts, got = [have], len(have)
        while got < count:
            chunk = _chunk(self._fd, self._poller, min(count - got, _READ_CHUNK), until)
            if chunk is None:
                return got
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def _stalled(self, got: int, size: int | None, started: float) -> Stopped:
        """A frame not whole in time (a child stopped, or taken over): the child is killed,
        and where it was is settled as a crash there."""
        took = time.monotonic() - started
        of = "its length" if size is None else f"{size:,}"
        return self._killed(f"its reply stalled: {got:,} of {of} bytes came in {took:.1f} s")

    def _refused(self, why: str) -> Stopped:
        """A reply that is no reply's value (a child taken over, or a bug): the child is
        killed, and where it was is settled as a crash there."""
        return self._killed(f"its reply was refused: {why}")

    def _killed(self, why: str) -> Stopped:
        number, index, step = self._where()[:3]
        self.kill()
        return Stopped(number, index, step, killed=False, reason=f"killed: {why}")

    def _ended(self) -> Stopped:
        process = self._process
        if process is not None:
            process.wait(5.0)
        number, index, step = self._where()[:3]
        reason = exit_reason(None if process is None else process.exitcode)
        self.kill()
        return Stopped(number, index, step, killed=False, reason=reason)

    def _stop(self, *, kill: bool) -> None:
        process, requests, replies = self._process, self._requests, self._replies
        self._process = self._requests = self._replies = None
        self._poller = None
        self._fd = -1
        if self._progress is not None:
            self._progress.close()
            self._progress = None
        if requests is not None:
            if not kill:  # a child forked beside this one holds this end too: no EOF then
                with contextlib.suppress(OSError):
                    requests.send((-1, "exit", ()))
            requests.close()  # the child reads EOF and ends, once its current call returns
        if replies is not None:
            replies.close()
        if process is not None:
            if kill:
                process.kill()
            if not process.wait(None if kill else 5.0):
                process.kill()
                process.wait(None)


def _chunk(fd: int, poller: select.poll | None, want: int, until: float) -> bytes | None:
    """Up to `want` bytes of `fd` (non-blocking), as soon as some came; b"" at its end; None
    when none came for `REPLY_STALL_S` or by `until`."""
    stall = math.inf
    while True:
        try:
            return os.read(fd, want)
        except BlockingIOError:
            pass
        except OSError:
            return b""
        now = time.monotonic()
        if stall == math.inf:
            stall = now + REPLY_STALL_S
        wait = min(stall, until) - now
        if wait <= 0 or poller is None:
            return None
        poller.poll(math.ceil(wait * 1000))


def _well_formed(reply: Any) -> bool:
    """Whether `reply` is shaped as a `Reply` (an error's value an `EngineError`)."""
    if type(reply) is not tuple or len(reply) != 3 or type(reply[0]) is not int:
        return False
    status = reply[1]
    if status == "error":
        return isinstance(reply[2], EngineError)
    return status in ("ok", "group")


_readers: dict[frozenset[Global], ReplyReader] = {}


def _reader(extra: frozenset[Global]) -> ReplyReader:
    """One reader per set of globals, shared by the supervisors that take it (the globals
    resolved once a process)."""
    reader = _readers.get(extra)
    if reader is None:
        reader = _readers.setdefault(extra, ReplyReader(extra))
    return reader


class _Handle:
    """A started child, however it was started."""

    def __init__(
        self,
        pid: int,
        kill: Callable[[], None],
        wait: Callable[[float | None], bool],
        exitcode: Callable[[], int | None],
    ) -> None:
        self.pid = pid
        self.kill = kill
        self._wait = wait
        self._exitcode = exitcode

    def wait(self, timeout: float | None) -> bool:
        """Whether the child ended within `timeout` seconds (None: waits until it does)."""
        return self._wait(timeout)

    @property
    def exitcode(self) -> int | None:
        return self._exitcode()


def _start_subprocess(progress_fd: int) -> tuple[_Handle, Connection, Connection]:
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()
    try:
        boot = (
            f"import sys; sys.path[:] = {sys.path!r}; "
            "from querybench.engines.child import serve; "
            f"serve({to_child}, {from_child}, {progress_fd}); "
            # Nothing to flush (cache files are written whole), and a teardown costs more
            # than the child's last batch did.
            "import os; os._exit(0)"
        )
        child = subprocess.Popen(
            [sys.executable, "-c", boot],
            pass_fds=(to_child, from_child, progress_fd),
            env=query_environment(),  # no API key reaches a process running model SQL
        )
    except BaseException:
        for fd in (from_parent, to_parent):
            os.close(fd)
        raise
    finally:
        os.close(to_child)
        os.close(from_child)

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError):
            child.kill()

    def wait(timeout: float | None) -> bool:
        try:
            child.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    handle = _Handle(child.pid, kill, wait, lambda: child.returncode)
    return (
        handle,
        Connection(from_parent, readable=False),
        Connection(to_parent, writable=False),
    )


def _start_forked(progress_fd: int, fork: bool) -> tuple[_Handle, Connection, Connection]:
    if fork:
        _preload_here()
    context = multiprocessing.get_context("fork") if fork else _context()
    requests_in, requests = context.Pipe(duplex=False)
    replies, replies_out = context.Pipe(duplex=False)
    process = context.Process(
        target=serve,
        args=(requests_in, replies_out, _SharedFd(progress_fd)),
        name="querybench-query",
        daemon=True,
    )
    try:
        process.start()
    finally:
        requests_in.close()
        replies_out.close()
    pid = process.pid
    assert pid is not None

    def kill() -> None:
        with contextlib.suppress(Exception):
            process.kill()

    def wait(timeout: float | None) -> bool:
        process.join(timeout)
        return process.exitcode is not None

    return _Handle(pid, kill, wait, lambda: process.exitcode), requests, replies


def _preload_here() -> None:
    """What the forkserver preloads (`_PRELOAD`, bar `__main__`: this process's own), imported
    in this process before a child is forked from it, so that each child has it, not imports
    it at its first open (2 ms or more a child, while the caller waits on that open)."""
    for module in _PRELOAD[1:]:
        if module not in sys.modules:
            importlib.import_module(module)


class _SharedFd:
    """The progress file's descriptor, handed to a forked or forkserver child (duplicated
    through the forkserver as multiprocessing hands over a `Connection`)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_fd, (reduction.DupFd(self.fd),))


def _rebuild_fd(dup: Any) -> _SharedFd:
    return _SharedFd(dup.detach())


def _shared_file(size: int) -> int:
    """A file descriptor of `size` zero bytes that parent and child both map."""
    memfd: Callable[[str], int] | None = getattr(os, "memfd_create", None)
    if memfd is not None:
        fd = memfd("querybench-progress")
    else:  # not Linux
        fd, name = tempfile.mkstemp(prefix="querybench-progress-")
        os.unlink(name)
    os.ftruncate(fd, size)
    return fd


def may_fork() -> bool:
    """Whether a child may be forked from this very process: only its own thread runs in it."""
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and _threads() == 1
        and "duckdb" not in sys.modules
    )


def _threads() -> int:
    """The threads of this process, native ones too (OpenBLAS's and Arrow's pools once numpy
    or pyarrow is loaded, a trainer's), which `threading` does not count; Linux's /proc says,
    else only Python's are known."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def ignores_ctrl_c() -> bool:
    """Whether this process ignores SIGINT (a script's background job: the shell starts it
    so): its children must then too, or a Ctrl-C to the group kills the query running while
    this one goes on."""
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


_context_lock = threading.Lock()
_Context = multiprocessing.context.ForkServerContext | multiprocessing.context.SpawnContext
_context_cache: list[_Context] = []


def _context() -> _Context:
    """A `forkserver` with the engines preloaded (each child a cheap fork of a clean process),
    where the platform has one; else `spawn`."""
    with _context_lock:
        if not _context_cache:
            try:
                forkserver = multiprocessing.get_context("forkserver")
                loaded = [m for name, m in _PRELOAD_IF_LOADED.items() if name in sys.modules]
                forkserver.set_forkserver_preload(_PRELOAD + loaded)
                context: _Context = forkserver
            except ValueError:
                context = multiprocessing.get_context("spawn")
            _context_cache.append(context)
        return _context_cache[0]
