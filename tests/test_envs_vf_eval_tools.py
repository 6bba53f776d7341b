"""A whole `vf-eval` run of the multi-turn tools environment against the scripted server: the
SQL tool server runs as an MCP subprocess, `submit` syncs the SQL back into the rollout state,
and the rollout stops on it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_data
from tests.openai_server import Reply, ScriptedServer

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
    require_data("spider1", "concert_singer")
    bin_dir = Path(sys.executable).parent
    vf_eval = bin_dir / "vf-eval"
    if not vf_eval.exists() or shutil.which("uv", path=str(bin_dir)) is None:
        pytest.skip("vf-eval or uv is not installed (pip install -e '.[rl]')")
    # Questions 0 and 1 ask for the number of singers; question 2 does not.
    with ScriptedServer(explore_then_submit) as server:
        env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", OPENAI_API_KEY="x")
        done = subprocess.run(
            [
                str(vf_eval),
                "querybench-sql-tools",
                "--env.taskset.benchmark",
                "spider1",
                "--env.taskset.num-tasks",
                "3",
                "-m",
                "scripted",
                "--client.base-url",
                server.url,
                "--no-push",
                "--env.agent.harness.id",
                "null",
                "--env.agent.runtime.type",
                "subprocess",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
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

    [traces] = list(tmp_path.glob("outputs/*/traces.jsonl"))
    by_name: dict[str, dict[str, Any]] = {}
    for line in traces.read_text().splitlines():
        record = json.loads(line)
        [trace] = record["traces"]
        by_name[record["task"]["data"]["name"]] = trace

    def score(entry: object) -> float:
        return float(entry["score"] if isinstance(entry, dict) else entry)  # type: ignore[arg-type]

    assert sorted(by_name) == ["0", "1", "2"]
    # The final replies carry no ```sql block: a reward of 1 needs the synced submitted SQL.
    assert [score(by_name[i]["rewards"]["execution_match"]) for i in ("0", "1", "2")] == [
        1.0,
        1.0,
        0.0,
    ]
    for trace in by_name.values():
        assert trace["stop_condition"] == "submitted"
        assert trace["errors"] == []
        assert trace["metrics"]["error"] == 0.0 and trace["metrics"]["gold_error"] == 0.0
        assert len(trace["calls"]) == 2
