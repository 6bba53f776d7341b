"""Spider-Agent: the paper's ReAct agent over a sandboxed per-task workspace.

    workspace = Workspace(task, connect(database), WorkspaceOptions())
    result = await run_agent(workspace, model, AgentConfig(), Sampling())
    result.final_sql, result.steps

`querybench run <benchmark> --method spider-agent` runs it (`methods/spider_agent.py`);
`--method tool-agent` runs the same loop with the actions as native tools (`run_agent(...,
TOOLS)`, `methods/tool_agent.py`).

`actions` the action space, `protocol` the text protocol (Thought/Action), `tool_calls` the
native tool-calling driver, `prompts` the prompts, `workspace` one task's folder and database
connection, `sandbox` the bubblewrap jail for `Bash`, `files` the host-side file operations
on the workspace (never following what the agent planted), `loop` the loop rules over either
driver, `oracle` the gold-driven models for pipeline checks.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from querybench.agent.loop import AgentConfig, AgentResult, AgentStep, run_agent
    from querybench.agent.workspace import Workspace, WorkspaceOptions

__all__ = ["AgentConfig", "AgentResult", "AgentStep", "Workspace", "WorkspaceOptions", "run_agent"]

# Imported on first use: `agent.options` (read by the `run` command's flags) stays light.
_LAZY = {
    "AgentConfig": "querybench.agent.loop",
    "AgentResult": "querybench.agent.loop",
    "AgentStep": "querybench.agent.loop",
    "run_agent": "querybench.agent.loop",
    "Workspace": "querybench.agent.workspace",
    "WorkspaceOptions": "querybench.agent.workspace",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'querybench.agent' has no attribute {name!r}")
