"""The reward's child processes, seen from the parent: a batch per message, a kill per step.

Each `RewardProcess` drives one child through the one supervisor of untrusted execution
(`engines/supervisor.py`): the query child (`engines/child.py`) serving the reward's work
kind (`reward_child.py`). A batch of (database, gold SQL, answer SQL) goes in as one message
and its `RewardOutcome`s come back as one reply, so no rows cross a pipe and no answer costs
a round trip of its own.

No engine can interrupt every single call (SQLite's `printf` or `LIKE`), so the child
announces where it is (item, step, deadline) in the supervisor's progress bytes before every
step, and the supervisor kills it `GRACE_S` past that step's deadline. The step's outcome
becomes that item's error (a killed answer a `QueryTimeout`, a killed gold a failed gold,
remembered by every child: `KnownFailures`), and the rest of the batch goes to a fresh child.

The children are started with `subprocess` (`launch="subprocess"`: no `multiprocessing`
spawn re-importing the caller's `__main__`, no pool start-up handshake), when the reward is
made, so their start overlaps whatever the caller does first.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field

from querybench.engines.child import OPENING, ChildSetup
from querybench.engines.supervision import past_timeout
from querybench.engines.supervisor import Stopped, Supervisor
from querybench.envs.match import RewardOutcome
from querybench.envs.reward_child import (
    ANSWER,
    GOLD,
    REPLY_GLOBALS,
    Task,
    WorkerConfig,
    WorkItem,
    unpack_outcomes,
)
from querybench.errors import EngineError, ErrorCode
from querybench.evaluation.verdict import Verdict

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
        database, gold_sql, sql = item
        if isinstance(sql, EngineError):  # settled here (`match.bounded`): its text stays here
            return self.refresh((database, gold_sql, None, None, sql))
        if not self.databases and not self.golds:  # nothing killed yet, the common case
            return (database, gold_sql, sql, None, None)
        return self.refresh((database, gold_sql, sql, None, None))

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
    `receive` each in turn; or `score` one and wait. The child is the one query child
    (`engines/child.py`) serving the reward's work kind, supervised as every child is
    (`engines/supervisor.py`), started with `subprocess` now."""

    def __init__(self, config: WorkerConfig, known: KnownFailures | None = None) -> None:
        self._config = config
        self._known = known if known is not None else KnownFailures()
        setup = ChildSetup(
            # The parent (a trainer) decides when this process ends: a Ctrl-C is not for it.
            ignore_ctrl_c=True,
            memory_bytes=config.memory_bytes,
            open_databases=config.open_databases,
            # The child keeps its gold results: the files it read must not change under it.
            hold_read_locks=True,
            work="querybench.envs.reward_child:RewardWork",
            work_args=(config,),
        )
        self._child = Supervisor(setup, launch="subprocess", extra_globals=REPLY_GLOBALS)
        self._owed: deque[_Batch] = deque()
        self._child.start()

    @property
    def owed(self) -> int:
        """Batches sent and not yet received."""
        return len(self._owed)

    @property
    def pid(self) -> int | None:
        """The child's process id (None between a kill and the next batch)."""
        return self._child.pid

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
            reply = self._child.receive()
            if not isinstance(reply, Stopped):
                number, status, value = reply
                if number != batch.number:
                    continue  # an earlier send's: none while batches go in order
                if status == "error":
                    raise value
                outcomes = unpack_outcomes(value)
                if len(outcomes) != len(batch.rest()):
                    raise EngineError(f"{len(outcomes)} outcomes for {len(batch.rest())} items")
                batch.outcomes += outcomes
                break
            lost = not self._recover(batch, reply)
            for owed in list(self._owed)[1 if lost else 0 :]:  # those after it never started
                owed.tasks = [self._known.refresh(task) for task in owed.tasks]
                self._transmit(owed)
            if lost:
                break
        self._owed.popleft()
        batch.future.set_result(batch.outcomes)

    def fail(self, exc: BaseException) -> None:
        """Score every owed batch 0 with `error` and stop the child (it may be mid-batch)."""
        self._child.kill()
        while self._owed:
            batch = self._owed.popleft()
            batch.future.set_result(batch.outcomes + [crashed(exc) for _ in batch.rest()])

    def close(self) -> None:
        """Stop the child; the next batch starts a fresh one."""
        self._child.stop()

    def _recover(self, batch: _Batch, stopped: Stopped) -> bool:
        """Settle what the stopped child left of `batch`; False when the rest is lost."""
        rest = batch.rest()
        error = self._error(stopped)
        if stopped.number != batch.number:  # it never reached this batch (killed idle, or at start)
            batch.resent += 1
            if batch.resent <= 1:
                return True
        elif stopped.index < len(rest):
            # The items before the stopped one are scored again: their outcomes died with it.
            task = rest[stopped.index]
            database, gold_sql = task[:2]
            if stopped.step == OPENING:
                self._known.databases[database] = error
            elif stopped.step == GOLD:
                self._known.golds[(database, gold_sql)] = error
            batch.tasks[len(batch.outcomes) + stopped.index] = _settled(task, stopped.step, error)
            return True
        batch.outcomes += [crashed(error) for _ in rest]  # replying failed, or twice unreached
        return False

    def _error(self, stopped: Stopped) -> EngineError:
        """The outcome of the step the child stopped in."""
        if not stopped.killed:
            return stopped.ended()
        config = self._config
        if stopped.step == ANSWER:
            return past_timeout(config.answer_timeout, stopped.spent)
        if stopped.step == GOLD:
            return past_timeout(config.gold_timeout, stopped.spent)
        return EngineError("the database could not be opened in time; it was given up")

    def _transmit(self, batch: _Batch) -> None:
        batch.number = self._child.send("work", batch.rest())


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
