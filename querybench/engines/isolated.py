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
(`timeouts.py`). The next query starts
a fresh child (forked from a `forkserver` that has the engines imported, so it costs
milliseconds).
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Generator, Iterator
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from querybench.engines.base import FETCH_CHUNK, Closing, Result, Table
from querybench.engines.memory import out_of_memory, query_memory_bytes
from querybench.engines.registry import ENGINES, EngineSpec
from querybench.engines.supervision import (
    OPEN_TIMEOUT_S,
    enter_query_child,
    exit_reason,
    past_timeout,
)
from querybench.engines.timeouts import (
    GRACE_S,
    Budget,
    counts_cpu,
    process_cpu_s,
)
from querybench.errors import EngineError

# `__main__` first, as multiprocessing's own default: imported once in the server, not in
# every child. DuckDB (0.25 s to import) only when the parent has loaded it: a SQLite-only
# run (BIRD, Spider 1.0) does not pay for it before its first query; a child that opens a
# DuckDB database imports it itself.
_PRELOAD = ["__main__", "querybench.engines", "querybench.engines.sqlite"]
_PRELOAD_IF_LOADED = {"duckdb": "querybench.engines.duckdb"}

# A batch's answers are sent together while they come within this many seconds of the first
# (at most `REPLY_GROUP_MAX` of them): many short queries then cost the parent one read, not
# one each. It is the most a query's kill can come early: a query is timed from the reply
# before its group, so it is killed at `GRACE_S` - `REPLY_GROUP_S` past its timeout at the
# earliest, and the queries of a killed group run again, each answered alone.
REPLY_GROUP_S = 0.01
REPLY_GROUP_MAX = 256


class QueryProcess:
    """One child process serving queries on any number of databases, one query at a time.

    Engines stay open in the child between queries (`open_databases` of them, least recently
    used closed first) until a kill, after which they are reopened on demand. Thread-safe;
    `close` stops the child.
    """

    def __init__(self, *, open_databases: int = 8) -> None:
        self._open_databases = max(1, open_databases)
        self._lock = threading.Lock()
        self._process: BaseProcess | None = None
        self._pipe: Connection | None = None
        self._closed = False
        self._engine_names: dict[str, str] = {}  # database -> the engine serving it

    def __enter__(self) -> QueryProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the child now rather than at the first request: forked straight from this
        process when nothing could be caught mid-way by the fork (no other thread, no DuckDB
        with its own threads), which costs milliseconds where the forkserver's first start
        costs a new interpreter (0.13 s wall, 0.06 s CPU here); else from the forkserver."""
        with self._lock:
            if self._pipe is None:
                self._start(fork=may_fork())

    def engine(self, database: str | Path) -> IsolatedEngine:
        """An `Engine` for `database`, opened in the child (raising as `connect` does)."""
        name = self._call(OPEN_TIMEOUT_S, None, ("open", str(database)))
        self._engine_names[str(database)] = str(name)
        return IsolatedEngine(self, str(database), ENGINES[str(name)])

    def execute(
        self, database: str, sql: str, *, timeout: float | None, max_rows: int | None
    ) -> Result:
        message = ("execute", database, sql, timeout, max_rows)
        result: Result = self._call(timeout, timeout, message, database=database)
        return result

    def execute_many(
        self, database: str, sqls: list[str], *, timeout: float | None, max_rows: int | None
    ) -> list[Result | EngineError]:
        """Each query's outcome, in order, the queries sent as one message (`send_many`)."""
        with self.send_many(database, sqls, timeout=timeout, max_rows=max_rows) as answers:
            while not answers.done:
                answers.step(answers.pipe.poll(answers.wait_s()))
            return answers.outcomes

    def send_many(
        self, database: str, sqls: list[str], *, timeout: float | None, max_rows: int | None
    ) -> Answers:
        """The queries sent as one message, their `Answers` read as they come: the child
        answers as they finish and goes on without waiting to be asked for the next, its
        answers sent together while they come within `REPLY_GROUP_S` of each other (one write
        and one read for many short queries). Each query is timed on its own, from at most
        `REPLY_GROUP_S` before its start; one still running `GRACE_S` past its timeout has its
        child killed, and the queries not answered then go to a fresh child, answered one by
        one, so that only the query that was running is a `QueryTimeout` (or the crashed one).
        The process serves nothing else until the answers are left (`with`)."""
        self._lock.acquire()
        try:
            return Answers(self, database, sqls, timeout, max_rows)
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
            self._start()
            budget = self._budget(timeout, database)
            self._exchange(budget, timeout, ("stream", database, sql, timeout, max_rows, batch))
            finished = False
            try:
                while True:
                    rows: list[tuple[Any, ...]] | None
                    rows = self._exchange(budget, timeout, ("next",))
                    if rows is None:
                        finished = True
                        return
                    yield rows
            except EngineError:
                finished = True  # the child ended the stream itself (or was killed)
                raise
            finally:
                if not finished and self._pipe is not None:  # stopped early by the consumer
                    self._exchange(budget, timeout, ("stop",))

    def preload(self, *modules: str) -> None:
        """Import `modules` in the child now (at once if it has them), so that no query's
        deadline pays for their import (pandas costs a second or more on a loaded machine)."""
        self._call(OPEN_TIMEOUT_S, None, ("import", *modules))

    def call(self, database: str, method: str, *args: Any, timeout: float | None = None) -> Any:
        """`engine.method(*args)` in the child, e.g. `tables`."""
        return self._call(timeout, timeout, ("call", database, method, args), database=database)

    def forget(self, database: str) -> None:
        """Close the child's engine for `database`, if it is running and has one."""
        with self._lock:
            if self._pipe is not None:
                self._exchange(Budget.start(OPEN_TIMEOUT_S), None, ("forget", database))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._stop(kill=False)

    def abort(self) -> None:
        """Kill the child now, from any thread, whatever it runs (Ctrl-C, the caller gone):
        the thread waiting on it gets the child's end as an error, and no query starts after.
        Unlike `close`, it does not wait for the lock a running query holds."""
        self._closed = True
        process = self._process
        if process is not None:
            with contextlib.suppress(Exception):
                process.kill()

    def _wait(self, pipe: Connection, budget: Budget | None) -> str | None:
        """None once the child replied, or which time was spent (`GRACE_S` past `budget`)
        first; interrupted (Ctrl-C), the child is killed before the interruption goes on, as
        no one will read its reply."""
        try:
            while not pipe.poll(None if budget is None else budget.wait_s(GRACE_S)):
                assert budget is not None
                spent = budget.spent(GRACE_S)
                if spent is not None:
                    return spent
            return None
        except BaseException:
            self._stop(kill=True)
            raise

    def _budget(self, timeout: float | None, database: str) -> Budget | None:
        """A query's time from now in the running child: its CPU time on an embedded engine,
        else the wall clock."""
        if timeout is None:
            return None
        process = self._process
        if process is None or not counts_cpu(self._engine_names.get(database)):
            return Budget.start(timeout)
        pid = process.pid
        assert pid is not None
        return Budget.start(timeout, lambda: process_cpu_s(pid))

    def _call(
        self,
        wait: float | None,
        timeout: float | None,
        message: tuple[Any, ...],
        *,
        database: str | None = None,
    ) -> Any:
        with self._lock:
            if database is None or wait is None:
                return self._exchange(None if wait is None else Budget.start(wait), None, message)
            self._start()
            return self._exchange(self._budget(wait, database), timeout, message)

    def _exchange(
        self, budget: Budget | None, timeout: float | None, message: tuple[Any, ...]
    ) -> Any:
        """Send `message` and wait for the reply until `budget` is spent (+ grace); lock held."""
        pipe = self._start()
        try:
            pipe.send(message)
        except OSError as exc:  # the child ended since its last reply (killed from outside)
            process = self._process
            self._stop(kill=True)
            if message[0] in ("next", "stop"):  # its stream is gone with it
                raise EngineError(f"the query's process ended ({_exit_reason(process)})") from exc
            pipe = self._start()
            pipe.send(message)
        spent = self._wait(pipe, budget)
        if spent is not None:
            self._stop(kill=True)
            if timeout is None:
                raise EngineError("the database could not be opened in time; it was given up")
            raise past_timeout(timeout, spent)
        try:
            kind, value = pipe.recv()
        except (EOFError, OSError) as exc:
            process = self._process
            self._stop(kill=True)
            raise EngineError(f"the query's process ended ({_exit_reason(process)})") from exc
        if kind == "error":
            raise value
        return value

    def _start(self, *, fork: bool = False) -> Connection:
        if self._closed:
            raise EngineError("the query process is closed")
        if self._pipe is None:
            context = multiprocessing.get_context("fork") if fork else _context()
            ours, theirs = context.Pipe()
            process = context.Process(
                target=_serve,
                args=(theirs, self._open_databases, _ignores_ctrl_c(), query_memory_bytes()),
                name="querybench-query",
                daemon=True,
            )
            process.start()
            theirs.close()
            self._process, self._pipe = process, ours
        return self._pipe

    def _stop(self, *, kill: bool) -> None:
        process, pipe = self._process, self._pipe
        self._process = self._pipe = None
        if pipe is not None:
            if not kill:  # a child forked beside this one holds this end too: no EOF then
                with contextlib.suppress(OSError):
                    pipe.send(("exit",))
            pipe.close()  # the child reads EOF and ends, once its current call returns
        if process is not None:
            if kill:
                process.kill()
            process.join(None if kill else 5.0)
            if process.exitcode is None:
                process.kill()
                process.join()


class Answers:
    """The outcomes of a batch sent to a `QueryProcess` (`send_many`), read as they come, so
    that one thread can wait on several children (`pipe`, `wait_s`, then `step`). Left (the
    end of its `with`), the process serves again; left by an exception, its child is killed
    first, since no one will read what it answers."""

    def __init__(
        self,
        process: QueryProcess,
        database: str,
        sqls: list[str],
        timeout: float | None,
        max_rows: int | None,
    ) -> None:
        self._process = process
        self.database, self.sqls, self.timeout, self.max_rows = database, sqls, timeout, max_rows
        self.outcomes: list[Result | EngineError] = []
        self._group_s = REPLY_GROUP_S
        self._left = False
        self.pipe = self._send()
        self._budget = process._budget(timeout, database)

    def __enter__(self) -> Answers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if self._left:
            return
        self._left = True
        try:
            if kind is not None:
                self._process._stop(kill=True)
        finally:
            self._process._lock.release()

    @property
    def done(self) -> bool:
        return len(self.outcomes) == len(self.sqls)

    def wait_s(self) -> float | None:
        """How long to wait on `pipe` before `step` must look at the time (None: no limit)."""
        return None if self._budget is None else self._budget.wait_s(GRACE_S)

    def step(self, ready: bool) -> None:
        """After `pipe` was ready (`ready`) or `wait_s` passed: the answers read, or the
        child killed once the running query's time is spent (+ grace)."""
        process = self._process
        if ready:
            try:
                _, replies = self.pipe.recv()  # "group": ("ok", result) / ("error", error) pairs
                replied: list[Result | EngineError] = [value for _, value in replies]
            except (EOFError, OSError):
                ended = process._process
                process._stop(kill=True)
                replied = [EngineError(f"the query's process ended ({_exit_reason(ended)})")]
        else:
            spent = None if self._budget is None else self._budget.spent(GRACE_S)
            if spent is None:
                return
            process._stop(kill=True)
            replied = [past_timeout(self.timeout, spent)]
        if process._pipe is not None:
            self.outcomes += replied
        else:
            if self._group_s == 0:  # the one query running was the one killed (or crashed)
                self.outcomes += replied
            self._group_s = 0.0  # grouped: which one is not known, so they run alone again
            if not self.done:
                self.pipe = self._send()
        self._budget = process._budget(self.timeout, self.database)  # the next, from now

    def _send(self) -> Connection:
        process = self._process
        rest = self.sqls[len(self.outcomes) :]
        message = ("execute_many", self.database, rest, self.timeout, self.max_rows, self._group_s)
        pipe = process._start()
        try:
            pipe.send(message)
        except OSError:  # the child ended since its last reply (killed from outside)
            process._stop(kill=True)
            pipe = process._start()
            pipe.send(message)
        return pipe


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


def _exit_reason(process: BaseProcess | None) -> str:
    return exit_reason(None if process is None else process.exitcode)


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


# --- the child ---------------------------------------------------------------------------


def _ignores_ctrl_c() -> bool:
    """Whether this process ignores SIGINT (a script's background job: the shell starts it
    so): its children must then too, or a Ctrl-C to the group kills the query running while
    this one goes on."""
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def _serve(
    pipe: Connection,
    open_databases: int,
    ignore_ctrl_c: bool = False,
    memory_bytes: int | None = None,
) -> None:
    """The child's loop: one message in, one reply out, until the parent closes the pipe."""
    # A terminal's Ctrl-C kills the child at once, even inside one long C call (an
    # interrupted parent kills it anyway); a parent that ignores it keeps its children going.
    enter_query_child(ignore_ctrl_c=ignore_ctrl_c, memory_bytes=memory_bytes)
    engines: OrderedDict[str, Any] = OrderedDict()
    stream: Iterator[list[tuple[Any, ...]]] | None = None

    def engine(database: str) -> Any:
        from querybench.engines import connect

        found = engines.get(database)
        if found is not None:
            engines.move_to_end(database)
            return found
        opened = engines[database] = connect(database)
        if len(engines) > open_databases:
            _, oldest = engines.popitem(last=False)
            oldest.close()
        return opened

    while True:
        try:
            message = pipe.recv()
        except (EOFError, OSError):
            break
        kind, args = message[0], message[1:]
        if kind == "exit":
            break
        if kind == "execute_many":
            database, sqls, timeout, max_rows, group_s = args
            held: list[tuple[str, Any]] = []
            first = 0.0  # when the first query of those held started
            for sql in sqls:
                now = time.monotonic()
                if held and (now - first >= group_s or len(held) >= REPLY_GROUP_MAX):
                    if not _send_group(pipe, held):
                        return
                    held = []
                if not held:
                    first = now
                try:
                    reply: tuple[str, Any] = (
                        "ok",
                        engine(database).execute(sql, timeout=timeout, max_rows=max_rows),
                    )
                except Exception as exc:
                    reply = ("error", _portable(exc))
                held.append(reply)
            if held and not _send_group(pipe, held):
                return
            continue
        try:
            if kind == "open":
                value: Any = engine(args[0]).spec.name
            elif kind == "import":
                for module in args:
                    importlib.import_module(module)
                value = None
            elif kind == "execute":
                database, sql, timeout, max_rows = args
                value = engine(database).execute(sql, timeout=timeout, max_rows=max_rows)
            elif kind == "stream":
                database, sql, timeout, max_rows, batch = args
                stream = engine(database).execute_batches(
                    sql, timeout=timeout, max_rows=max_rows, batch=batch
                )
                value = None
            elif kind == "next":
                value = next(stream, None) if stream is not None else None
                if value is None:
                    stream = None
            elif kind == "stop":
                _close(stream)
                stream = value = None
            elif kind == "call":
                database, method, call_args = args
                value = getattr(engine(database), method)(*call_args)
            elif kind == "forget":
                closing = engines.pop(args[0], None)
                if closing is not None:
                    closing.close()
                value = None
            else:
                raise EngineError(f"unknown request {kind!r}")
            reply = ("ok", value)
        except Exception as exc:
            _close(stream)
            stream = None
            reply = ("error", _portable(exc))
        if not _send(pipe, reply):
            break


def _send(pipe: Connection, reply: tuple[str, Any]) -> bool:
    """Send one reply (a result that cannot be pickled as an error); False once the parent
    is gone."""
    try:
        pipe.send(reply)
    except MemoryError:
        pipe.send(("error", out_of_memory("handing the result over")))
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        pipe.send(("error", EngineError(f"the result cannot be handed over: {exc}")))
    except (BrokenPipeError, OSError):
        return False
    return True


def _send_group(pipe: Connection, replies: list[tuple[str, Any]]) -> bool:
    """Send the replies of a batch in one message; when one of them cannot be pickled, each
    on its own (that one as an error). False once the parent is gone."""
    try:
        pipe.send(("group", replies))
        return True
    except (pickle.PicklingError, TypeError, AttributeError, MemoryError):
        pass  # nothing was written: pickling comes first
    except OSError:
        return False
    for reply in replies:
        try:
            pipe.send(("group", [reply]))
        except (pickle.PicklingError, TypeError, AttributeError, MemoryError) as exc:
            error = (
                out_of_memory("handing the result over")
                if isinstance(exc, MemoryError)
                else EngineError(f"the result cannot be handed over: {exc}")
            )
            try:
                pipe.send(("group", [("error", error)]))
            except OSError:
                return False
        except OSError:
            return False
    return True


def _close(stream: Iterator[Any] | None) -> None:
    close = getattr(stream, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            close()


def _portable(exc: Exception) -> EngineError:
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
