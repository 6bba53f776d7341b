"""The agent on Spider 2.0-lite/snow: the workspace holds the task's schema folder and document
as the official agents lay them out, the oracle drives the text protocol to the gold result on
the rebuilt local databases, and a task without a database here is recorded, not dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from querybench.agent.workspace import WorkspaceOptions
from querybench.methods import MethodSettings
from querybench.methods.spider_agent import open_workspace
from querybench.models import Sampling
from querybench.runs.config import RunConfig, Selection
from querybench.runs.runner import run
from querybench.tasks import load_tasks
from tests.conftest import require_data


def test_workspace_holds_the_schema_folder_and_the_document() -> None:
    require_data("spider2-lite-local", "music.sqlite")
    root = require_data("spider2").parent
    task = next(t for t in load_tasks("spider2-lite", data_dir=root) if t.instance_id == "local244")
    assert task.external_knowledge == "music_length_type.md"
    workspace = open_workspace(task, MethodSettings(Sampling(), data_dir=root), WorkspaceOptions())
    try:
        names = {p.name for p in workspace.path.iterdir()}
        assert {"README.md", "music", "music_length_type.md"} <= names
        assert (workspace.path / "music" / "DDL.csv").is_file()
        readme = (workspace.path / "README.md").read_text()
        assert task.question.strip() in readme and "music_length_type.md" in readme
        document = workspace.path / "music_length_type.md"
        source = root / "spider2" / "spider2-lite" / "resource" / "documents" / document.name
        assert document.read_text() == source.read_text()
        document.write_text("notes")  # the agent's copy is its own
        assert source.read_text() != "notes"
        assert workspace.engine.tables()  # the rebuilt SQLite database is open
    finally:
        workspace.close()
    assert not workspace.path.exists()


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spider-agent", "tool-agent"])
def test_oracle_agent_reproduces_local_gold(method: str, tmp_path: Path) -> None:
    require_data("spider2-lite-local", "MANIFEST.json")
    root = require_data("spider2").parent
    ids = ("local022", "local038", "local039", "bq011")
    out = tmp_path / "run"
    config = RunConfig(
        "spider2-lite", method, "oracle", out=out, selection=Selection(data_dir=root, ids=ids)
    )
    outcome = run(config)
    scores = {r.instance_id: (r.score, r.error) for r in outcome.results}
    assert scores["local022"] == scores["local038"] == scores["local039"] == (1.0, None)
    # a BigQuery task with no emulation built here: never sent to the agent, scored 0 with
    # its reason (the rule `data status` applies)
    assert scores["bq011"] == (0.0, "engine_unavailable")
    assert "no emulation of ga4 built" in outcome.unavailable["bq011"]
    assert "bq011" not in outcome.records
    trajectory = json.loads((out / "trajectories" / "local022.json").read_text())
    assert [s["action"]["name"] for s in trajectory["steps"]] == ["ExecuteSQL", "Terminate"]
    assert outcome.summary["n"] == 4 and outcome.summary["correct"] == 3
