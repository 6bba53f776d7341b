"""Four agent tasks at once (`workers=4`): each in its own workspace with its own engine, none
seeing another's files. The model holds every task's first reply until all four are in flight,
so the tasks really overlap; each writes a file of the same name, and each is scored on its own
answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from querybench.agent.protocol import format_action
from querybench.agent.workspace import Workspace
from querybench.models.base import ChatRequest, Completion, Usage
from querybench.models.tools import ToolCall
from querybench.runs.config import Execution, RunConfig, Selection
from querybench.runs.runner import run
from querybench.tasks.model import Task
from tests.methods_fixture import make_data

TASKS = 4


class Overlapping:
    """Per task: CreateFile(answer.sql) once all tasks have started, ExecuteSQL, Terminate."""

    name = "overlapping"

    def __init__(self, tools: bool) -> None:
        self.tools = tools
        self.barrier = asyncio.Barrier(TASKS)

    async def complete(self, request: ChatRequest, task: Task | None = None) -> Completion:
        assert task is not None and task.gold.sql
        done = sum(m.role == "assistant" for m in request.messages)
        if done == 0:
            await asyncio.wait_for(self.barrier.wait(), timeout=10)
        steps: list[tuple[str, dict[str, Any]]] = [
            ("CreateFile", {"filepath": "answer.sql", "code": task.gold.sql}),
            ("ExecuteSQL", {"sql_query": task.gold.sql, "is_save": True, "save_path": "r.csv"}),
            ("Terminate", {"output": "answer.sql"}),
        ]
        name, arguments = steps[done]
        if self.tools:
            call = ToolCall(f"call_{done}", name, json.dumps(arguments), arguments)
            return Completion("", Usage(1, 1), tool_calls=(call,))
        return Completion(f"Thought: step {done}\nAction: {format_action(name, **arguments)}")

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("method", ["spider-agent", "tool-agent"])
def test_four_tasks_at_once_do_not_interfere(
    method: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    data = make_data(tmp_path / "data")
    dev = data / "spider1" / "dev.json"
    entries = json.loads(dev.read_text())
    extra = {"db_id": "shop", "query": "SELECT max(price) FROM items", "question": "Top price?"}
    dev.write_text(json.dumps([*entries, extra]))
    opened: list[tuple[Path, int]] = []
    init = Workspace.__init__

    def recording_init(self: Workspace, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        opened.append((self.path, id(self.engine)))

    monkeypatch.setattr(Workspace, "__init__", recording_init)
    out = tmp_path / "run"
    config = RunConfig(
        "spider1",
        method,
        "overlapping",
        out=out,
        selection=Selection(data_dir=data),
        execution=Execution(workers=TASKS),
    )
    outcome = run(config, model=Overlapping(tools=method == "tool-agent"))
    assert outcome.summary["correct"] == TASKS and outcome.summary["score"] == 1.0
    assert len({path for path, _ in opened}) == TASKS
    assert len({engine for _, engine in opened}) == TASKS
    gold = {t.instance_id: t.gold.sql for t in outcome.tasks}
    for instance_id, sql in gold.items():
        steps = json.loads((out / "trajectories" / f"{instance_id}.json").read_text())["steps"]
        assert steps[0]["observation"] == "File answer.sql created."  # nobody else's file there
        assert outcome.records[instance_id].sql == sql
    assert all(not path.exists() for path, _ in opened)  # each workspace removed at its end
