"""The agent on the agentic Spider 2.0 setting (`run spider2`): the answer of each run recorded in
the official submission layout, and the oracle's actions, served by the loopback OpenAI server,
reproducing the gold of every local task whose database is here."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from querybench.agent.oracle import oracle_plan
from querybench.agent.protocol import format_action
from querybench.agent.submission import save_submission, submission_line
from querybench.agent.workspace import Workspace, WorkspaceOptions
from querybench.engines import connect
from querybench.models.labelled import OracleModel
from querybench.report import paper_tables
from querybench.report.runs import load_run
from querybench.runs.config import RunConfig, Selection
from querybench.runs.runner import run
from querybench.tasks import load_tasks
from querybench.tasks.databases import task_target
from querybench.tasks.model import Task
from tests.conftest import require_data
from tests.methods_fixture import model
from tests.openai_server import Reply, ScriptedServer


@pytest.fixture()
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    database = tmp_path / "db.sqlite"
    with sqlite3.connect(database) as con:
        con.execute("CREATE TABLE t (x INT)")
    task = Task("local1", "spider2", "q", "db", "sqlite")
    (tmp_path / "ws").mkdir()
    space = Workspace(task, connect(database), WorkspaceOptions(), path=tmp_path / "ws")
    (space.path / "result.csv").write_text("x\n1\n")
    yield space
    space.close()


@pytest.mark.parametrize(
    ("engine", "output", "kind", "answer"),
    [
        ("sqlite", "result.csv", "file", "result.csv"),
        ("sqlite", "/workspace/result.csv", "file", "result.csv"),
        ("sqlite", "", "answer", ""),
        ("sqlite", "42", "answer", "42"),
        ("sqlite", "saved to 'out.csv' as asked", "file", "out.csv"),
        ("postgres", "a.csv, b.csv", "files", ["a.csv", "b.csv"]),
    ],
)
def test_submission_line(
    workspace: Workspace, engine: str, output: str, kind: str, answer: Any
) -> None:
    task = Task("x1", "spider2", "q", "db", engine)  # type: ignore[arg-type]
    line = submission_line(task, output, workspace)
    assert line == {"instance_id": "x1", "answer_type": kind, "answer_or_path": answer}


def test_submission_never_copies_through_a_link(workspace: Workspace, tmp_path: Path) -> None:
    """An answer file the agent linked to a host file (possible with --unsafe-bash) is not
    read: the host file's content never reaches the submission folder."""
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret\n")
    (workspace.path / "leak.csv").symlink_to(secret)
    task = Task("x1", "spider2", "q", "db", "sqlite")
    line = save_submission(task, "leak.csv", workspace, tmp_path / "submission")
    assert line["answer_type"] == "file" and line["answer_or_path"] == "leak.csv"
    copied = [p for p in (tmp_path / "submission").rglob("*") if p.is_file()]
    assert copied == []
    save_submission(task, "result.csv", workspace, tmp_path / "submission")
    assert (tmp_path / "submission" / "x1" / "result.csv").read_text() == "x\n1\n"


def oracle_replies(tasks: dict[str, Task]) -> Any:
    """A responder playing the oracle's plan for the task named in the system prompt."""

    def respond(body: dict[str, Any]) -> Reply:
        system = body["messages"][0]["content"]
        match = re.search(r"# Task (\S+)", system)
        assert match, "the system prompt names its task"
        plan = oracle_plan(tasks[match[1]], OracleModel())
        done = sum(m["role"] == "assistant" for m in body["messages"])
        name, arguments = plan[min(done, len(plan) - 1)]
        return Reply(f"Thought: next.\nAction: {format_action(name, **arguments)}")

    return respond


@pytest.mark.slow
def test_oracle_actions_reproduce_every_local_task_with_a_database(tmp_path: Path) -> None:
    require_data("spider2-lite-local", "MANIFEST.json")
    root = require_data("spider2", "spider2", "examples", "spider2.jsonl").parents[3]
    tasks = {t.instance_id: t for t in load_tasks("spider2", data_dir=root)}
    local = [t for t in tasks.values() if t.engine == "sqlite" and task_target(t, root)]
    assert len(local) == 29  # the eight rebuilt databases serve 29 of the 135 local tasks
    ids = (*[t.instance_id for t in local], "postgres_chinook001")
    out = tmp_path / "run"
    with ScriptedServer(default=oracle_replies(tasks)) as server:
        config = RunConfig(
            "spider2",
            "spider-agent",
            "scripted",
            out=out,
            selection=Selection(data_dir=root, ids=ids),
        )
        outcome = run(config, model=model(server))
    scores = {r.instance_id: (r.official_score, r.strict_score, r.error) for r in outcome.results}
    assert all(scores[t.instance_id] == (1.0, 1.0, None) for t in local), scores
    # No Postgres server holds this task's data: recorded with its reason, counted, scored 0.
    assert scores["postgres_chinook001"][2] == "engine_unavailable"
    lines = [
        json.loads(x)
        for x in (out / "submission" / "results_metadata.jsonl").read_text().splitlines()
    ]
    assert len(lines) == 29 and all(x["answer_type"] == "file" for x in lines)
    assert all((out / "submission" / x["instance_id"] / "result.csv").is_file() for x in lines)
    trajectory = json.loads((out / "trajectories" / "local229.json").read_text())
    # local229's folder holds a result.csv template: the oracle edits it, as a model must.
    assert [s["action"]["name"] for s in trajectory["steps"]] == ["EditFile", "Terminate"]
    assert outcome.summary["n"] == 30 and outcome.summary["correct"] == 29
    table3 = paper_tables.table3([load_run(out)])
    assert table3.rows[0][-1] == "96.67 (n=30)"  # 29 of the 30 tasks, the Postgres one 0


def test_same_action_three_times_stops_whatever_the_thoughts(workspace: Workspace) -> None:
    import asyncio

    from querybench.agent.loop import AgentConfig, run_agent
    from querybench.models import Sampling

    with ScriptedServer() as server:
        server.script(
            [Reply(f"Thought: attempt {i}.\nAction: GetTables()") for i in range(5)]
            + [Reply('Thought: done.\nAction: Terminate(output="42")')]
        )
        result = asyncio.run(run_agent(workspace, model(server), AgentConfig(), Sampling()))
    assert result.status == "repeated"
    assert len(result.steps) == 3
