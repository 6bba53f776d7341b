"""The agentic Spider 2.0 (`spider2`) answer of one agent run, in the official submission layout.

The official Spider-Agent turns each run's final output into one `results_metadata.jsonl` line
(its `get_spider2_submission_data.py`), and so does `submission_line` here:

* a leading `/workspace/` is dropped; an empty output is an empty text `answer`;
* an output naming a file of the workspace is a `file`, copied to `<submission>/<instance_id>/`;
* otherwise an output mentioning `.csv` is a `file` named by its first `*.csv` token, or, for
  Postgres and ClickHouse tasks, `files`: the comma-separated names;
* anything else is the text `answer` (`Terminate(output="42")`).

A DBT task's answer is the database the project built (`<db>.duckdb`, a `file`).
"""

from __future__ import annotations

import logging
import re
import shutil
import stat
from pathlib import Path
from typing import Any

from querybench.agent import files
from querybench.agent.workspace import Workspace, make_writable
from querybench.errors import QuerybenchError
from querybench.tasks.model import Task

log = logging.getLogger(__name__)

_CSV_NAME = re.compile(r"([^\s'\"\\/:]+\.csv)")
_PREFIX = "/workspace/"


def copy_example(task: Task, workspace: Path) -> list[str]:
    """The task's example folder (README with the detailed requirement, documents, answer
    templates, partial projects) copied into the workspace, as the official agent gets it."""
    folder = task.extra.get("example_dir")
    if not folder or not Path(str(folder)).is_dir():
        return []
    source = Path(str(folder))
    shutil.copytree(source, workspace, dirs_exist_ok=True)
    make_writable(workspace)
    return sorted(p.name for p in source.iterdir())


def submission_line(task: Task, output: str | None, workspace: Workspace) -> dict[str, Any]:
    """The official line for the agent's final output (files are not copied here)."""
    answer = (output or "").strip()
    if answer.startswith(_PREFIX):
        answer = answer[len(_PREFIX) :]
    line: dict[str, Any] = {"instance_id": task.instance_id}
    if not answer:
        return line | {"answer_type": "answer", "answer_or_path": ""}
    if _workspace_file(workspace, answer) is not None:
        return line | {"answer_type": "file", "answer_or_path": answer}
    if ".csv" in answer:
        if task.engine in ("postgres", "clickhouse"):
            names = [name.strip() for name in answer.split(",")]
            return line | {"answer_type": "files", "answer_or_path": names}
        match = _CSV_NAME.search(answer)
        if match:
            return line | {"answer_type": "file", "answer_or_path": match[1]}
    return line | {"answer_type": "answer", "answer_or_path": answer}


def save_submission(
    task: Task, output: str | None, workspace: Workspace, submission: Path
) -> dict[str, Any]:
    """Copy the answer's files to `submission/<instance_id>/`; the line for it."""
    line = submission_line(task, output, workspace)
    folder = submission / task.instance_id
    folder.mkdir(parents=True, exist_ok=True)
    kind, value = line["answer_type"], line["answer_or_path"]
    names = value if kind == "files" else [value] if kind == "file" else []
    for name in names:
        if _workspace_file(workspace, name) is None:
            continue  # the official copy prints the miss; scoring then reports the missing file
        target = folder.joinpath(*files.parts(name))
        target.parent.mkdir(parents=True, exist_ok=True)
        try:  # read without following links, as every host-side workspace read (agent/files.py)
            files.copy_out(workspace.path, name, target)
        except (QuerybenchError, OSError) as exc:  # scoring then reports the missing file
            log.warning("%s: answer file %s not copied: %s", task.instance_id, name, exc)
            continue
    return line


def dbt_line(task: Task, database: Path) -> dict[str, Any]:
    return {"instance_id": task.instance_id, "answer_type": "file", "answer_or_path": database.name}


def _workspace_file(workspace: Workspace, name: str) -> str | None:
    """`name` when it is a regular file of the workspace: never a link, a special file or a
    path outside it (checked component by component, links not followed)."""
    try:
        info = files.status(workspace.path, name)
    except (QuerybenchError, OSError):
        return None
    return name if info is not None and stat.S_ISREG(info.st_mode) else None
