"""Harness overhead per agent step: querybench's design against the official one, side by side.

A scripted model (in process, answering at once) drives the text-protocol agent through the
same six steps on each Spider 1.0 dev task whose database is here: GetTables, GetTabInfo,
SampleRows, ExecuteSQL printing the gold query's rows, ExecuteSQL saving them as CSV, Terminate.
The time of a step is from one model request to the next (reply parsing, the action,
observation truncation, history fitting and token counting), so it is the harness's own cost.

* querybench: every action in process, through the task's engine (one read-only connection
  per task, kept open);
* official design: the same loop, but every database action starts a new Python process that
  opens a new sqlite3 connection, runs the statement and prints or saves the result (what the
  official agent does per SQL call, without its Docker exec and pandas import, so this side is a
  lower bound).

    .venv/bin/python bench/bench_agent_step.py [--limit 200]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from querybench.agent import AgentConfig, Workspace, WorkspaceOptions, run_agent
from querybench.agent.actions import Action, ExecuteSQL, GetTabInfo, GetTables, SampleRows
from querybench.agent.protocol import format_action
from querybench.data.roots import data_root
from querybench.engines import connect
from querybench.models.base import ChatRequest, Completion, Sampling, Usage
from querybench.tasks import load_tasks
from querybench.tasks.databases import task_database
from querybench.tasks.model import Task

# The official design's per-call program: a new interpreter, a new connection, one statement.
ONE_CALL = """
import csv, sqlite3, sys
db, sql, save = sys.argv[1], sys.argv[2], sys.argv[3]
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
cur = con.execute(sql)
rows = cur.fetchall()
names = [d[0] for d in cur.description or ()]
if save:
    with open(save, "w", newline="") as f:
        w = csv.writer(f); w.writerow(names); w.writerows(rows)
    print(f"Saved {len(rows)} rows to {save}.")
else:
    print(",".join(names)); [print(",".join(map(str, r))) for r in rows[:50]]
"""


class Scripted:
    """Six replies per task, at once; records when each request arrives."""

    name = "scripted"

    def __init__(self, table: str) -> None:
        self.table = table
        self.arrivals: list[float] = []

    async def complete(self, request: ChatRequest, task: Task | None = None) -> Completion:
        self.arrivals.append(time.perf_counter())
        assert task is not None and task.gold.sql
        done = sum(m.role == "assistant" for m in request.messages)
        sql = task.gold.sql
        actions = [
            format_action("GetTables"),
            format_action("GetTabInfo", table=self.table),
            format_action("SampleRows", table=self.table, row_number=3),
            format_action("ExecuteSQL", sql_query=sql),
            format_action("ExecuteSQL", sql_query=sql, is_save=True, save_path="result.csv"),
            format_action("Terminate", output="result.csv"),
        ]
        return Completion(f"Thought: step {done}\nAction: {actions[done]}", Usage(1, 1))

    async def aclose(self) -> None:
        return None


class OfficialDesignWorkspace(Workspace):
    """Every database action through a new process and a new sqlite3 connection."""

    def __init__(self, task: Task, database: Path, options: WorkspaceOptions) -> None:
        super().__init__(task, connect(database), options)
        self.database = database

    def _execute(self, action: Action) -> str:
        if isinstance(action, ExecuteSQL):
            save = str(self.resolve(action.save_path)) if action.is_save else ""
            self.sql_log.append((action.sql_query, action.save_path if save else ""))
            return self._call(action.sql_query, save)
        if isinstance(action, GetTables):
            return self._call("SELECT name FROM sqlite_master WHERE type = 'table'", "")
        if isinstance(action, GetTabInfo):
            return self._call(f'PRAGMA table_info("{action.table}")', "")
        if isinstance(action, SampleRows):
            return self._call(f'SELECT * FROM "{action.table}" LIMIT {action.row_number}', "")
        return super()._execute(action)

    def _call(self, sql: str, save: str) -> str:
        argv = [sys.executable, "-c", ONE_CALL, str(self.database), sql, save]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        return done.stdout + done.stderr


def first_table(database: Path) -> str:
    con = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT name FROM sqlite_master WHERE type = 'table' LIMIT 1").fetchone()
    finally:
        con.close()
    return str(row[0])


def steps_of(task: Task, database: Path, official: bool) -> tuple[list[float], float, str]:
    """Per-step wall times, the workspace setup + teardown time, and the agent's status."""
    options = WorkspaceOptions()
    start = time.perf_counter()
    workspace: Workspace = (
        OfficialDesignWorkspace(task, database, options)
        if official
        else Workspace(task, connect(database), options)
    )
    setup = time.perf_counter() - start
    model = Scripted(first_table(database))
    result = asyncio.run(run_agent(workspace, model, AgentConfig(), Sampling()))
    end = time.perf_counter()
    start = time.perf_counter()
    workspace.close()
    setup += time.perf_counter() - start
    marks = [*model.arrivals, end]
    return [b - a for a, b in itertools.pairwise(marks)], setup, result.status


def summary(times: list[float]) -> dict[str, Any]:
    ordered = sorted(times)
    return {
        "steps": len(ordered),
        "median_ms": round(1000 * statistics.median(ordered), 2),
        "p90_ms": round(1000 * ordered[int(0.9 * (len(ordered) - 1))], 2),
        "mean_ms": round(1000 * statistics.fmean(ordered), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=200, help="first N tasks with a database")
    args = parser.parse_args()
    root = data_root()
    tasks = [(t, task_database(t, root)) for t in load_tasks("spider1")]
    chosen = [(t, db) for t, db in tasks if db is not None][: args.limit]
    report: dict[str, Any] = {"tasks": len(chosen)}
    for label, official in (("querybench", False), ("official_design", True)):
        times: list[float] = []
        setups: list[float] = []
        statuses = set()
        for task, database in chosen:
            assert database is not None
            step_times, setup, status = steps_of(task, database, official)
            times += step_times
            setups.append(setup)
            statuses.add(status)
        report[label] = {
            **summary(times),
            "sql_steps": summary([t for i, t in enumerate(times) if i % 6 in (3, 4)]),
            "workspace_ms_mean": round(1000 * statistics.fmean(setups), 2),
            "statuses": sorted(statuses),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
