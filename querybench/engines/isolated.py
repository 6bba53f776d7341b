"""Queries in a child process that is killed at its deadline, so no query outlives its timeout.

An engine's own timeout (SQLite's progress handler, DuckDB's interrupt) stops a query between
steps; nothing stops one long call inside a step. SQLite's `printf('%.*c', 2147483647, 'x')`
loops 2^31 times without looking at its interrupt flag, a `LIKE` costs the product of its
pattern's and its string's lengths, DuckDB's `repeat()` builds its whole string before the
next vector, and sqlglot's translation of a 4 MB BigQuery statement runs for a minute before
DuckDB starts. `QueryProcess` opens engines (`connect`) in its own child process and runs each
query there; when a query is still running `GRACE_S` past its timeout, the child is killed and
the query is a `QueryTimeout` like any other, whatever was stopping it. The time is the child's
CPU time for an embedded engine (capped by the wall clock), the wall clock for a server's
(`timeouts.py`). The next query starts a fresh child (forked from a `forkserver` that has the
engines imported, so it costs milliseconds). The child, its deadlines and its kill are
`supervisor.Supervisor`'s, the one supervisor of untrusted execution; this module is the
query child's requests over it.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from querybench.engines.base import FETCH_CHUNK, Closing, Result, Table
from querybench.engines.child import QUERY, REPLY_GROUP_S, WORK, ChildSetup
from querybench.engines.memory import query_memory_bytes
from querybench.engines.registry import ENGINES, EngineSpec
from querybench.engines.supervision import OPEN_TIMEOUT_S, past_timeout
from querybench.engines.supervisor import Stopped, Supervisor, may_fork
from querybench.errors import EngineError

__all__ = ["Answers", "IsolatedEngine", "QueryProcess", "connect_isolated", "may_fork"]


class QueryProcess:
    """One child process serving queries on any number of databases, one query at a time:
    a `supervisor.Supervisor` with the query child's work kinds.

    Engines stay open in the child between queries (`open_databases` of them, least recently
    used closed first) until a kill, after which they are reopened on demand. Thread-safe;
    `close` stops the child.
    """

    def __init__(self, *, open_databases: int = 8) -> None:
        setup = ChildSetup(memory_bytes=query_memory_bytes(), open_databases=max(1, open_databases))
        self._child = Supervisor(setup)
        self._lock = threading.Lock()

    def __enter__(self) -> QueryProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The running child's process id (None: none runs)."""
        return self._child.pid

    def start(self) -> None:
        """Start the child now rather than at the first request: forked straight from this
        process when nothing could be caught mid-way by the fork (no other thread, no DuckDB
        with its own threads), which costs milliseconds where the forkserver's first start
        costs a new interpreter (0.13 s wall, 0.06 s CPU here); else from the forkserver."""
        with self._lock:
            self._child.start(fork=may_fork())

    def engine(self, database: str | Path) -> IsolatedEngine:
        """An `Engine` for `database`, opened in the child (raising as `connect` does)."""
        name = self._call(None, "open", str(database))
        return IsolatedEngine(self, str(database), ENGINES[str(name)])

    def execute(
        self, database: str, sql: str, *, timeout: float | None, max_rows: int | None
    ) -> Result:
        result: Result = self._call(timeout, "execute", database, sql, timeout, max_rows)
        return result

    def execute_many(
        self, database: str, sqls: list[str], *, timeout: float | None, max_rows: int | None
    ) -> list[Result | EngineError]:
        """Each query's outcome, in order, the queries sent as one message (`send_many`)."""
        with self.send_many(database, sqls, timeout=timeout, max_rows=max_rows) as answers:
            while not answers.done:
                answers.step(answers.readable(answers.wait_s()))
            return answers.outcomes

    def send_many(
        self, database: str, sqls: list[str], *, timeout: float | None, max_rows: int | None
    ) -> Answers:
        """The queries sent as one message, their `Answers` read as they come: the child
        answers as they finish and goes on without waiting to be asked for the next, its
        answers sent together while they come within `REPLY_GROUP_S` of each other (one write
        and one read for many short queries). Each query is timed on its own, from its own
        start; one still running `GRACE_S` past its timeout has its child killed and is a
        `QueryTimeout` (or the crashed one's error), and the queries not answered then go to
        a fresh child. The process serves nothing else until the answers are left (`with`)."""
        self._lock.acquire()
        try:
            return Answers(self._child, self._lock, database, sqls, timeout, max_rows)
        except BaseException:
            self._lock.release()
            raise

    def batches(
        self,
        database: str,
        sql: str,
        *,
        timeout: float | None,
        max_rows: int | None,
        batch: int = FETCH_CHUNK,
    ) -> Generator[list[tuple[Any, ...]], None, None]:
        """The rows in batches, each fetched in the child only when asked for; the timeout
        runs from the first batch asked for to the last, and the child is busy until the
        generator ends or is closed."""
        with self._lock:
            self._exchange(timeout, "stream", database, sql, timeout, max_rows, batch)
            finished = False
            try:
                while True:
                    rows: list[tuple[Any, ...]] | None
                    rows = self._exchange(timeout, "next", restart=False)
                    if rows is None:
                        finished = True
                        return
                    yield rows
            except EngineError:
                finished = True  # the child ended the stream itself (or was killed)
                raise
            finally:
                if not finished and self._child.running:  # stopped early by the consumer
                    self._exchange(timeout, "stop", restart=False)

    def preload(self, *modules: str) -> None:
        """Import `modules` in the child now (at once if it has them), so that no query's
        deadline pays for their import (pandas costs a second or more on a loaded machine)."""
        self._call(None, "import", *modules)

    def call(self, database: str, method: str, *args: Any, timeout: float | None = None) -> Any:
        """`engine.method(*args)` in the child, e.g. `tables`."""
        return self._call(timeout, "call", database, method, args, timeout)

    def forget(self, database: str) -> None:
        """Close the child's engine for `database`, if it is running and has one."""
        with self._lock:
            if self._child.running:
                self._exchange(None, "forget", database, restart=False)

    def close(self) -> None:
        with self._lock:
            self._child.close()

    def abort(self) -> None:
        """Kill the child now, from any thread, whatever it runs (Ctrl-C, the caller gone):
        the thread waiting on it gets the child's end as an error, and no query starts after.
        Unlike `close`, it does not wait for the lock a running query holds."""
        self._child.abort()

    def _call(self, timeout: float | None, kind: str, *args: Any) -> Any:
        with self._lock:
            return self._exchange(timeout, kind, *args)

    def _exchange(self, timeout: float | None, kind: str, *args: Any, restart: bool = True) -> Any:
        """Send one message and wait for its reply (lock held); a killed step is the
        request's `QueryTimeout` (of `timeout`), a crash its error."""
        child = self._child
        number = child.send(kind, *args, restart=restart)
        while True:
            reply = child.receive()
            if isinstance(reply, Stopped):
                raise stopped_error(reply, timeout)
            if reply[0] == number:
                break
        _, status, value = reply
        if status == "error":
            raise value
        return value


def stopped_error(stopped: Stopped, timeout: float | None) -> EngineError:
    """The outcome of the step a child was stopped in: a query's `QueryTimeout`, an open
    given up, or the crash."""
    if not stopped.killed:
        return stopped.ended()
    if stopped.step == QUERY and timeout is not None:
        return past_timeout(timeout, stopped.spent)
    if stopped.step == WORK:
        return EngineError(f"the request ran past its {OPEN_TIMEOUT_S:g}s bound and was stopped")
    return EngineError("the database could not be opened in time; it was given up")


class Answers:
    """The outcomes of a batch sent to a `QueryProcess` (`send_many`), read as they come, so
    that one thread can wait on several children (`pipe`, `wait_s`, then `step`). Left (the
    end of its `with`), the process serves again; left by an exception, its child is killed
    first, since no one will read what it answers."""

    def __init__(
        self,
        child: Supervisor,
        lock: threading.Lock,
        database: str,
        sqls: list[str],
        timeout: float | None,
        max_rows: int | None,
    ) -> None:
        self._child, self._lock = child, lock
        self.database, self.sqls, self.timeout, self.max_rows = database, sqls, timeout, max_rows
        self.outcomes: list[Result | EngineError] = []
        self._settled: dict[int, Result | EngineError] = {}  # answered out of order
        self._left = False
        self._sent: list[int] = []  # the positions of the message in flight
        self._received = 0  # of them
        self._number = -1
        self._resent = 0  # times sent again without the child reaching the message
        self._send()

    def __enter__(self) -> Answers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if self._left:
            return
        self._left = True
        try:
            if kind is not None:
                self._child.kill()
        finally:
            self._lock.release()

    @property
    def done(self) -> bool:
        return len(self.outcomes) == len(self.sqls)

    @property
    def pipe(self) -> Connection:
        """The end to wait on for the next answers."""
        return self._child.replies

    def readable(self, timeout: float) -> bool:
        return self._child.readable(timeout)

    def wait_s(self) -> float:
        """How long to wait on `pipe` before `step` must look at the time."""
        return self._child.wait_s()

    def step(self, ready: bool) -> None:
        """After `pipe` was ready (`ready`) or `wait_s` passed: the answers read, or the
        child killed once the running query's time is spent (+ grace)."""
        found = self._child.check(ready)
        if found is None:
            return
        if isinstance(found, Stopped):
            self._stopped(found)
            return
        number, status, value = found
        if number != self._number:
            return  # a reply to an earlier message, left by a kill
        replies = value if status == "group" else [(status, value)]
        for _, outcome in replies:
            self._settle(self._sent[self._received], outcome)
            self._received += 1

    def _stopped(self, stopped: Stopped) -> None:
        """Settle the query the child stopped in; the rest go to a fresh child."""
        index = stopped.index
        reached = stopped.number == self._number
        if reached and self._received <= index < len(self._sent):
            self._settle(self._sent[index], stopped_error(stopped, self.timeout))
        else:  # never reached (killed at start), or lost while handing the answers over
            self._resent += 1
            if self._resent > 1:
                error = stopped_error(stopped, self.timeout)
                for position in self._sent[self._received :]:
                    self._settle(position, error)
        if not self.done:
            self._send()

    def _settle(self, position: int, outcome: Result | EngineError) -> None:
        self._settled[position] = outcome
        while len(self.outcomes) in self._settled:
            self.outcomes.append(self._settled.pop(len(self.outcomes)))

    def _send(self) -> None:
        start = len(self.outcomes)
        self._sent = [p for p in range(start, len(self.sqls)) if p not in self._settled]
        self._received = 0
        rest = [self.sqls[p] for p in self._sent]
        self._number = self._child.send(
            "execute_many", self.database, rest, self.timeout, self.max_rows, REPLY_GROUP_S
        )


class IsolatedEngine(Closing):
    """An `Engine` view of one database served by a `QueryProcess`; `spec` is the served
    engine's (so it streams where that engine does)."""

    def __init__(
        self, process: QueryProcess, database: str, spec: EngineSpec, *, owns_process: bool = False
    ) -> None:
        self._process = process
        self.database = database
        self.spec = spec
        self.dialect = spec.dialect
        self._owns_process = owns_process
        self._closed = False

    def tables(self) -> list[Table]:
        tables: list[Table] = self._served().call(self.database, "tables")
        return tables

    def sample_rows(self, table: str, n: int = 3) -> Result:
        result: Result = self._served().call(self.database, "sample_rows", table, n, timeout=60.0)
        return result

    def execute(
        self, sql: str, *, timeout: float | None = None, max_rows: int | None = None
    ) -> Result:
        return self._served().execute(self.database, sql, timeout=timeout, max_rows=max_rows)

    def execute_many(
        self, sqls: list[str], *, timeout: float | None = None, max_rows: int | None = None
    ) -> list[Result | EngineError]:
        """`QueryProcess.execute_many` on this database: one message for many queries."""
        return self._served().execute_many(self.database, sqls, timeout=timeout, max_rows=max_rows)

    def execute_batches(
        self,
        sql: str,
        *,
        timeout: float | None = None,
        max_rows: int | None = None,
        batch: int = FETCH_CHUNK,
    ) -> Generator[list[tuple[Any, ...]], None, None]:
        """The served engine's `execute_batches`, each batch fetched from the child as asked
        for (an engine that cannot stream runs the query whole in the child)."""
        return self._served().batches(
            self.database, sql, timeout=timeout, max_rows=max_rows, batch=batch
        )

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._owns_process:
                self._process.close()
            else:
                self._process.forget(self.database)

    def _served(self) -> QueryProcess:
        if self._closed:
            raise EngineError(f"the engine for {self.database} is closed")
        return self._process


def connect_isolated(target: str | Path) -> IsolatedEngine:
    """`connect(target)` in a `QueryProcess` of its own, stopped when the engine is closed:
    for a caller that runs a model's SQL on one database (an agent, a tool environment)."""
    process = QueryProcess(open_databases=1)
    try:
        spec = process.engine(target).spec
    except BaseException:
        process.close()
        raise
    return IsolatedEngine(process, str(target), spec, owns_process=True)
