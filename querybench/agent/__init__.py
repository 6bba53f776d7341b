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

from querybench.agent.loop import AgentConfig, AgentResult, AgentStep, run_agent
from querybench.agent.workspace import Workspace, WorkspaceOptions

__all__ = ["AgentConfig", "AgentResult", "AgentStep", "Workspace", "WorkspaceOptions", "run_agent"]
