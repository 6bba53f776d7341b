"""The tool-calling agent through the scripted loopback server (replies with native tool
calls), and the agent's options on `querybench run` (stored, part of the run identity)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.agent import AgentConfig, AgentResult, Workspace, WorkspaceOptions, run_agent
from querybench.agent.tool_calls import ACTION_TOOLS, TOOLS
from querybench.cli import app
from querybench.engines import connect
from querybench.models import Sampling
from querybench.runs.config import RunConfig, Selection
from querybench.runs.runner import run
from tests.methods_fixture import model, task
from tests.openai_server import Reply, ScriptedServer


def call(name: str, text: str = "", **arguments: object) -> Reply:
    args = json.dumps(arguments)
    return Reply(text, prompt_tokens=100, completion_tokens=10, tool_calls=((name, args),))


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(default=call("GetTables")) as s:
        yield s


def test_tools_are_the_actions() -> None:
    names = [t.name for t in ACTION_TOOLS]
    assert names == [
        "Bash",
        "CreateFile",
        "EditFile",
        "ExecuteSQL",
        "GetTables",
        "GetTabInfo",
        "SampleRows",
        "FAIL",
        "Terminate",
    ]
    sql = next(t for t in ACTION_TOOLS if t.name == "ExecuteSQL").parameters
    assert sql["required"] == ["sql_query"]
    assert sql["properties"]["is_save"] == {"type": "boolean"}


def test_tool_session_scores_one(data: Path, server: ScriptedServer, tmp_path: Path) -> None:
    server.script(
        [
            call("GetTables", "What tables are there?"),
            call("GetTabInfo", table="items"),
            call("SampleRows", table="items", row_number=2, save_path="items.json"),
            call(
                "ExecuteSQL",
                sql_query="SELECT count(*) FROM items",
                is_save=True,
                save_path="result.csv",
            ),
            call("Terminate", "Done.", output="result.csv"),
        ]
    )
    out = tmp_path / "run"
    config = RunConfig(
        "spider1", "tool-agent", "scripted", out=out, selection=Selection(data_dir=data, limit=1)
    )
    outcome = run(config, model=model(server))
    assert outcome.summary["score"] == 1.0
    assert outcome.records["0"].sql == "SELECT count(*) FROM items"
    trajectory = json.loads((out / "trajectories" / "0.json").read_text())
    assert trajectory["status"] == "terminated"
    steps = trajectory["steps"]
    assert [s["action"]["name"] for s in steps][-2:] == ["ExecuteSQL", "Terminate"]
    assert steps[0]["thought"] == "What tables are there?"
    assert "items (3 columns)" in steps[0]["observation"]
    first = server.requests[0]
    assert [t["function"]["name"] for t in first["tools"]][:2] == ["Bash", "CreateFile"]
    assert first["tool_choice"] == "auto" and first["temperature"] == 1.0
    # the observation goes back as the tool's answer to the call it belongs to
    answer = server.requests[1]["messages"][-1]
    assert answer == {
        "role": "tool",
        "content": steps[0]["observation"],
        "tool_call_id": "call_0",
    }
    assert server.requests[1]["messages"][-2]["tool_calls"][0]["function"]["name"] == "GetTables"


def tool_agent(data: Path, server: ScriptedServer, config: AgentConfig) -> AgentResult:
    engine = connect(data / "spider1" / "shop" / "shop.sqlite")
    workspace = Workspace(task(data, 0), engine, WorkspaceOptions())
    try:
        return asyncio.run(run_agent(workspace, model(server), config, Sampling(), TOOLS))
    finally:
        workspace.close()


def test_tool_loop_rules(data: Path, server: ScriptedServer) -> None:
    server.script([call("GetTabInfo", table=f"t{i}") for i in range(4)])
    result = tool_agent(data, server, AgentConfig(max_steps=4))
    assert result.status == "max_steps" and len(result.steps) == 4
    result = tool_agent(data, server, AgentConfig())
    assert result.status == "repeated" and len(result.steps) == 3


def test_bad_calls_become_observations(data: Path, server: ScriptedServer) -> None:
    two = (("GetTables", "{}"), ("Terminate", '{"output": "early"}'))
    server.script(
        [
            Reply("I think it is 3."),
            Reply("", tool_calls=(("ExecuteSQL", "{not json"),)),
            call("Nope"),
            call("GetTabInfo", tabel="items"),
            Reply("", tool_calls=two),
            call("Terminate", output="3"),
        ]
    )
    result = tool_agent(data, server, AgentConfig())
    observations = [s.observation for s in result.steps]
    assert "called no tool" in observations[0]
    assert "not valid JSON" in observations[1]
    assert "unknown tool 'Nope'" in observations[2]
    assert "no parameter 'tabel'" in observations[3]
    assert "items" in observations[4]
    assert result.status == "terminated" and result.answer == "3"
    # the second call of a reply is answered as not run, so the history stays valid
    sent = server.requests[5]["messages"]
    assert sent[-1]["role"] == "tool" and sent[-1]["content"].startswith("Not run")
    assert sent[-2]["tool_call_id"] == "call_0" and sent[-1]["tool_call_id"] == "call_1"


def test_cli_agent_options_are_stored_and_checked_on_resume(data: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "run"
    base = ["run", "spider1", "--method", "spider-agent", "--limit", "1", "--out", str(out)]
    base += ["--model", "oracle"]
    env = {"QUERYBENCH_DATA": str(data)}
    first = runner.invoke(app, [*base, "--max-steps", "5", "--action-timeout", "9"], env=env)
    assert first.exit_code == 0, first.output
    extra = json.loads((out / "config.json").read_text())["extra"]
    # continue_after_timeout is stored at its default too: its absence means an older folder
    assert extra == {"max_steps": 5, "action_timeout": 9.0, "continue_after_timeout": False}
    again = runner.invoke(app, [*base, "--max-steps", "5", "--action-timeout", "9"], env=env)
    assert again.exit_code == 0, again.output
    changed = runner.invoke(app, [*base, "--max-steps", "6", "--unsafe-bash"], env=env)
    assert changed.exit_code == 2
    message = " ".join(changed.output.split())
    assert "another experiment" in message and "max_steps: 5 -> 6" in message
    assert "action_timeout: 9.0 -> 120.0" in message and "unsafe_bash: False -> True" in message
    # an option given at its default is the same experiment as the option left out
    fresh = tmp_path / "fresh"
    plain = [*base[:-4], "--out", str(fresh), "--model", "oracle"]
    assert runner.invoke(app, plain, env=env).exit_code == 0
    assert runner.invoke(app, [*plain, "--max-steps", "30"], env=env).exit_code == 0
    other = runner.invoke(
        app, ["run", "spider1", "--max-steps", "3", "--out", str(tmp_path / "z")], env=env
    )
    assert other.exit_code == 2 and "--max-steps" in other.output


def test_a_folder_from_before_the_timeout_rule_resumes_only_as_it_ran(
    data: Path, tmp_path: Path
) -> None:
    """A config.json without `continue_after_timeout` was written when an action past its limit
    did not end the episode: resuming it under the new default is another experiment; with
    `--continue-after-timeout` it is the same one."""
    runner = CliRunner()
    out = tmp_path / "run"
    base = ["run", "spider1", "--method", "spider-agent", "--model", "oracle", "--limit", "1"]
    base += ["--out", str(out)]
    env = {"QUERYBENCH_DATA": str(data)}
    assert runner.invoke(app, base, env=env).exit_code == 0
    config = json.loads((out / "config.json").read_text())
    del config["extra"]["continue_after_timeout"]  # as written before the option existed
    (out / "config.json").write_text(json.dumps(config))
    refused = runner.invoke(app, base, env=env)
    assert refused.exit_code == 2
    assert "continue_after_timeout: True -> False" in " ".join(refused.output.split())
    resumed = runner.invoke(app, [*base, "--continue-after-timeout"], env=env)
    assert resumed.exit_code == 0, resumed.output
