"""The tool-calling agent: Spider-Agent's actions, loop rules and trajectories, with the actions
offered as native function tools (`agent/tool_calls.py`) instead of the text protocol. Same
options as `spider-agent`; with the labelled `oracle` model, `ToolCallOracle` drives it
(ExecuteSQL with the gold SQL saved as CSV, then Terminate)."""

from __future__ import annotations

from querybench.agent.oracle import ToolCallOracle
from querybench.agent.tool_calls import TOOLS
from querybench.methods.spider_agent import SpiderAgent

METHOD = SpiderAgent("tool-agent", TOOLS, ToolCallOracle)
