"""Host-side file operations on the agent's workspace against what a hostile agent plants there
(links to host files and folders, FIFOs, hard links, odd names): each is refused with the
reason, the host's files keep their bytes and mtime, nothing blocks, and the run goes on."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from querybench.agent import AgentConfig, Workspace, WorkspaceOptions, files, run_agent
from querybench.agent.actions import CreateFile, EditFile, ExecuteSQL, SampleRows
from querybench.agent.options import AgentOptions
from querybench.agent.protocol import format_action
from querybench.engines import connect
from querybench.errors import UnsafePath
from querybench.models import Sampling
from querybench.runs.config import RunConfig, Selection
from querybench.runs.runner import run
from tests.conftest import require_sandbox
from tests.methods_fixture import model, task
from tests.openai_server import Reply, ScriptedServer


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(default=act('Terminate(output="stuck")')) as s:
        yield s


@pytest.fixture()
def workspace(data: Path) -> Iterator[Workspace]:
    engine = connect(data / "spider1" / "shop" / "shop.sqlite")
    ws = Workspace(task(data, 0), engine, WorkspaceOptions())
    yield ws
    ws.close()


@pytest.fixture()
def host(tmp_path: Path) -> Path:
    """A host folder with a secret file the agent must never read or change."""
    folder = tmp_path / "host"
    folder.mkdir()
    secret = folder / "secret.txt"
    secret.write_text("TOP-SECRET\n")
    secret.chmod(0o600)
    return folder


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.rglob("*")}


def act(action: str) -> Reply:
    return Reply(f"Thought: next\nAction: {action}")


def test_actions_through_planted_links_are_refused(workspace: Workspace, host: Path) -> None:
    before = snapshot(host)
    (workspace.path / "vd").symlink_to(host)
    (workspace.path / "t.txt").symlink_to(host / "secret.txt")
    (workspace.path / "proc").symlink_to("/proc/self/root")
    cases = [
        (CreateFile("vd/x", "planted"), "ERROR: vd/x: vd is a symbolic link, not a folder"),
        (EditFile("t.txt", "overwritten"), "ERROR: t.txt is a symbolic link, not a regular file"),
        (CreateFile("t.txt", "x"), "ERROR: t.txt exists; use EditFile to change it"),
        (ExecuteSQL("SELECT 1", True, "vd/x.csv"), "ERROR: vd/x.csv: vd is a symbolic link"),
        (ExecuteSQL("SELECT 1", True, "t.txt"), "ERROR: t.txt is a symbolic link"),
        (SampleRows("items", 2, "vd/s.json"), "ERROR: vd/s.json: vd is a symbolic link"),
        (CreateFile("proc/tmp/x", "x"), "ERROR: proc/tmp/x: proc is a symbolic link"),
    ]
    for action, reason in cases:
        assert workspace.execute(action).startswith(reason), action
    assert snapshot(host) == before and sorted(p.name for p in host.iterdir()) == ["secret.txt"]


def test_a_fifo_or_a_hard_link_is_refused_without_blocking(
    workspace: Workspace, host: Path
) -> None:
    os.mkfifo(workspace.path / "out.csv")
    os.link(host / "secret.txt", workspace.path / "linked.txt")
    before = snapshot(host)
    actions = [
        ExecuteSQL("SELECT 1", True, "out.csv"),
        EditFile("out.csv", "x"),
        EditFile("linked.txt", "x"),
        SampleRows("items", 1, "linked.txt"),
    ]
    observations: list[str] = []
    worker = threading.Thread(
        target=lambda: observations.extend(workspace.execute(a) for a in actions), daemon=True
    )
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "a host thread blocked on the FIFO"
    assert observations == [
        "ERROR: out.csv is a FIFO, not a regular file (refused)",
        "ERROR: out.csv is a FIFO, not a regular file (refused)",
        "ERROR: linked.txt has 2 hard links (refused)",
        "ERROR: linked.txt has 2 hard links (refused)",
    ]
    assert snapshot(host) == before
    with pytest.raises(UnsafePath, match="a FIFO"):
        files.read_bytes(workspace.path, "out.csv", 100)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("../x.csv", "not a path inside the workspace"),
        ("a/../../x.csv", "not a path inside the workspace"),
        ("/workspace/../etc/x", "not a path inside the workspace"),
        ("/etc/passwd", "only files under /workspace can be used"),
        ("/proc/self/root/etc/x", "only files under /workspace can be used"),
        ("a\nb.csv", "may not hold control characters"),
        ("a\x00b.csv", "may not hold control characters"),
        ("x" * 300, "a name longer than 255 bytes"),
        ("a/" * 2100 + "x", "longer than 4096 bytes"),
    ],
)
def test_names_that_leave_the_workspace_are_refused(
    workspace: Workspace, name: str, reason: str
) -> None:
    observation = workspace.execute(ExecuteSQL("SELECT 1", True, name))
    assert observation.startswith("ERROR: ") and reason in observation
    assert workspace.sql_log == []  # refused before the query ran: nothing logged
    assert workspace.execute(CreateFile(name, "x")) == observation


def test_absolute_workspace_paths_name_the_same_file(workspace: Workspace) -> None:
    assert workspace.execute(CreateFile("/workspace/d/q.sql", "SELECT 1")) == (
        "File /workspace/d/q.sql created."
    )
    assert (workspace.path / "d" / "q.sql").read_text() == "SELECT 1"
    assert workspace.execute(EditFile("d/q.sql", "SELECT 2")) == "File d/q.sql edited."
    assert files.read_bytes(workspace.path, "/workspace/d/q.sql", 100) == b"SELECT 2"


def run_scripted(
    data: Path, server: ScriptedServer, out: Path, actions: list[str], **extra: object
) -> tuple[object, dict[str, object]]:
    server.script([act(a) for a in actions])
    config = RunConfig(
        "spider1",
        "spider-agent",
        "scripted",
        out=out,
        selection=Selection(data_dir=data, limit=1),
        options=AgentOptions.from_values(extra),
    )
    outcome = run(config, model=model(server))
    trajectory = json.loads((out / "trajectories" / "0.json").read_text())
    return outcome, trajectory


def unsandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bash on the host folder (`--unsafe-bash` where no sandbox can be made): what it plants
    reaches the host-side actions as it is."""
    monkeypatch.setattr("querybench.agent.workspace.sandbox_available", lambda: False)


def test_answer_file_linked_to_a_host_secret_fails_the_task_with_the_reason(
    data: Path, server: ScriptedServer, tmp_path: Path, host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Terminate("answer.sql")` with answer.sql -> a 0600 host file (planted by an unsafe
    Bash, where links do reach the host folder): refused, the instance fails saying why, its
    trajectory is written, and the secret appears in no file of the run."""
    unsandboxed(monkeypatch)
    out = tmp_path / "run"
    outcome, trajectory = run_scripted(
        data,
        server,
        out,
        [
            format_action("Bash", code=f"ln -s {host / 'secret.txt'} answer.sql"),
            'Terminate(output="answer.sql")',
        ],
        unsafe_bash=True,
    )
    record = outcome.records["0"]  # type: ignore[attr-defined]
    assert record.error == "context_error"
    assert record.message == (
        "Terminate: answer.sql is a symbolic link, not a regular file (refused)"
    )
    assert trajectory["status"] == "error" and "symbolic link" in trajectory["error"]
    assert [s["action"]["name"] for s in trajectory["steps"]] == ["Bash", "Terminate"]
    for path in out.rglob("*"):
        if path.is_file():
            assert b"TOP-SECRET" not in path.read_bytes(), path


def test_answer_linked_to_the_gold_scores_nothing(
    data: Path, server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's 5/5 exploit: answer.sql -> the gold under the data folder. With the
    sandbox, no link leaves it (the answer file is absent); unsafe, the host refuses it."""
    require_sandbox()
    gold = tmp_path / "gold.sql"  # a gold SQL file the host can read, the sandbox cannot
    gold.write_text(task(data, 0).gold.sql or "")
    actions = [format_action("Bash", code=f"ln -s {gold} answer.sql"), 'Terminate("answer.sql")']
    safe, _ = run_scripted(data, server, tmp_path / "safe", actions)
    record = safe.records["0"]  # type: ignore[attr-defined]
    assert safe.summary["score"] == 0.0 and record.sql is None  # type: ignore[attr-defined]
    unsandboxed(monkeypatch)
    unsafe, _ = run_scripted(data, server, tmp_path / "unsafe", actions, unsafe_bash=True)
    record = unsafe.records["0"]  # type: ignore[attr-defined]
    assert unsafe.summary["score"] == 0.0 and record.error == "context_error"  # type: ignore[attr-defined]
    assert record.sql is None and "symbolic link" in record.message


def test_terminate_after_an_invalid_save_path_keeps_the_answer(
    data: Path, server: ScriptedServer, tmp_path: Path
) -> None:
    """Section 7: a refused save path was logged before it was checked, and the answer's
    lookup then raised on it, losing a finished answer (context_error, no trajectory)."""
    sql = 'SELECT count(*) FROM \\"items\\"'
    out = tmp_path / "run"
    outcome, trajectory = run_scripted(
        data,
        server,
        out,
        [
            f'ExecuteSQL(sql_query="{sql}", is_save=True, save_path="result.csv")',
            'ExecuteSQL(sql_query="SELECT 0", is_save=True, save_path="../escape.csv")',
            'Terminate(output="result.csv")',
        ],
    )
    assert outcome.summary["score"] == 1.0  # type: ignore[attr-defined]
    assert trajectory["status"] == "terminated"
    assert trajectory["steps"][1]["observation"].startswith("ERROR: ../escape.csv: not a path")
    assert not (tmp_path / "escape.csv").exists()


def test_a_trajectory_is_written_whatever_ends_the_task(
    data: Path, server: ScriptedServer, tmp_path: Path
) -> None:
    """The model failing mid-task (a 401 is not retried) still leaves the steps taken."""
    from tests.openai_server import Fault

    server.script([act("GetTables()"), Fault(status=401)])
    out = tmp_path / "run"
    config = RunConfig(
        "spider1", "spider-agent", "scripted", out=out, selection=Selection(data_dir=data, limit=1)
    )
    outcome = run(config, model=model(server))
    assert outcome.records["0"].status == "error"
    trajectory = json.loads((out / "trajectories" / "0.json").read_text())
    assert trajectory["status"] == "error" and "401" in trajectory["error"]
    assert [s["action"]["name"] for s in trajectory["steps"]] == ["GetTables"]


def test_answer_file_bounds(workspace: Workspace) -> None:
    from querybench.agent.loop import final_sql

    (workspace.path / "big.sql").write_text("x" * (2 * 1024**2))
    os.mkfifo(workspace.path / "pipe.sql")
    (workspace.path / "ok.sql").write_text("SELECT 1\n")
    assert final_sql(workspace, "ok.sql") == "SELECT 1"
    assert final_sql(workspace, "the answer is 3") is None  # a text answer, kept
    assert final_sql(workspace, "/etc/passwd") is None  # not a workspace path: text
    with pytest.raises(UnsafePath, match="larger than 1048576 bytes"):
        final_sql(workspace, "big.sql")
    with pytest.raises(UnsafePath, match=r"pipe\.sql is a FIFO"):
        final_sql(workspace, "pipe.sql")


def test_run_agent_fills_the_given_result(workspace: Workspace, server: ScriptedServer) -> None:
    from querybench.agent.loop import AgentResult

    server.script([act("GetTables()"), act('Terminate(output="done")')])
    result = AgentResult(status="error")
    returned = asyncio.run(
        run_agent(workspace, model(server), AgentConfig(), Sampling(), result=result)
    )
    assert returned is result and result.status == "terminated" and len(result.steps) == 2


def test_dbt_copy_out_and_reconnect_refuse_a_linked_database(
    workspace: Workspace, host: Path, tmp_path: Path
) -> None:
    """The DBT database the agent leaves is copied to predictions/ and reopened by the SQL
    actions: a link there (to a host file) is refused, not copied or opened."""
    from querybench.agent.dbt import save_database

    name = f"{workspace.task.db}.duckdb"
    (workspace.path / name).symlink_to(host / "secret.txt")
    with pytest.raises(UnsafePath, match="is a symbolic link"):
        save_database(workspace, tmp_path / "predictions")
    with pytest.raises(UnsafePath, match="is a symbolic link"):
        files.regular_file(workspace.path, name)
    copied = [p for p in (tmp_path / "predictions").rglob("*") if p.is_file()]
    assert copied == []


def test_an_agent_that_never_answered_is_recorded_with_what_ended_it(
    data: Path, server: ScriptedServer, tmp_path: Path
) -> None:
    # the same action three times in a row ends the episode (repeated) before any Terminate:
    # it was recorded `ok` and scored "no prediction line: the prediction file ends before..."
    out = tmp_path / "run"
    outcome, trajectory = run_scripted(data, server, out, ['Bash(command="ls")'] * 3)
    assert trajectory["status"] == "repeated"
    record = outcome.records["0"]  # type: ignore[attr-defined]
    assert (record.status, record.error) == ("error", "missing_prediction")
    assert record.message == "the agent gave no answer (repeated)"
    assert record.extra["agent_status"] == "repeated"
    [result] = [r for r in outcome.results if r.instance_id == "0"]  # type: ignore[attr-defined]
    assert (result.error, result.message) == ("missing_prediction", record.message)
