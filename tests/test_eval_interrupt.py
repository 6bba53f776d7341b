"""Ctrl-C during `eval`: the running query's child is killed at once (not waited for until its
timeout), the queries that finished are kept in the result cache, and the command ends with
one line and exit 130, so running it again resumes from what was done (the queries sent
to the child in the same batch as the interrupted one are run again).

A real `querybench eval spider1` in a subprocess, one prediction an endless recursive CTE on
SQLite, sent SIGINT as a terminal sends it (to the whole process group) or to querybench alone
(`kill -INT`); with few queries they run in one child from the main thread, with many on the
pool's worker threads.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from querybench.engines.cache import ResultCache
from querybench.evaluation.execution import BATCH, MAX_ROWS

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c"


def _finite(i: int) -> str:
    cte = f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < {i})"
    return f"{cte} SELECT count(*) > 0 FROM c"


def _inputs(tmp_path: Path, many: bool) -> tuple[Path, list[str]]:
    database = tmp_path / "db" / "toy" / "toy.sqlite"
    database.parent.mkdir(parents=True)
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (a)")
        db.execute("INSERT INTO t VALUES (1)")
    db.close()
    finished = [_finite(50_000 + i) for i in range(60 if many else 2)]
    predictions = [*finished[: len(finished) // 2], ENDLESS, *finished[len(finished) // 2 :]]
    (tmp_path / "gold.sql").write_text("".join("SELECT 1\ttoy\n" for _ in predictions))
    (tmp_path / "pred.sql").write_text("".join(f"{sql}\n" for sql in predictions))
    return database, finished


@pytest.mark.parametrize("many", [False, True], ids=["one-child", "pool"])
@pytest.mark.parametrize("group", [True, False], ids=["terminal", "kill-int"])
def test_ctrl_c_stops_eval_at_once_keeping_what_finished(
    tmp_path: Path, many: bool, group: bool
) -> None:
    database, finished = _inputs(tmp_path, many)
    cache = tmp_path / "cache"
    env = dict(os.environ, QUERYBENCH_CACHE=str(cache), PYTHONPATH=str(ROOT))
    args = [sys.executable, "-c", "from querybench._entry import main; main()", "eval", "spider1"]
    args += ["--gold", "gold.sql", "--predictions", "pred.sql", "--db-dir", "db"]
    args += ["--timeout", "600", "--output", "out.jsonl"]
    child = subprocess.Popen(
        args,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        process_group=0,
    )
    try:
        time.sleep(4)  # the finite queries are done in well under this; the endless one runs
        assert child.poll() is None, child.communicate()
        if group:
            os.killpg(child.pid, signal.SIGINT)
        else:
            child.send_signal(signal.SIGINT)
        _out, err = child.communicate(timeout=60)  # not the query's 600 s timeout
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == 130, err
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == (
        "interrupted: no results written; the queries that finished are kept in the result "
        "cache, so the same command resumes from them"
    )
    assert not (tmp_path / "out.jsonl").exists()
    # The gold's query ran first, on its own; of the predictions before the endless one, all
    # but those sent to the child in the same batch as it (up to `BATCH` - 1) finished.
    before = [(str(database), sql) for sql in finished[: len(finished) // 2]]
    store = ResultCache(cache)
    try:
        kept = store.get_outcomes([(str(database), "SELECT 1"), *before], max_rows=MAX_ROWS)
    finally:
        store.close()
    assert (str(database), "SELECT 1") in kept
    assert len(kept) - 1 >= len(before) - (BATCH - 1)
