"""One task's workspace: a fresh folder with the task README, and the task's database kept open.

Every action runs here. SQL goes through the querybench engine of the task in this process (one
read-only connection for the whole task, kept), never through a new process per call; `Bash`
goes through the sandbox. File paths the agent names are read relative to the workspace (an
absolute `/workspace/...` path means the same file) and may not leave it; every file the host
reads or writes for the agent goes through `files.py` (no link followed, no special file
opened, nothing that can block), and the workspace's size is checked after each write.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from querybench.agent import files
from querybench.agent.actions import (
    Action,
    Bash,
    CreateFile,
    EditFile,
    ExecuteSQL,
    GetTabInfo,
    GetTables,
    SampleRows,
)
from querybench.agent.files import MOUNT_POINT
from querybench.agent.options import AgentOptions
from querybench.agent.sandbox import (
    Limits,
    Toolchain,
    check_usage,
    run_shell,
    sandbox_available,
)
from querybench.benchmarks import Family, family
from querybench.engines.base import Engine, Result
from querybench.errors import QuerybenchError, QueryTimeout, WorkspaceFull
from querybench.tasks.model import Task

NO_SANDBOX = (
    "Bash is not available: no sandbox (bubblewrap 0.8 or later) can be created on this "
    "machine, and running shell commands unsandboxed needs --unsafe-bash. Use the SQL and file "
    "actions."
)


@dataclass(frozen=True)
class WorkspaceOptions:
    action_timeout: float = AgentOptions.action_timeout
    unsafe_bash: bool = AgentOptions.unsafe_bash
    limits: Limits = field(default_factory=Limits)
    max_rows: int = 100_000  # rows an ExecuteSQL may return
    print_rows: int = 50  # rows printed when the result is not saved
    max_answer_bytes: int = 1024**2  # an answer file Terminate names (.sql) that is read


@dataclass(frozen=True)
class Observation:
    """What one action returned to the model; `timed_out` when the action ran past its time
    limit and was stopped, which ends the episode under the paper's rule (`loop.py`)."""

    text: str
    timed_out: bool = False


def readme(task: Task) -> str:
    parts = [f"# Task {task.instance_id}", "", "## Question", "", task.question.strip()]
    if task.external_knowledge and family(task.benchmark) is Family.SPIDER2:
        parts += ["", "## External knowledge", "", f"The document {task.external_knowledge}."]
    elif task.external_knowledge:
        parts += ["", "## External knowledge", "", task.external_knowledge.strip()]
    if "project_dir" in task.extra:
        parts += [
            "",
            f"The DBT project is in {MOUNT_POINT}; its database is {task.db}.duckdb there. "
            "Complete the project and build it with `dbt run` (Bash); the database it leaves "
            "is the answer. The SQL actions read that database.",
        ]
    else:
        parts += ["", f"The database ({task.engine}) is reachable through the SQL actions only."]
    return "\n".join(parts) + "\n"


def new_folder(task: Task) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"qb-agent-{_safe(task.instance_id)}-"))


def make_writable(folder: Path) -> None:
    """Copies of the (read-only) data folder become the agent's to change."""
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)


class Workspace:
    """`reconnect` (DBT tasks): the database is a private file that shell commands may write,
    so the connection is let go before each `Bash` and opened again by the next SQL action.
    `toolchain`: programs the sandbox offers besides the system's (dbt)."""

    def __init__(
        self,
        task: Task,
        engine: Engine,
        options: WorkspaceOptions,
        *,
        path: Path | None = None,
        toolchain: Toolchain | None = None,
        reconnect: Callable[[], Engine] | None = None,
    ) -> None:
        self.task = task
        self._engine: Engine | None = engine
        self.options = options
        self.toolchain = toolchain
        self._reconnect = reconnect
        self.path = path or new_folder(task)
        if files.status(self.path, "README.md") is None:
            files.write_bytes(self.path, "README.md", readme(task).encode(), new=True)
        # (sql, parts of the file it was saved to, or ()) of each ExecuteSQL that ran
        self.sql_log: list[tuple[str, tuple[str, ...]]] = []

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            if self._reconnect is None:
                raise QuerybenchError("the workspace is closed")
            self._engine = self._reconnect()
        return self._engine

    def release_engine(self) -> None:
        """Close the connection (it is opened again when needed, if the workspace can)."""
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def close(self) -> None:
        self.release_engine()
        self._reconnect = None
        shutil.rmtree(self.path, ignore_errors=True)

    def resolve(self, name: str) -> Path:
        """The host path of the workspace file `name` (not opened: see `files`);
        `UnsafePath` when the name points outside."""
        return self.path.joinpath(*files.parts(name))

    def execute(self, action: Action) -> str:
        """The observation's text of one action (see `act`)."""
        return self.act(action).text

    def act(self, action: Action) -> Observation:
        """The observation of one action (an error message when it fails, never an exception,
        except `WorkspaceFull`, which ends the task); a query or command stopped at the time
        limit says so in `timed_out`."""
        try:
            done = self._execute(action)
        except WorkspaceFull:
            raise
        except QueryTimeout as exc:
            return Observation(f"ERROR: {exc}", timed_out=True)
        except QuerybenchError as exc:
            return Observation(f"ERROR: {exc}")
        except OSError as exc:
            return Observation(f"ERROR: {exc.strerror or exc}")
        saved = isinstance(action, (ExecuteSQL, SampleRows)) and bool(action.save_path)
        if saved or isinstance(action, (CreateFile, EditFile)):
            check_usage(self.path, self.options.limits)  # a host-side write: still in bounds?
        return done if isinstance(done, Observation) else Observation(done)

    def read_answer(self, name: str) -> str:
        """The text of the answer file `name` (bounded, never followed)."""
        data = files.read_bytes(self.path, name, self.options.max_answer_bytes)
        return data.decode("utf-8", "replace")

    def _execute(self, action: Action) -> str | Observation:
        if isinstance(action, Bash):
            return self._bash(action.code)
        if isinstance(action, CreateFile):
            files.write_bytes(self.path, action.filepath, action.code.encode(), new=True)
            return f"File {action.filepath} created."
        if isinstance(action, EditFile):
            files.write_bytes(self.path, action.filepath, action.code.encode(), new=False)
            return f"File {action.filepath} edited."
        if isinstance(action, ExecuteSQL):
            return self._sql(action)
        if isinstance(action, GetTables):
            return self._tables(action.schema_name)
        if isinstance(action, GetTabInfo):
            return self._table_info(action.table, action.schema_name)
        if isinstance(action, SampleRows):
            return self._sample(action)
        raise QuerybenchError(f"{type(action).__name__} is not executed by the workspace")

    def _bash(self, code: str) -> str | Observation:
        sandboxed = sandbox_available()
        if not sandboxed and not self.options.unsafe_bash:
            return NO_SANDBOX
        if self._reconnect is not None:
            self.release_engine()
        result = run_shell(
            self.path,
            code,
            timeout=self.options.action_timeout,
            limits=self.options.limits,
            sandboxed=sandboxed,
            toolchain=self.toolchain,
        )
        out = result.output or "(no output)"
        note = f"\n{result.note}" if result.note else ""
        out = out.removesuffix("\n") if note else out
        if result.timed_out:
            limit = f"ERROR: stopped after {self.options.action_timeout:g} s (time limit)"
            return Observation(f"{out}\n{limit}{'; ' + result.note if result.note else ''}", True)
        if result.returncode not in (0, None):
            return f"{out}\n(exit code {result.returncode}){note}"
        return f"{out}{note}"

    def _sql(self, action: ExecuteSQL) -> str:
        save_path = action.save_path if action.is_save or action.save_path else ""
        saved = files.parts(save_path) if save_path else ()  # a bad path: refused before running
        result = self.engine.execute(
            action.sql_query, timeout=self.options.action_timeout, max_rows=self.options.max_rows
        )
        if not save_path:
            self.sql_log.append((action.sql_query, ()))
            return _table_text(result, self.options.print_rows)
        text = io.StringIO(newline="")
        writer = csv.writer(text)
        writer.writerow(result.columns)
        writer.writerows(result.rows)
        files.write_bytes(self.path, save_path, text.getvalue().encode())
        self.sql_log.append((action.sql_query, saved))
        return f"Saved {len(result.rows)} rows to {save_path}."

    def _qualified(self, table: str, schema: str) -> str:
        return f"{schema}.{table}" if schema and "." not in table else table

    def _tables(self, schema: str) -> str:
        tables = [t for t in self.engine.tables() if not schema or t.schema == schema]
        lines = [
            f"{self._qualified(t.name, t.schema or '')} ({len(t.columns)} columns)" for t in tables
        ]
        return "\n".join(lines) or "(no tables)"

    def _table_info(self, table: str, schema: str) -> str:
        name = self._qualified(table, schema)
        for t in self.engine.tables():
            if name.lower() in {t.name.lower(), f"{t.schema}.{t.name}".lower()}:
                cols = "\n".join(f"{c.name}\t{c.type}" for c in t.columns)
                return f"Table {name}\ncolumn\ttype\n{cols}"
        return f"ERROR: no table {name}; GetTables lists them"

    def _sample(self, action: SampleRows) -> str:
        result = self.engine.sample_rows(
            self._qualified(action.table, action.schema_name), n=max(action.row_number, 1)
        )
        rows = [dict(zip(result.columns, map(_jsonable, row), strict=False)) for row in result.rows]
        text = json.dumps(rows, ensure_ascii=False, indent=1)
        if action.save_path:
            files.write_bytes(self.path, action.save_path, text.encode())
            return f"Saved {len(rows)} rows of {action.table} to {action.save_path}."
        return text


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _table_text(result: Result, print_rows: int) -> str:
    lines = [",".join(result.columns)]
    lines += [
        ",".join("" if v is None else str(v) for v in row) for row in result.rows[:print_rows]
    ]
    if len(result.rows) > print_rows:
        lines.append(f"... ({len(result.rows)} rows; save the result to see them all)")
    return "\n".join(lines)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:40]
