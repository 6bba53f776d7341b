"""The one child process that runs untrusted execution, whoever drives it.

Started by `supervisor.Supervisor` (forked, or as a fresh interpreter importing only this
module's imports), it reads its `ChildSetup` first, enters the boundary
(`supervision.enter_query_child`: scrubbed environment, memory cap, CPU time, Ctrl-C), then
serves numbered messages until the parent closes the pipe. Before every step that may run
long (opening a database, a query, a reward's gold or answer, an import) it writes the message
number, the item, the step and the step's deadline into the progress bytes the parent maps
(`Progress`); after the step, "no deadline". The parent kills the child `GRACE_S` past the
deadline, whatever the child is doing.

The work kinds it understands are the query child's (`open`, `execute`, `execute_many`,
`stream`/`next`/`stop`, `call`, `import`, `forget`) and, where the setup names one, a work
kind of the caller's (`work`: the RL reward's batches of rewards, `envs/reward_child.py`),
made once per child with the child's engines and progress at hand.

Its databases are opened only through `engines.connect`: read-only, one statement per query,
results capped in rows and bytes, DuckDB with external access off and its configuration
locked.
"""

from __future__ import annotations

import contextlib
import importlib
import mmap
import os
import pickle
import struct
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any, Protocol

from querybench.engines.base import Engine
from querybench.engines.memory import out_of_memory
from querybench.engines.supervision import (
    OPEN_TIMEOUT_S,
    enter_query_child,
    max_reply_bytes,
    reply_too_large,
)
from querybench.engines.timeouts import counts_cpu, finite_timeout, wall_cap
from querybench.errors import EngineError, ResultTooManyBytes

# deadline (monotonic, 0: none), message number, item index (in the message as sent), step,
# and the CPU deadline (this process's `time.process_time`, 0: none; `timeouts.py`)
PROGRESS = struct.Struct("dqqdd")
# The steps, as written to the progress bytes; a work kind may name its own above these.
IDLE, OPENING, QUERY, WORK = 0.0, 1.0, 2.0, 3.0

# A batch's answers are sent together while they come within this many seconds of the first
# (at most `REPLY_GROUP_MAX` of them): many short queries then cost the parent one read, not
# one each. Each query's deadline is its own, announced as it starts.
REPLY_GROUP_S = 0.01
REPLY_GROUP_MAX = 256


@dataclass(frozen=True)
class ChildSetup:
    """What a child is told first: how it enters the boundary and what it serves."""

    # A child dies of a terminal's Ctrl-C unless this is True (None: as its parent does,
    # read when the child starts).
    ignore_ctrl_c: bool | None = None
    # The memory cap (`engines/memory.py`), read by the parent: None, the default.
    memory_bytes: int | None = None
    # Engines kept open, least recently used closed first.
    open_databases: int = 8
    # Each SQLite file's shared lock kept while its engine is open (`SQLiteEngine.
    # hold_read_lock`): for a work kind that keeps what it read (the reward's gold results).
    hold_read_locks: bool = False
    # A work kind of the caller's, "module:attr" of its factory (called once with the
    # `Child` and `work_args`), served for `work` messages.
    work: str | None = None
    work_args: tuple[Any, ...] = ()
    # The cap on one reply's pickle (`supervision.max_reply_bytes`), the parent's, which reads
    # no length past it: None, read by the parent when it starts the child.
    reply_bytes: int | None = None


class Progress:
    """The child's side of the progress bytes: each step announced before it runs, and its
    end (the time between steps is not the query's)."""

    __slots__ = ("_map", "_started", "index", "number")

    def __init__(self, fd: int) -> None:
        self._map = mmap.mmap(fd, PROGRESS.size)
        self.number, self.index = -1, 0  # no message yet
        self._started: float | None = None  # the CPU time the running step began at

    def step(self, step: float, timeout: float | None, *, cpu: bool = False) -> None:
        """Announce `step`, of `timeout` on the wall clock, or (`cpu`) of CPU time capped by
        the wall clock (`timeouts.wall_cap`); None: no deadline."""
        self._started = None
        if timeout is None:
            deadline = cpu_deadline = 0.0
        elif cpu:
            timeout = finite_timeout(timeout)  # NaN, infinity: a deadline no clock passes
            deadline = time.monotonic() + wall_cap(timeout)
            self._started = started = time.process_time()
            cpu_deadline = started + timeout
        else:
            deadline, cpu_deadline = time.monotonic() + finite_timeout(timeout), 0.0
        PROGRESS.pack_into(self._map, 0, deadline, self.number, self.index, step, cpu_deadline)

    def cpu_time(self) -> float:
        """This process's CPU time (`time.process_time`), the clock the parent holds a step
        to; read first after a CPU-timed step, it is the step's own start, already read: the
        engine's budget for the step's query starts from it, one system call fewer a query
        (a CPU clock is a system call to read). The child runs one query at a time, on one
        thread, so its process's CPU time is that query's."""
        started = self._started
        if started is None:
            return time.process_time()
        self._started = None
        return started

    def at(self, step: float, deadline: float, cpu_deadline: float) -> None:
        """Announce `step` with deadlines already fixed (a stream's, from its start)."""
        self._started = None
        PROGRESS.pack_into(self._map, 0, deadline, self.number, self.index, step, cpu_deadline)

    def deadlines(self) -> tuple[float, float]:
        """The deadlines last announced."""
        deadline, _, _, _, cpu_deadline = PROGRESS.unpack_from(self._map)
        return deadline, cpu_deadline

    def done(self) -> None:
        self._started = None
        PROGRESS.pack_into(self._map, 0, 0.0, self.number, self.index, IDLE, 0.0)


class Work(Protocol):
    """A work kind of the caller's: one `work` message's arguments to its reply value."""

    def __call__(self, *args: Any) -> Any: ...


class Child:
    """What every work kind runs with: the child's engines (opened under the open deadline,
    kept in an LRU) and its progress bytes."""

    def __init__(self, setup: ChildSetup, progress: Progress) -> None:
        self.setup = setup
        self.progress = progress
        self.engines: OrderedDict[str, Engine] = OrderedDict()

    def engine(self, database: str) -> Engine:
        engine = self.engines.get(database)
        if engine is not None:
            self.engines.move_to_end(database)
            return engine
        from querybench.engines import connect

        self.progress.step(OPENING, OPEN_TIMEOUT_S)
        try:
            engine = self.engines[database] = connect(database)
            count_cpu = getattr(engine, "count_cpu_by", None)
            if count_cpu is not None:  # its queries' CPU time as the parent counts it
                count_cpu(self.progress.cpu_time)
            if self.setup.hold_read_locks:
                hold = getattr(engine, "hold_read_lock", None)
                if hold is not None:
                    hold()
            if len(self.engines) > self.setup.open_databases:
                _, oldest = self.engines.popitem(last=False)
                oldest.close()
        finally:
            self.progress.done()
        return engine

    def forget(self, database: str) -> None:
        closing = self.engines.pop(database, None)
        if closing is not None:
            closing.close()

    def query_step(self, engine: Engine, timeout: float | None, step: float = QUERY) -> None:
        """Announce a query on `engine`: its CPU time on an embedded engine, else the wall
        clock (`timeouts.py`)."""
        self.progress.step(step, timeout, cpu=counts_cpu(engine.spec.name))


def resolve(name: str) -> Callable[..., Work]:
    module, _, attr = name.partition(":")
    factory: Callable[..., Work] = getattr(importlib.import_module(module), attr)
    return factory


def _pipe(end: Connection | int, *, reading: bool) -> Connection:
    if isinstance(end, int):
        return Connection(end, readable=reading, writable=not reading)
    return end


def serve(requests: Connection | int, replies: Connection | int, progress_fd: Any) -> None:
    """The child's loop: its setup, then numbered messages in and replies out, until the
    parent closes the pipe or says `exit`."""
    requests, replies = _pipe(requests, reading=True), _pipe(replies, reading=False)
    fd = progress_fd if isinstance(progress_fd, int) else progress_fd.fd
    progress = Progress(fd)
    os.close(fd)
    try:
        setup: ChildSetup = requests.recv()
    except (EOFError, OSError):
        return
    enter_query_child(ignore_ctrl_c=bool(setup.ignore_ctrl_c), memory_bytes=setup.memory_bytes)
    child = Child(setup, progress)
    progress.done()
    server = _Server(child, replies)
    while True:
        try:
            message = requests.recv()
        except (EOFError, OSError):
            break
        number, kind, args = message
        if kind == "exit":
            break
        progress.number, progress.index = number, 0
        if not server.serve(number, kind, args):
            break
        progress.done()
    server.close()


class _Server:
    """The work kinds of one child, one message at a time."""

    def __init__(self, child: Child, replies: Connection) -> None:
        self.child = child
        cap = child.setup.reply_bytes
        self.replies = _Replies(replies, max_reply_bytes() if cap is None else cap)
        self.stream: Iterator[list[tuple[Any, ...]]] | None = None
        self.stream_deadlines = (0.0, 0.0)
        setup = child.setup
        self.work: Work | None = (
            None if setup.work is None else resolve(setup.work)(child, *setup.work_args)
        )

    def close(self) -> None:
        _close(self.stream)

    def serve(self, number: int, kind: str, args: tuple[Any, ...]) -> bool:
        """Serve one message; False once the parent is gone."""
        if kind == "execute_many":
            return self.execute_many(number, *args)
        child, progress = self.child, self.child.progress
        try:
            value: Any = None
            if kind == "work":
                if self.work is None:
                    raise EngineError("this child serves no work kind")
                value = self.work(*args)
            elif kind == "open":
                value = child.engine(args[0]).spec.name
            elif kind == "execute":
                database, sql, timeout, max_rows = args
                engine = child.engine(database)
                child.query_step(engine, timeout)
                value = engine.execute(sql, timeout=timeout, max_rows=max_rows)
            elif kind == "stream":
                database, sql, timeout, max_rows, batch = args
                engine = child.engine(database)
                child.query_step(engine, timeout)  # the stream's time runs from here
                self.stream_deadlines = progress.deadlines()
                self.stream = engine.execute_batches(
                    sql, timeout=timeout, max_rows=max_rows, batch=batch
                )
            elif kind == "next":
                progress.at(QUERY, *self.stream_deadlines)
                value = next(self.stream, None) if self.stream is not None else None
                if value is None:
                    self.stream = None
            elif kind == "stop":
                _close(self.stream)
                self.stream = None
            elif kind == "call":
                database, method, call_args, timeout = args
                engine = child.engine(database)
                if timeout is None:  # an engine's own work (its tables): the open's bound
                    progress.step(WORK, OPEN_TIMEOUT_S)
                else:
                    child.query_step(engine, timeout)
                value = getattr(engine, method)(*call_args)
            elif kind == "import":
                progress.step(WORK, OPEN_TIMEOUT_S)
                for module in args:
                    importlib.import_module(module)
            elif kind == "forget":
                child.forget(args[0])
            else:
                raise EngineError(f"unknown request {kind!r}")
            reply: tuple[str, Any] = ("ok", value)
        except Exception as exc:
            _close(self.stream)
            self.stream = None
            reply = ("error", portable(exc))
        finally:
            progress.done()
        return _send(self.replies, number, reply)

    def execute_many(
        self,
        number: int,
        database: str,
        sqls: list[str],
        timeout: float | None,
        max_rows: int | None,
        group_s: float,
    ) -> bool:
        """Each query on its own deadline, announced with its index; the answers sent in
        groups (`REPLY_GROUP_S`)."""
        child, progress = self.child, self.child.progress
        held: list[tuple[str, Any]] = []
        first = 0.0  # when the first query of those held started
        for index, sql in enumerate(sqls):
            now = time.monotonic()
            if held and (now - first >= group_s or len(held) >= REPLY_GROUP_MAX):
                if not _send_group(self.replies, number, held):
                    return False
                held = []
            if not held:
                first = now
            progress.index = index
            try:
                engine = child.engine(database)
                child.query_step(engine, timeout)
                reply: tuple[str, Any] = (
                    "ok",
                    engine.execute(sql, timeout=timeout, max_rows=max_rows),
                )
            except Exception as exc:
                reply = ("error", portable(exc))
            finally:
                progress.done()
            held.append(reply)
        progress.index = len(sqls)
        return not held or _send_group(self.replies, number, held)


# What pickling a reply may raise for a value it cannot take; nothing is written then. A value
# nested past the recursion limit (a DuckDB list column of lists 400 deep, as a frame) raises
# `RecursionError`, which ended the child with a traceback before.
_UNSENDABLE = (pickle.PicklingError, TypeError, AttributeError, RecursionError)


class _Replies:
    """The replies' end, each reply pickled whole and held to the reply cap before its first
    byte is written: the parent reads no length past the cap."""

    __slots__ = ("cap", "pipe")

    def __init__(self, pipe: Connection, cap: int) -> None:
        self.pipe, self.cap = pipe, cap

    def send(self, reply: tuple[Any, ...]) -> None:
        """Send `reply`; `ResultTooManyBytes` (nothing written) when its pickle is past the cap."""
        data = ForkingPickler.dumps(reply)
        if len(data) > self.cap:
            raise reply_too_large(len(data), self.cap)
        self.pipe.send_bytes(data)


def _send(pipe: _Replies, number: int, reply: tuple[str, Any]) -> bool:
    """Send one reply (a result that cannot be pickled, or is past the reply cap, as an
    error); False once the parent is gone."""
    try:
        pipe.send((number, *reply))
    except (*_UNSENDABLE, MemoryError, ResultTooManyBytes) as exc:
        pipe.send((number, "error", _unsent(exc)))
    except (BrokenPipeError, OSError):
        return False
    return True


def _send_group(pipe: _Replies, number: int, replies: list[tuple[str, Any]]) -> bool:
    """Send the replies of a batch in one message; when one of them cannot be pickled (or
    they are past the reply cap together), each on its own (one that cannot be, as an error).
    False once the parent is gone."""
    try:
        pipe.send((number, "group", replies))
        return True
    except (*_UNSENDABLE, MemoryError, ResultTooManyBytes):
        pass  # nothing was written: pickling comes first
    except OSError:
        return False
    for reply in replies:
        try:
            pipe.send((number, "group", [reply]))
        except (*_UNSENDABLE, MemoryError, ResultTooManyBytes) as exc:
            try:
                pipe.send((number, "group", [("error", _unsent(exc))]))
            except OSError:
                return False
        except OSError:
            return False
    return True


def _unsent(exc: BaseException) -> EngineError:
    """The error answered for a reply that could not be sent (`exc`, nothing written)."""
    if isinstance(exc, MemoryError):
        return out_of_memory("handing the result over")
    if isinstance(exc, ResultTooManyBytes):
        return exc
    return EngineError(f"the result cannot be handed over: {exc}")


def _close(stream: Iterator[Any] | None) -> None:
    close = getattr(stream, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            close()


def portable(exc: Exception) -> EngineError:
    """`exc` as an `EngineError` that survives the pipe, its class (and so its code) kept; an
    allocation refused by the memory cap is `QueryOutOfMemory`."""
    if isinstance(exc, MemoryError):
        return out_of_memory()
    if not isinstance(exc, EngineError):
        return EngineError(f"unexpected {type(exc).__name__}: {exc}")
    try:
        copy = pickle.loads(pickle.dumps(exc))
    except Exception:
        copy = None
    if isinstance(copy, EngineError):
        return copy
    plain = EngineError(str(exc), exc.given_class)
    plain.code = exc.code
    return plain
