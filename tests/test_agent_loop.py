"""Spider-Agent over the text protocol, driven through the scripted loopback server: a full
exploration session scored 1 by `querybench run`, and every loop rule exercised."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from querybench.agent import AgentConfig, AgentResult, Workspace, WorkspaceOptions, run_agent
from querybench.engines import connect
from querybench.models import Sampling
from querybench.runs.config import RunConfig, Selection
from querybench.runs.runner import run
from tests.methods_fixture import model, task
from tests.openai_server import Reply, ScriptedServer


def act(action: str, thought: str = "next step") -> Reply:
    return Reply(f"Thought: {thought}\nAction: {action}", prompt_tokens=100, completion_tokens=10)


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(default=act("GetTables()", "stuck")) as s:
        yield s


def test_exploring_session_scores_one(data: Path, server: ScriptedServer, tmp_path: Path) -> None:
    server.script(
        [
            act("GetTables()", "What tables are there?"),
            act('GetTabInfo(table="items")'),
            act('SampleRows(table="items", row_number=2, save_path="items.json")'),
            act(
                'ExecuteSQL(sql_query="SELECT count(*)\nFROM \\"items\\"", is_save=True, '
                'save_path="result.csv")'
            ),
            act('Terminate(output="result.csv")', "Done."),
        ]
    )
    out = tmp_path / "run"
    config = RunConfig(
        "spider1", "spider-agent", "scripted", out=out, selection=Selection(data_dir=data, limit=1)
    )
    outcome = run(config, model=model(server))
    assert outcome.summary["score"] == 1.0
    record = outcome.records["0"]
    assert record.sql == 'SELECT count(*)\nFROM "items"'
    assert record.prompt_tokens == 500 and record.completion_tokens == 50
    trajectory = json.loads((out / "trajectories" / "0.json").read_text())
    assert trajectory["status"] == "terminated"
    assert [s["action"]["name"] for s in trajectory["steps"]] == [
        "GetTables",
        "GetTabInfo",
        "SampleRows",
        "ExecuteSQL",
        "Terminate",
    ]
    observations = [s["observation"] for s in trajectory["steps"]]
    assert "items (3 columns)" in observations[0] and "price" in observations[1]
    assert observations[2] == "Saved 2 rows of items to items.json."
    assert observations[3] == "Saved 1 rows to result.csv."
    assert all(s["model_s"] >= 0 and s["prompt_tokens"] == 100 for s in trajectory["steps"])
    # the observation the model saw is the one recorded, in the next request
    assert server.requests[1]["messages"][-1]["content"] == "Observation: " + observations[0]
    assert server.requests[0]["temperature"] == 1.0 and server.requests[0]["top_p"] == 0.9


def agent(
    data: Path, server: ScriptedServer, config: AgentConfig, **options: object
) -> tuple[AgentResult, Workspace]:
    the_task = task(data, 0)
    engine = connect(data / "spider1" / "shop" / "shop.sqlite")
    workspace = Workspace(the_task, engine, WorkspaceOptions(**options))  # type: ignore[arg-type]
    try:
        result = asyncio.run(run_agent(workspace, model(server), config, Sampling()))
    finally:
        workspace.close()
    return result, workspace


def test_step_cap(data: Path, server: ScriptedServer) -> None:
    server.script([act(f'GetTabInfo(table="t{i}")') for i in range(10)])
    result, _ = agent(data, server, AgentConfig(max_steps=4))
    assert result.status == "max_steps" and len(result.steps) == 4
    assert result.final_sql is None and len(server.requests) == 4


def test_triple_repeat_stops(data: Path, server: ScriptedServer) -> None:
    result, _ = agent(data, server, AgentConfig(max_steps=30))
    assert result.status == "repeated" and len(result.steps) == 3
    assert result.steps[-1].action is None  # the third repeat is not executed


FOREVER = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"


def test_action_timeout_goes_on_when_asked(data: Path, server: ScriptedServer) -> None:
    """`continue_after_timeout`: the official code's way, the error shown and the task going on."""
    server.script(
        [
            act('Bash(code="sleep 30")'),
            act(f'ExecuteSQL(sql_query="{FOREVER}")'),
            act('ExecuteSQL(sql_query="SELECT 7", is_save=True, save_path="a.csv")'),
            act('Terminate(output="a.csv")'),
        ]
    )
    config = AgentConfig(continue_after_timeout=True)
    result, _ = agent(data, server, config, action_timeout=1.0, unsafe_bash=True)
    assert result.status == "terminated" and result.final_sql == "SELECT 7"
    bash, sql = result.steps[0], result.steps[1]
    assert "stopped after 1 s" in bash.observation and bash.action_s < 10
    assert sql.observation.startswith("ERROR") and sql.action_s < 10


@pytest.mark.parametrize(
    ("action", "name"),
    [('Bash(code="sleep 30")', "Bash"), (f'ExecuteSQL(sql_query="{FOREVER}")', "ExecuteSQL")],
)
def test_action_past_its_limit_ends_the_episode(
    data: Path, server: ScriptedServer, action: str, name: str
) -> None:
    """The paper's rule by default: the episode ends as `action_timeout`, its steps and the
    reason kept, no further request sent."""
    server.script(
        [
            act('ExecuteSQL(sql_query="SELECT 7", is_save=True, save_path="a.csv")'),
            act(action),
            act('Terminate(output="a.csv")'),
        ]
    )
    result, _ = agent(data, server, AgentConfig(), action_timeout=1.0, unsafe_bash=True)
    assert result.status == "action_timeout" and len(server.requests) == 2
    assert result.error == f"{name} ran past its time limit of 1 s and was stopped"
    assert [s.action["name"] for s in result.steps if s.action] == ["ExecuteSQL", name]
    last = result.steps[-1]
    assert last.observation and last.action_s < 10
    assert result.steps[0].observation == "Saved 1 rows to a.csv."
    assert result.answer is None and result.final_sql is None
    assert result.to_json()["status"] == "action_timeout"


def test_observation_and_history_truncation(data: Path, server: ScriptedServer) -> None:
    rows = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500) "
    server.script([act(f'ExecuteSQL(sql_query="{rows}SELECT x FROM c")') for _ in range(2)])
    server.script([act('GetTabInfo(table="items")'), act('GetTabInfo(table="shops")')])
    server.script([act('Terminate(output="done")')])
    config = AgentConfig(max_observation_chars=120, context_tokens=900)
    result, _ = agent(data, server, config)
    first = result.steps[0].observation
    assert first.endswith("more characters]") and len(first) < 200
    assert server.requests[1]["messages"][-1]["content"] == "Observation: " + first
    assert result.steps[0].dropped_steps == 0 and result.steps[-1].dropped_steps > 0
    last = server.requests[-1]["messages"]
    assert last[0]["role"] == "system" and last[1]["content"].startswith("Begin")
    assert len(last) < 2 + 2 * 4
    assert result.status == "terminated" and result.answer == "done"


def test_unreadable_reply_is_an_observation(data: Path, server: ScriptedServer) -> None:
    server.script([Reply("I think the answer is 3."), act('Terminate(output="3")')])
    result, _ = agent(data, server, AgentConfig())
    assert "could not be read" in result.steps[0].observation
    assert result.status == "terminated" and result.answer == "3"


def test_bash_refused_without_sandbox(
    data: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("querybench.agent.workspace.sandbox_available", lambda: False)
    server.script([act('Bash(code="echo hi")'), act('Terminate(output="x")')])
    result, _ = agent(data, server, AgentConfig())
    assert "--unsafe-bash" in result.steps[0].observation and not result.steps[
        0
    ].observation.startswith("hi")
    server.script([act('Bash(code="echo hi; pwd")'), act('Terminate(output="x")')])
    result, workspace = agent(data, server, AgentConfig(), unsafe_bash=True)
    assert result.steps[0].observation.startswith("hi\n")
    assert str(workspace.path) in result.steps[0].observation


def test_run_records_action_timeout_and_the_report_counts_it(
    data: Path, server: ScriptedServer, tmp_path: Path
) -> None:
    """`run --action-timeout 1`: the trajectory and the record say `action_timeout` with the
    reason, and the report's status table counts it; `--continue-after-timeout` goes on."""
    from typer.testing import CliRunner

    from querybench.cli import app
    from querybench.report import paper_tables
    from querybench.report.runs import load_run

    runner = CliRunner()
    env = {"QUERYBENCH_DATA": str(data), "OPENAI_API_KEY": "test"}
    ended: dict[str, str] = {}
    for flags in ([], ["--continue-after-timeout"]):
        server.script([act(f'ExecuteSQL(sql_query="{FOREVER}")'), act('Terminate(output="3")')])
        out = tmp_path / f"run{len(flags)}"
        args = ["run", "spider1", "--method", "spider-agent", "--model", "scripted"]
        args += ["--base-url", server.url, "--limit", "1", "--out", str(out), "--no-cache"]
        result = runner.invoke(app, [*args, "--action-timeout", "1", *flags], env=env)
        assert result.exit_code == 0, result.output
        trajectory = json.loads((out / "trajectories" / "0.json").read_text())
        ended[trajectory["status"]] = trajectory["error"]
        record = json.loads((out / "records.jsonl").read_text().splitlines()[0])
        assert record["extra"]["agent_status"] == trajectory["status"]
        table = paper_tables.endings([load_run(out)])
        assert table is not None
        counted = dict(zip(table.columns[1:], table.rows[0][1:], strict=True))
        assert counted["action_timeout"] == ("1" if not flags else "0")
        assert counted["terminated"] == ("0" if not flags else "1")
    assert ended == {
        "action_timeout": "ExecuteSQL ran past its time limit of 1 s and was stopped",
        "terminated": None,
    }
