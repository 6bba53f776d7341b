"""A whole `vf-eval` run of the multi-turn tools environment against the scripted server: the
SQL tool server runs as an MCP subprocess, `submit` syncs the SQL back into the rollout state,
and the rollout stops on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.openai_server import Reply, ScriptedServer
from tests.vf_eval_run import reward, run_vf_eval

pytest.importorskip("querybench_sql_tools")

ANSWER = "SELECT count(*) FROM singer"


def explore_then_submit(body: dict[str, Any]) -> Reply:
    """`list_tables` first; once its result is in the messages, `submit` the answer."""
    messages = body.get("messages", [])
    if any(m.get("role") == "tool" for m in messages):
        return Reply("", tool_calls=(("submit", json.dumps({"sql": ANSWER})),))
    return Reply("", tool_calls=(("list_tables", "{}"),))


@pytest.mark.slow
def test_vf_eval_tools_null_harness_scores_submitted_sql(tmp_path: Path) -> None:
    # Questions 0 and 1 ask for the number of singers; question 2 does not.
    with ScriptedServer(explore_then_submit) as server:
        by_name = run_vf_eval("querybench-sql-tools", server, tmp_path)
    # Two model turns per task: the second sees the real list_tables result.
    assert len(server.requests) == 6
    tool_results = [
        m["content"]
        for body in server.requests
        for m in body["messages"]
        if m.get("role") == "tool"
    ]
    assert len(tool_results) == 3
    assert all("singer" in str(content).split() for content in tool_results), tool_results
    assert sorted(by_name) == ["0", "1", "2"]
    # The final replies carry no ```sql block: a reward of 1 needs the synced submitted SQL.
    assert [reward(by_name[i]) for i in ("0", "1", "2")] == [1.0, 1.0, 0.0]
    for trace in by_name.values():
        assert trace["stop_condition"] == "submitted"
        assert trace["errors"] == []
        assert trace["metrics"]["error"] == 0.0 and trace["metrics"]["gold_error"] == 0.0
