"""The verifiers multi-turn taskset: the SQL tool server's tools, its stops, and verifiers'
own scoring of the submitted SQL on real traces (the MCP subprocess is not launched here)."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

vf = pytest.importorskip("verifiers.v1")

from querybench.envs.multi_turn_env import MultiTurnSQLTask, load_environment  # noqa: E402
from querybench.envs.sql_toolset import SQLToolset, SQLToolsState  # noqa: E402

GOLD = "SELECT name FROM item WHERE price > 1"


@pytest.fixture
def task(tmp_path: Path) -> MultiTurnSQLTask:
    db = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE item (name TEXT, price REAL); INSERT INTO item VALUES ('a', 1), ('b', 2);"
    )
    conn.commit()
    conn.close()
    entry = {"id": "q1", "question": "Items over 1?", "database": "shop.sqlite", "gold_sql": GOLD}
    (tmp_path / "tasks.jsonl").write_text(json.dumps(entry) + "\n")
    [task] = list(load_environment(benchmark="custom", path=tmp_path / "tasks.jsonl"))
    assert "call submit" in task.data.prompt
    return task  # type: ignore[no-any-return]


def trace_of(task: MultiTurnSQLTask, reply: str = "") -> Any:
    return vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data),
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        root_reply=reply,
        state=SQLToolsState(),
    )


def score(task: MultiTurnSQLTask, trace: Any) -> tuple[float, dict[str, float]]:
    asyncio.run(task.score(trace))
    return trace.rewards["execution_match"].score, dict(trace.metrics)


def test_tools_read_the_rollout_database_and_submit_is_scored(task: MultiTurnSQLTask) -> None:
    trace = trace_of(task)
    asyncio.run(task.setup(trace, None))
    toolset = SQLToolset(vf.ToolsetConfig())
    toolset.state.database = trace.state.database  # as the state channel hands it over

    async def explore() -> list[str]:
        return [
            await toolset.list_tables(),
            await toolset.describe_table("item"),
            await toolset.sample_rows("item"),
            await toolset.execute_sql("SELECT count(*) FROM item"),
            await toolset.execute_sql("DELETE FROM item"),
            await toolset.submit("SELECT name FROM item WHERE price >= 2"),
        ]

    try:
        tables, columns, sample, count, delete, submitted = asyncio.run(explore())
        assert len(toolset._boxes) == 1  # one toolbox for the rollout's database
    finally:
        toolset.close()
    assert tables == "item" and "price REAL" in columns and "b\t2.0" in sample
    assert count.splitlines()[1] == "2" and delete.startswith("error:")
    assert submitted == "submitted"
    trace.state.submitted = toolset.state.submitted  # the tool's write, synced back
    assert asyncio.run(task.submitted(trace)) is True
    assert score(task, trace) == (1.0, {"error": 0.0, "trivial": 0.0, "gold_error": 0.0})


def test_wrong_submit_fallback_block_and_nothing(task: MultiTurnSQLTask) -> None:
    wrong = trace_of(task, reply="```sql\nSELECT name FROM item\n```")
    wrong.state.submitted = "SELECT 1"  # the submission wins over the reply's block
    assert score(task, wrong)[0] == 0.0 and wrong.metrics["trivial"] == 1.0
    fallback = trace_of(task, reply=f"Done.\n```sql\n{GOLD}\n```")
    assert score(task, fallback)[0] == 1.0
    nothing = trace_of(task, reply="I could not find it.")
    assert asyncio.run(task.submitted(nothing)) is False
    assert score(task, nothing) == (0.0, {"error": 1.0, "trivial": 0.0, "gold_error": 0.0})


def test_turn_limit_and_tool_registration(tmp_path: Path) -> None:
    from mcp.server.mcpserver import MCPServer

    entry = {"id": "q", "question": "?", "database": "x.sqlite", "gold_sql": "SELECT 1"}
    sqlite3.connect(tmp_path / "x.sqlite").close()
    (tmp_path / "t.jsonl").write_text(json.dumps(entry) + "\n")
    taskset = load_environment(benchmark="custom", path=tmp_path / "t.jsonl", task={"max_turns": 0})
    [task] = list(taskset)
    assert task.config.max_turns == 0 and asyncio.run(task.turn_limit(trace_of(task))) is True
    [toolset] = MultiTurnSQLTask.toolsets(task.config)
    mcp = MCPServer("sql")
    toolset.register(mcp)
    names = {tool.name for tool in asyncio.run(mcp.list_tools())}
    assert names == {"execute_sql", "list_tables", "describe_table", "sample_rows", "submit"}


def test_vf_eval_resolves_the_packaged_taskset() -> None:
    pytest.importorskip("querybench_sql_tools")
    from verifiers.v1.utils.loaders import taskset_class

    assert taskset_class("querybench-sql-tools").__name__ == "SQLToolsTaskset"


def test_execute_sql_runs_in_a_supervised_query_child(task: MultiTurnSQLTask) -> None:
    # The tool server's `execute_sql` goes through the one boundary: the query runs in a
    # supervised query child (killable at its deadline, `engines/supervisor.py`), not in the
    # tool server's own process.
    from querybench.engines.isolated import IsolatedEngine

    trace = trace_of(task)
    asyncio.run(task.setup(trace, None))
    toolset = SQLToolset(vf.ToolsetConfig())
    toolset.state.database = trace.state.database
    try:
        told = asyncio.run(toolset.execute_sql("SELECT count(*) FROM item"))
        engine = toolset.toolbox().engine
        assert isinstance(engine, IsolatedEngine)
        pid = engine._process.pid
        assert pid is not None and pid != os.getpid()
    finally:
        toolset.close()
    assert told.splitlines()[1] == "2"
