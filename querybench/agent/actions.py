"""The agent's action space: one frozen dataclass per action, with the parameters it takes.

The names and parameters follow the Spider-Agent paper's action space; every driver (the text
protocol today) produces these values and the workspace executes them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Bash:
    """Run a shell command in the sandboxed workspace."""

    code: str


@dataclass(frozen=True)
class CreateFile:
    """Write a new file (relative to the workspace)."""

    filepath: str
    code: str


@dataclass(frozen=True)
class EditFile:
    """Replace the whole content of an existing workspace file."""

    filepath: str
    code: str


@dataclass(frozen=True)
class ExecuteSQL:
    """Run one SQL statement; print the result, or save it as CSV at `save_path`."""

    sql_query: str
    is_save: bool = False
    save_path: str = ""


@dataclass(frozen=True)
class GetTables:
    """List the database's tables (and their columns' count)."""

    schema_name: str = ""


@dataclass(frozen=True)
class GetTabInfo:
    """Columns and types of one table."""

    table: str
    schema_name: str = ""


@dataclass(frozen=True)
class SampleRows:
    """A few rows of one table, saved as JSON at `save_path`."""

    table: str
    row_number: int = 3
    save_path: str = ""
    schema_name: str = ""


@dataclass(frozen=True)
class Fail:
    """The agent gives up."""

    reason: str = ""


@dataclass(frozen=True)
class Terminate:
    """The answer: text, or the path of an output file (CSV, SQL) in the workspace."""

    output: str


Action = (
    Bash
    | CreateFile
    | EditFile
    | ExecuteSQL
    | GetTables
    | GetTabInfo
    | SampleRows
    | Fail
    | Terminate
)

# Protocol name -> action class; `FAIL` is the paper's spelling, `Fail` also accepted.
ACTIONS: dict[str, type[Any]] = {
    "Bash": Bash,
    "CreateFile": CreateFile,
    "EditFile": EditFile,
    "ExecuteSQL": ExecuteSQL,
    "GetTables": GetTables,
    "GetTabInfo": GetTabInfo,
    "SampleRows": SampleRows,
    "FAIL": Fail,
    "Fail": Fail,
    "Terminate": Terminate,
}

# Parameter names other agents use for the same thing, read as ours.
ALIASES = {
    "database_name": None,
    "file_path": "filepath",
    "sql": "sql_query",
    "table_name": "table",
}


def parameters(cls: type[Any]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def action_name(action: Action) -> str:
    return "FAIL" if isinstance(action, Fail) else type(action).__name__


def to_json(action: Action) -> dict[str, Any]:
    return {
        "name": action_name(action),
        **{f.name: getattr(action, f.name) for f in fields(action)},
    }
