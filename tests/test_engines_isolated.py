"""QueryProcess: a query that no engine can interrupt still ends at its timeout, as a timeout."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from querybench.engines.isolated import QueryProcess
from querybench.engines.supervision import query_environment
from querybench.engines.timeouts import wall_cap
from querybench.errors import EngineError, QueryRefused, QueryTimeout, ResultTooLarge
from tests.test_engines_conformance import ENDLESS, build_database

# Single calls that run for many seconds without ever reaching the engine's interrupt check
# (SQLite's progress handler runs between virtual-machine steps, DuckDB's between vectors).
SINGLE_CALL_BOMBS = {
    "sqlite": [
        "SELECT printf('%.*c', 2147483647, 'x')",
        "SELECT 1 WHERE printf('%.*c', 5000000, 'a') LIKE '%' || printf('%.*c', 5000, 'a') || 'b%'",
    ],
    "duckdb": ["SELECT length(repeat('x', 2000000000))"],
}
TIMEOUT = 1.0
# Generous: the kill comes GRACE_S of CPU time past TIMEOUT (on a loaded machine, many wall
# seconds later), and at the latest GRACE_S past the wall cap.
DID_NOT_HANG = wall_cap(TIMEOUT) + 10


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {k: build_database(k, tmp_path_factory.mktemp(f"iso-{k}")) for k in SINGLE_CALL_BOMBS}


@pytest.fixture
def process() -> Iterator[QueryProcess]:
    with QueryProcess() as served:
        yield served


@pytest.mark.parametrize(
    ("kind", "sql"), [(k, sql) for k, sqls in SINGLE_CALL_BOMBS.items() for sql in sqls]
)
def test_a_single_call_bomb_ends_at_its_timeout_as_a_timeout(
    databases: dict[str, Path], process: QueryProcess, kind: str, sql: str
) -> None:
    engine = process.engine(databases[kind])
    start = time.monotonic()
    with pytest.raises(QueryTimeout, match="timeout"):
        engine.execute(sql, timeout=TIMEOUT)
    assert time.monotonic() - start < DID_NOT_HANG
    # The next query gets a fresh process and the database reopened in it.
    assert engine.execute("SELECT count(*) FROM singer", timeout=TIMEOUT).rows == [(3,)]


@pytest.mark.parametrize("timeout", [float("nan"), float("inf")])
def test_a_timeout_no_clock_reaches_is_refused_not_a_step_without_deadline(
    databases: dict[str, Path], process: QueryProcess, timeout: float
) -> None:
    """A NaN or an infinite timeout (a hostile manifest's, an API caller's) made a deadline
    no clock passes: an endless query ran forever (`verify` of such a manifest hung). The
    step is refused with the reason, and the child serves the next query."""
    engine = process.engine(databases["sqlite"])
    with pytest.raises(EngineError, match="finite number of seconds"):  # even a quick one
        engine.execute("SELECT count(*) FROM singer", timeout=timeout)
    assert engine.execute("SELECT count(*) FROM singer", timeout=TIMEOUT).rows == [(3,)]


def test_the_engines_own_timeout_still_answers_first(
    databases: dict[str, Path], process: QueryProcess
) -> None:
    engine = process.engine(databases["sqlite"])
    engine.execute("SELECT 1", timeout=TIMEOUT)
    pid = _child_pid(process)
    with pytest.raises(QueryTimeout):
        engine.execute(ENDLESS, timeout=0.3)
    assert _child_pid(process) == pid  # interrupted by SQLite itself: nothing was killed


def test_errors_keep_their_kind_and_nothing_is_opened_twice(
    databases: dict[str, Path], process: QueryProcess, tmp_path: Path
) -> None:
    engine = process.engine(databases["sqlite"])
    with pytest.raises(QueryRefused):
        engine.execute("DELETE FROM singer")
    with pytest.raises(ResultTooLarge):
        engine.execute("SELECT a.n FROM nums a, nums b", max_rows=10)
    with pytest.raises(EngineError, match="no such table") as no_table:
        engine.execute("SELECT * FROM nowhere")
    assert type(no_table.value) is EngineError
    with pytest.raises(EngineError, match="not found") as absent:
        process.engine(tmp_path / "absent.sqlite")
    assert type(absent.value) is EngineError
    assert [t.name for t in engine.tables()][:2] == ["concert", "nums"]


def test_batches_stream_and_stop_early(databases: dict[str, Path], process: QueryProcess) -> None:
    engine = process.engine(databases["sqlite"])
    batches = engine.execute_batches("SELECT n FROM nums ORDER BY n", timeout=TIMEOUT, batch=300)
    with contextlib.closing(batches):
        first = next(batches)
    assert [n for (n,) in first] == list(range(300))
    # The stream was stopped in the child: the process serves the next query at once.
    assert engine.execute("SELECT count(*) FROM nums", timeout=TIMEOUT).rows == [(1000,)]
    bomb = engine.execute_batches(SINGLE_CALL_BOMBS["sqlite"][0], timeout=TIMEOUT)
    start = time.monotonic()
    with pytest.raises(QueryTimeout), contextlib.closing(bomb):
        list(bomb)
    assert time.monotonic() - start < DID_NOT_HANG


def test_a_child_killed_from_outside_is_replaced(
    databases: dict[str, Path], process: QueryProcess
) -> None:
    engine = process.engine(databases["sqlite"])
    batches = engine.execute_batches("SELECT n FROM nums", timeout=TIMEOUT, batch=10)
    assert len(next(batches)) == 10
    pid = _child_pid(process)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # e.g. the kernel's out-of-memory killer
    with pytest.raises(EngineError, match="process ended") as ended:
        next(batches)  # a stream cut short is an error, never a shorter result
    assert type(ended.value) is EngineError
    assert engine.execute("SELECT count(*) FROM nums", timeout=TIMEOUT).rows == [(1000,)]
    pid = _child_pid(process)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # now between queries
    time.sleep(0.2)
    assert engine.execute("SELECT count(*) FROM nums", timeout=TIMEOUT).rows == [(1000,)]


def test_a_closed_engine_or_process_refuses_to_run(
    databases: dict[str, Path], process: QueryProcess
) -> None:
    engine = process.engine(databases["duckdb"])
    engine.close()
    with pytest.raises(EngineError, match="closed") as engine_closed:
        engine.execute("SELECT 1")
    assert type(engine_closed.value) is EngineError
    process.close()
    with pytest.raises(EngineError, match="closed") as process_closed:
        process.engine(databases["duckdb"])
    assert type(process_closed.value) is EngineError


def _child_pid(process: QueryProcess) -> int | None:
    return process.pid


def _in_fresh_interpreter(script: str, env: dict[str, str] | None = None) -> list[str]:
    """The lines `script` prints, run by a fresh single-threaded interpreter."""
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {}), "PYTHONPATH": str(root)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_a_single_threaded_pool_forks_its_children_and_ends_them_cleanly(
    databases: dict[str, Path],
) -> None:
    # No forkserver (a new interpreter, 0.1 s before the first query) when the caller has no
    # other thread; closing asks each forked child to end (a sibling holds its pipe's other
    # end, so it would never read EOF and be killed after a 5 s wait).
    script = f"""
import multiprocessing.forkserver as fs
from querybench.engines.pool import QueryJob, QueryPool
pool = QueryPool(workers=2)
jobs = [QueryJob(str(i), {str(databases["sqlite"])!r}, "SELECT 1") for i in range(8)]
print(all(o.result is not None for o in pool.run(jobs)))
children = [c._child._process for c in pool._all_open]
pool.close()
print(fs._forkserver._forkserver_pid is None)
print(*[c.exitcode for c in children])
"""
    assert _in_fresh_interpreter(script) == ["True", "True", "0", "0"]


def test_a_forked_child_exits_by_itself_on_close(databases: dict[str, Path]) -> None:
    script = f"""
from querybench.engines.isolated import QueryProcess
first, second = QueryProcess(), QueryProcess()
first.start(); second.start()
child = first._child._process
first.engine({str(databases["sqlite"])!r}).execute("SELECT 1")
first.close()
print(child.exitcode)
second.close()
"""
    assert _in_fresh_interpreter(script) == ["0"]  # not -9: it was not killed


# A child's loop run in a test's fresh interpreter: `served(*messages, **setup)` serves the
# setup and the messages through `child.serve` and gives back what the child sent.
_SERVED = """
from querybench.engines.child import ChildSetup, serve
from querybench.engines.supervisor import _shared_file
class Pipe:
    def __init__(self, inbox):
        self.inbox, self.sent = list(inbox), []
    def recv(self):
        if not self.inbox:
            raise EOFError
        return self.inbox.pop(0)
    def send(self, message):
        self.sent.append(message)
    def send_bytes(self, data):
        import pickle
        self.sent.append(pickle.loads(data))
def served(*messages, **setup):
    pipe = Pipe([ChildSetup(ignore_ctrl_c=False, **setup), *messages])
    serve(pipe, pipe, _shared_file(64))
    return pipe.sent
"""


def test_the_child_drops_the_parents_secrets() -> None:
    script = (
        _SERVED
        + """
import os
served()
print("OPENAI_API_KEY" in os.environ, "HF_TOKEN" in os.environ, "PATH" in os.environ)
"""
    )
    secrets = {"OPENAI_API_KEY": "sk-test", "HF_TOKEN": "hf-test"}
    assert _in_fresh_interpreter(script, secrets) == ["False", "False", "True"]


def test_a_batch_times_each_query_and_runs_the_rest_after_a_kill(
    databases: dict[str, Path], process: QueryProcess
) -> None:
    # One message for the batch; the bomb in its middle is killed at its own timeout and
    # the queries after it run in a fresh child, each on its own timeout again.
    database = str(databases["sqlite"])
    bomb = SINGLE_CALL_BOMBS["sqlite"][0]
    sqls = ["SELECT 1", bomb, "SELECT nope", "SELECT 2", bomb, "SELECT 3"]
    start = time.monotonic()
    outcomes = process.execute_many(database, sqls, timeout=TIMEOUT, max_rows=10)
    assert time.monotonic() - start < 2 * DID_NOT_HANG
    kinds = [o.rows if not isinstance(o, EngineError) else type(o).__name__ for o in outcomes]
    assert kinds == [[(1,)], "QueryTimeout", "EngineError", [(2,)], "QueryTimeout", [(3,)]]
    assert "no such column" in str(outcomes[2])


def test_every_key_token_and_password_is_dropped_but_the_engines_own() -> None:
    environ = {
        "OPENAI_API_KEY": "x",
        "OPENAI_KEY": "x",  # what older Azure and OpenAI samples name it
        "AZURE_OPENAI_KEY": "x",
        "HF_TOKEN": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "SMTP_PASSWORD": "x",
        "REDIS_PASSWD": "x",
        "PATH": "/bin",
        "HOME": "/root",
        "PGPASSWORD": "kept",  # the engines' own password variables
        "MYSQL_PWD": "kept",
        "CLICKHOUSE_PASSWORD": "kept",
        "SNOWFLAKE_PRIVATE_KEY": "kept",
        "GOOGLE_APPLICATION_CREDENTIALS": "/key.json",
    }
    kept = {name for name, value in environ.items() if value != "x"}
    assert set(query_environment(environ)) == kept


def test_a_thread_threading_does_not_count_still_stops_the_direct_fork() -> None:
    # A library's native pool (OpenBLAS, Arrow) is invisible to `threading.active_count`;
    # `_thread.start_new_thread` makes one such thread from Python.
    script = """
import _thread, time
from querybench.engines import isolated
before = isolated.may_fork()
hold = _thread.allocate_lock()
hold.acquire()
_thread.start_new_thread(hold.acquire, ())
time.sleep(0.2)
print(before, isolated.may_fork())
"""
    assert _in_fresh_interpreter(script) == ["True", "False"]


def test_a_child_ignores_ctrl_c_when_its_parent_does(databases: dict[str, Path]) -> None:
    # A background job of a script (`querybench eval ... &`) ignores SIGINT: a Ctrl-C to the
    # script's process group must not kill its query children either, or a query running then
    # is scored as a failure ("the query's process ended (signal 2)") in the file written.
    script = f"""
import os, signal, threading, time
from querybench.engines.isolated import QueryProcess
signal.signal(signal.SIGINT, signal.SIG_IGN)
process = QueryProcess()
engine = process.engine({str(databases["sqlite"])!r})
child = process.pid
threading.Timer(0.5, os.kill, (child, signal.SIGINT)).start()
slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 20000000) "
print(engine.execute(slow + "SELECT count(*) > 0 FROM c", timeout=60).rows)
print(process.pid == child)
process.close()
"""
    assert _in_fresh_interpreter(script) == ["[(1,)]", "True"]


def test_a_batch_of_quick_queries_is_answered_in_one_message(databases: dict[str, Path]) -> None:
    # The child holds its answers while they come within the group's span: three quick
    # queries are one reply message; with no span, each is answered on its own.
    database = str(databases["sqlite"])
    script = (
        _SERVED
        + f"""
for group_s in (60.0, 0.0):
    sqls = ["SELECT 1", "SELECT nope", "SELECT 2"]
    sent = served((0, "execute_many", ({database!r}, sqls, 5.0, 10, group_s)), open_databases=1)
    print(",".join(str(len(replies)) for _, _, replies in sent))
    print(",".join(kind for _, _, replies in sent for kind, _ in replies))
"""
    )
    assert _in_fresh_interpreter(script) == ["3", "ok,error,ok", "1,1,1", "ok,error,ok"]


def test_a_reply_that_cannot_be_handed_over_fails_alone() -> None:
    from querybench.engines.base import Result
    from querybench.engines.child import _send_group

    class Pipe:
        def __init__(self) -> None:
            self.sent: list[object] = []

        def send(self, message: object) -> None:
            import pickle

            pickle.dumps(message)  # as `Connection.send`: nothing is written if this fails
            self.sent.append(message)

    pipe = Pipe()
    good, bad = Result(("a",), [(1,)]), Result(("a",), [(lambda: 1,)])
    assert _send_group(pipe, 0, [("ok", good), ("ok", bad), ("ok", good)])  # type: ignore[arg-type]
    kinds = [[(kind, type(value).__name__) for kind, value in m[2]] for m in pipe.sent]  # type: ignore[index]
    assert kinds == [[("ok", "Result")], [("error", "EngineError")], [("ok", "Result")]]


def test_every_step_of_a_request_has_a_deadline(databases: dict[str, Path]) -> None:
    # A call the caller gave no timeout (an engine's `tables`, as the agents' and the tool
    # server's `list_tables` make it) still runs under one: the open's, so no step of a child
    # is left without a deadline for the parent to kill it at.
    database = str(databases["sqlite"])
    script = (
        _SERVED
        + f"""
from querybench.engines import child
steps = []
announce = child.Progress.step
def step(self, step, timeout, *, cpu=False):
    steps.append((step, timeout))
    announce(self, step, timeout, cpu=cpu)
child.Progress.step = step
sent = served((0, "call", ({database!r}, "tables", (), None)))
print(sent[0][1], all(timeout is not None for _, timeout in steps), len(steps))
"""
    )
    assert _in_fresh_interpreter(script) == ["ok", "True", "2"]
