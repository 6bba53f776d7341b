"""The multi-turn SQL tools as a verifiers (v1) tool server: `SQLToolbox` behind MCP.

verifiers launches the toolset of each rollout as `python -m querybench.envs.sql_toolset`
and syncs `SQLToolsState` between it and the rollout: the task writes the database into the
state before the first turn, every tool reads it from there (one `SQLToolbox` per database,
opened on first use and kept for the server's life), and `submit` writes the SQL back for the
task's reward and stop.
"""

from __future__ import annotations

import asyncio
import json

import verifiers.v1 as vf

from querybench.envs.multi_turn import SQLToolbox
from querybench.models import ToolCall


class SQLToolsState(vf.State):  # type: ignore[misc]
    """What one rollout's tools and task share."""

    database: str = ""
    """The SQLite file of the rollout's question (set by the task's `setup`)."""
    submitted: str | None = None
    """The SQL given to `submit`, None until then."""


class SQLToolset(vf.Toolset[vf.ToolsetConfig, SQLToolsState]):  # type: ignore[misc]
    """`execute_sql`, `list_tables`, `describe_table`, `sample_rows` and `submit`."""

    TOOL_PREFIX = None  # the tools keep the names the prompt and `TOOLS` use

    def __init__(self, config: vf.ToolsetConfig) -> None:
        super().__init__(config)
        self._boxes: dict[str, SQLToolbox] = {}

    @vf.tool  # type: ignore[untyped-decorator]
    async def execute_sql(self, sql: str) -> str:
        """Run one read-only SQLite query; returns the first rows."""
        return await self._call("execute_sql", sql=sql)

    @vf.tool  # type: ignore[untyped-decorator]
    async def list_tables(self) -> str:
        """The database's tables."""
        return await self._call("list_tables")

    @vf.tool  # type: ignore[untyped-decorator]
    async def describe_table(self, table: str) -> str:
        """A table's columns and types (a table name from list_tables)."""
        return await self._call("describe_table", table=table)

    @vf.tool  # type: ignore[untyped-decorator]
    async def sample_rows(self, table: str) -> str:
        """A few rows of a table (a table name from list_tables)."""
        return await self._call("sample_rows", table=table)

    @vf.tool  # type: ignore[untyped-decorator]
    async def submit(self, sql: str) -> str:
        """Submit the final SQL answer (one read-only SQLite query); ends the episode."""
        self.state.submitted = sql
        return "submitted"

    def toolbox(self) -> SQLToolbox:
        """The toolbox of the calling rollout's database."""
        database = self.state.database
        if not database:
            raise RuntimeError("the rollout state names no database (the task sets it)")
        box = self._boxes.get(database)
        if box is None:
            box = self._boxes[database] = SQLToolbox(database)
        return box

    def close(self) -> None:
        boxes, self._boxes = self._boxes, {}
        for box in boxes.values():
            box.close()

    async def setup(self) -> None:
        self._exit_stack.callback(self.close)

    async def _call(self, name: str, **arguments: str) -> str:
        # Through `SQLToolbox.call`, the one place tool errors become observations.
        call = ToolCall.parse(name, name, json.dumps(arguments))
        return await asyncio.to_thread(self.toolbox().call, call)


if __name__ == "__main__":
    SQLToolset.run()
