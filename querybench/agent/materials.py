"""What the official Spider 2.0-lite/snow agents put in a task's folder beside the question: the
database's schema folder (`DDL.csv` and a JSON description with sample rows per table) and the
external-knowledge document the task names. Copies, so the agent may annotate them freely."""

from __future__ import annotations

import shutil
from pathlib import Path

from querybench.agent.workspace import make_writable
from querybench.tasks.model import Task


def documents_dir(task: Task, root: Path) -> Path:
    return root / "spider2" / task.benchmark / "resource" / "documents"


def copy_materials(task: Task, root: Path, workspace: Path) -> list[str]:
    """Copy the task's schema folder and document into `workspace`; the names copied."""
    copied = []
    metadata = task.extra.get("metadata_dir")
    if metadata and Path(str(metadata)).is_dir():
        source = Path(str(metadata))
        shutil.copytree(source, workspace / source.name, dirs_exist_ok=True)
        copied.append(source.name)
    if task.external_knowledge:
        document = documents_dir(task, root) / task.external_knowledge
        if document.is_file():
            shutil.copyfile(document, workspace / document.name)
            copied.append(document.name)
    make_writable(workspace)
    return copied
