"""The reward's child processes, seen from the parent: a batch per message, a kill per step.

Each `RewardProcess` drives one child (`reward_child.py`), the killable process of
`engines.isolated` and the reward worker at once: a batch of (database, gold SQL, answer SQL)
goes in as one message and its `RewardOutcome`s come back as one reply, so no rows cross a
pipe and no answer costs a round trip of its own.

No engine can interrupt every single call (SQLite's `printf` or `LIKE`), so the child writes
where it is (item, step, deadline) into a few shared bytes before every step; the parent waits
for the reply until that step's deadline plus `GRACE_S`, then kills the child. The step's
outcome becomes that item's error (a killed answer a `QueryTimeout`, a killed gold a failed
gold, remembered by every child), and the rest of the batch goes to a fresh child.

The children are started with `subprocess` importing only `reward_child.py` (no
`multiprocessing` spawn re-importing the caller's `__main__`, no pool start-up handshake),
when the reward is made, so their start overlaps whatever the caller does first.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import mmap
import os
import queue
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

from querybench.engines.supervision import (
    OPEN_TIMEOUT_S,
    exit_reason,
    past_timeout,
    query_environment,
)
from querybench.engines.timeouts import CPU_CLOCK, GRACE_S, WALL_CLOCK, process_cpu_s
from querybench.envs.match import RewardOutcome
from querybench.envs.reward_child import (
    ANSWER,
    GOLD,
    OPENING,
    PROGRESS,
    Task,
    WorkerConfig,
    WorkItem,
)
from querybench.errors import EngineError, ErrorCode
from querybench.evaluation.verdict import Verdict

# How often the parent reads the progress bytes while a batch runs long.
_TICK_S = GRACE_S / 5
# Batches in a child's pipe at once: the one it runs and the next.
PIPELINE = 2


def let_workers_run() -> None:
    """Hand the GIL to a worker thread waiting for it, to send a batch just submitted or read a
    reply: a caller that goes on computing after `submit` would otherwise hold it until the
    interpreter's 5 ms switch interval forces a switch. `sleep(0)` never blocks (73 us wall,
    17 us CPU on the bench machine); a caller that waits for its future next needs none."""
    time.sleep(0)


class RewardWorkers:
    """`workers` children fed batches from one queue, each by a thread of its own that keeps
    `PIPELINE` batches in its child's pipe (the child starts the next one without waiting for
    this process to be scheduled); `submit` returns a future that never fails (a crash or a
    close scores 0 with `error` instead)."""

    def __init__(self, config: WorkerConfig, workers: int) -> None:
        self._queue: queue.SimpleQueue[tuple[list[WorkItem], Future[list[RewardOutcome]]] | None]
        self._queue = queue.SimpleQueue()
        self._known = KnownFailures()
        self._idle = 0  # threads waiting for work
        self._idle_lock = threading.Lock()
        self._processes = [RewardProcess(config, self._known) for _ in range(max(1, workers))]
        self._threads = [
            threading.Thread(target=self._serve, args=(p,), name="querybench-reward", daemon=True)
            for p in self._processes
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, items: list[WorkItem]) -> Future[list[RewardOutcome]]:
        future: Future[list[RewardOutcome]] = Future()
        self._queue.put((items, future))
        return future

    def close(self) -> None:
        """Finish the batches sent to the children, score the queued ones 0, stop them."""
        closed = EngineError("the reward was closed before the answer ran")
        with contextlib.suppress(queue.Empty):
            while (job := self._queue.get_nowait()) is not None:
                job[1].set_result([crashed(closed) for _ in job[0]])
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            if thread is not threading.current_thread():  # a collection on our own thread
                thread.join()

    def _next(self, *, block: bool) -> tuple[list[WorkItem], Future[list[RewardOutcome]]] | None:
        if not block:
            return self._queue.get_nowait()
        with self._idle_lock:
            self._idle += 1
        try:
            return self._queue.get()
        finally:
            with self._idle_lock:
                self._idle -= 1

    def _serve(self, process: RewardProcess) -> None:
        stopping = False
        try:
            while not stopping or process.owed:
                # A batch goes ahead into a busy child only while no other thread is idle:
                # it would wait behind a slow one that an idle child could have run at once.
                while not stopping and process.owed < PIPELINE:
                    if process.owed and self._idle:
                        break
                    try:
                        job = self._next(block=not process.owed)
                    except queue.Empty:
                        break
                    if job is None:
                        stopping = True
                    else:
                        process.send(*job)
                if process.owed:
                    try:
                        process.receive()
                    except Exception as exc:  # a bug here must not leave a caller waiting
                        process.fail(exc)
        finally:
            process.close()


class KnownFailures:
    """Outcomes settled by a kill, shared by the children: a gold that outlived its timeout
    (never computed again, as the in-memory gold keeps failures) and databases that could
    not be opened in time."""

    def __init__(self) -> None:
        self.golds: dict[tuple[str, str], EngineError] = {}
        self.databases: dict[str, EngineError] = {}

    def task(self, item: WorkItem) -> Task:
        if not self.databases and not self.golds:  # nothing killed yet, the common case
            return (*item, None, None)
        return self.refresh((*item, None, None))

    def refresh(self, task: Task) -> Task:
        """`task` with what is known by now of its gold and database filled in."""
        database, gold_sql, sql, gold, answer = task
        unopened = self.databases.get(database)
        if unopened is not None:
            gold = unopened if gold is None else gold
            answer = unopened if answer is None else answer
        elif gold is None:
            gold = self.golds.get((database, gold_sql))
        return database, gold_sql, sql, gold, answer


@dataclass
class _Batch:
    """Work sent to a child: its tasks, the outcomes back so far, who waits for them."""

    tasks: list[Task]
    future: Future[list[RewardOutcome]]
    outcomes: list[RewardOutcome] = field(default_factory=list)
    number: int = -1  # as last sent
    resent: int = 0  # times sent again without the child reaching it

    def rest(self) -> list[Task]:
        return self.tasks[len(self.outcomes) :]


class RewardProcess:
    """One child scoring batches in order, driven by one thread: `send` them (a few ahead),
    `receive` each in turn; or `score` one and wait."""

    def __init__(self, config: WorkerConfig, known: KnownFailures | None = None) -> None:
        self._config = config
        self._known = known if known is not None else KnownFailures()
        self._child: subprocess.Popen[bytes] | None = None
        self._requests: Connection | None = None
        self._replies: Connection | None = None
        self._progress: mmap.mmap | None = None
        self._poller: select.poll | None = None
        self._owed: deque[_Batch] = deque()
        self._numbers = itertools.count()
        self._start()

    @property
    def owed(self) -> int:
        """Batches sent and not yet received."""
        return len(self._owed)

    @property
    def pid(self) -> int | None:
        """The child's process id (None between a kill and the next batch)."""
        return None if self._child is None else self._child.pid

    def score(self, items: list[WorkItem]) -> list[RewardOutcome]:
        """The outcomes of `items`, in order (nothing else may be owed)."""
        future = self.send(items, Future())
        try:
            while self.owed:
                self.receive()
        except Exception as exc:
            self.fail(exc)
        return future.result()

    def send(
        self, items: list[WorkItem], future: Future[list[RewardOutcome]]
    ) -> Future[list[RewardOutcome]]:
        batch = _Batch([self._known.task(item) for item in items], future)
        self._owed.append(batch)
        self._transmit(batch)
        return future

    def receive(self) -> None:
        """Wait for the oldest batch owed and set its future; a kill or a crash on the way
        settles the step it stopped, and what the child still owed goes to a fresh one."""
        batch = self._owed[0]
        while True:
            reply = self._wait(batch)
            if isinstance(reply, list):
                batch.outcomes += reply
                break
            lost = not self._recover(batch, *reply)
            for owed in list(self._owed)[1 if lost else 0 :]:  # those after it never started
                owed.tasks = [self._known.refresh(task) for task in owed.tasks]
                self._transmit(owed)
            if lost:
                break
        self._owed.popleft()
        batch.future.set_result(batch.outcomes)

    def fail(self, exc: BaseException) -> None:
        """Score every owed batch 0 with `error` and stop the child (it may be mid-batch)."""
        self._stop(kill=True)
        while self._owed:
            batch = self._owed.popleft()
            batch.future.set_result(batch.outcomes + [crashed(exc) for _ in batch.rest()])

    def close(self) -> None:
        self._stop(kill=False)

    def _recover(
        self, batch: _Batch, number: int, index: int, step: float, error: EngineError
    ) -> bool:
        """Settle what the stopped child left of `batch`; False when the rest is lost."""
        rest = batch.rest()
        if number != batch.number:  # it never reached this batch (killed idle, or at start)
            batch.resent += 1
            if batch.resent <= 1:
                return True
        elif index < len(rest):
            # The items before the stopped one are scored again: their outcomes died with it.
            task = rest[index]
            database, gold_sql = task[:2]
            if step == OPENING:
                self._known.databases[database] = error
            elif step == GOLD:
                self._known.golds[(database, gold_sql)] = error
            batch.tasks[len(batch.outcomes) + index] = _settled(task, step, error)
            return True
        batch.outcomes += [crashed(error) for _ in rest]  # replying failed, or twice unreached
        return False

    def _transmit(self, batch: _Batch) -> None:
        batch.number = next(self._numbers)
        message = (batch.number, batch.rest())
        requests, _ = self._start()
        with contextlib.suppress(OSError):  # a dead child: `_wait` reads its end
            requests.send(message)

    def _wait(self, batch: _Batch) -> list[RewardOutcome] | tuple[int, int, float, EngineError]:
        """`batch`'s outcomes, or where the child stopped: (batch, item, step, the error)."""
        _, replies = self._start()
        while True:
            where = self._where()
            deadline = where[3]
            # Looked at again every tick: a later step may have a nearer deadline.
            wait = _TICK_S if deadline == 0.0 else deadline + GRACE_S - time.monotonic()
            wait = max(0.0, min(wait, _TICK_S))
            try:
                if self._readable(wait):
                    outcomes: list[RewardOutcome] = replies.recv()
                    if len(outcomes) != len(batch.rest()):
                        raise EngineError(f"{len(outcomes)} outcomes for {len(batch.rest())} items")
                    return outcomes
            except (EOFError, OSError):
                return self._ended()
            spent = self._spent(where)
            # Read again after a beat: the step may have just begun.
            if spent is not None and not self._readable(0.001) and self._where() == where:
                return self._killed(*where[:3], spent)

    def _readable(self, timeout: float) -> bool:
        """Whether the reply pipe has something to read (or its end) within `timeout` s: one
        `poll` system call (`Connection.poll` builds a selector on every call)."""
        assert self._poller is not None
        return bool(self._poller.poll(math.ceil(timeout * 1000)))

    def _where(self) -> tuple[int, int, float, float, float]:
        """(batch number, item index, step, deadline, CPU deadline) as the child last wrote
        them."""
        assert self._progress is not None
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
        child = self._child
        if cpu_deadline and child is not None:
            used = process_cpu_s(child.pid)
            if used is not None and used > cpu_deadline + GRACE_S:
                return CPU_CLOCK
        return None

    def _killed(
        self, number: int, index: int, step: float, spent: str = WALL_CLOCK
    ) -> tuple[int, int, float, EngineError]:
        """Kill the child stuck in `step` of an item: that step's outcome is an error."""
        self._stop(kill=True)
        config = self._config
        error: EngineError
        if step == ANSWER:
            error = past_timeout(config.answer_timeout, spent)
        elif step == GOLD:
            error = past_timeout(config.gold_timeout, spent)
        else:
            error = EngineError("the database could not be opened in time; it was given up")
        return number, index, step, error

    def _ended(self) -> tuple[int, int, float, EngineError]:
        child = self._child
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(5.0)
        number, index, step = self._where()[:3]
        code = None if child is None else child.returncode
        self._stop(kill=True)
        return number, index, step, EngineError(f"the query's process ended ({exit_reason(code)})")

    def _start(self) -> tuple[Connection, Connection]:
        if self._requests is not None and self._replies is not None:
            return self._requests, self._replies
        progress_fd = _shared_file(PROGRESS.size)
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        try:
            progress = mmap.mmap(progress_fd, PROGRESS.size)
            # Until the child is up, its start-up has the time a database gets to open.
            PROGRESS.pack_into(progress, 0, time.monotonic() + OPEN_TIMEOUT_S, -1, -1, OPENING, 0.0)
            boot = (
                f"import sys; sys.path[:] = {sys.path!r}; "
                "from querybench.envs.reward_child import serve; "
                f"serve({to_child}, {from_child}, {progress_fd})"
            )
            child = subprocess.Popen(
                [sys.executable, "-c", boot],
                pass_fds=(to_child, from_child, progress_fd),
                env=query_environment(),  # no API key reaches a process running model SQL
            )
        except BaseException:
            for fd in (to_child, from_parent, to_parent, from_child):
                os.close(fd)
            raise
        finally:
            os.close(progress_fd)
        os.close(to_child)
        os.close(from_child)
        self._requests = Connection(from_parent, readable=False)
        self._replies = Connection(to_parent, writable=False)
        self._poller = select.poll()
        self._poller.register(to_parent, select.POLLIN)
        with contextlib.suppress(OSError):  # a child dead at once: `_wait` reads its end
            self._requests.send(self._config)
        self._child, self._progress = child, progress
        return self._requests, self._replies

    def _stop(self, *, kill: bool) -> None:
        child, requests, replies = self._child, self._requests, self._replies
        self._child = self._requests = self._replies = None
        self._poller = None
        if self._progress is not None:
            self._progress.close()
            self._progress = None
        for connection in (requests, replies):
            if connection is not None:
                connection.close()  # the child reads EOF and ends
        if child is not None:
            if kill:
                with contextlib.suppress(ProcessLookupError):
                    child.kill()
            try:
                child.wait(None if kill else 5.0)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def _shared_file(size: int) -> int:
    """A file descriptor of `size` zero bytes that parent and child both map."""
    memfd: Callable[[str], int] | None = getattr(os, "memfd_create", None)
    if memfd is not None:
        fd = memfd("querybench-reward-progress")
    else:  # not Linux
        fd, name = tempfile.mkstemp(prefix="querybench-reward-")
        os.unlink(name)
    os.ftruncate(fd, size)
    return fd


def _settled(task: Task, step: float, error: EngineError) -> Task:
    database, gold_sql, sql, gold, answer = task
    if step == ANSWER:
        return database, gold_sql, sql, gold, error
    if step == GOLD:
        return database, gold_sql, sql, error, answer
    return database, gold_sql, sql, error, error


def crashed(exc: BaseException) -> RewardOutcome:
    message = f"the reward worker failed: {type(exc).__name__}: {exc}"
    return RewardOutcome(
        0.0, Verdict.statement_failed(ErrorCode.EXEC_ERROR, message), dict(_CRASH_METRICS)
    )


_CRASH_METRICS = {"error": 1.0, "trivial": 0.0, "gold_error": 0.0}
