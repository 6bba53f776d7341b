"""The official Spider 2.0 (agentic) submission layout, read as the official `evaluate.py` reads it
and as it should be read.

A submission folder holds `results_metadata.jsonl`, one line per instance
`{"instance_id", "answer_type": "answer" | "file" | "files", "answer_or_path"}`, and one folder
per instance with the files its line names. The official reader:

* asserts that the folder holds exactly one `.jsonl` file, named `results_metadata.jsonl`;
* reads lines with `json.loads(line.strip())` and stops at the first line that is not JSON (a
  blank line included), keeping the lines before it and silently dropping the rest;
* crashes (no instance is scored) on a line that is JSON but not an object with an
  `instance_id`, and keeps the last line of an id given twice.

`read_submission` gives both readings: `official` (what `evaluate.py` scores) and `strict` (every
well-formed line), with a warning for everything the official reading drops or misreads.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from querybench import json_input
from querybench.errors import PredictionRefused
from querybench.evaluation.prediction_file import ReadLimits, read_prediction_text

METADATA = "results_metadata.jsonl"
# What a warning that nothing is scored says the folder should hold.
LAYOUT = (
    f"the official submission layout: {METADATA}, a JSON line per instance, "
    "beside a folder per instance"
)


@dataclass(frozen=True)
class SubmissionEntry:
    """One line of `results_metadata.jsonl`, as written (fields are not checked here)."""

    instance_id: str
    fields: Mapping[str, Any]
    line: int


@dataclass(frozen=True)
class Submission:
    folder: Path
    official: dict[str, SubmissionEntry] = field(default_factory=dict)
    strict: dict[str, SubmissionEntry] = field(default_factory=dict)
    # Why the official evaluate.py stops before scoring anything, when it does.
    fatal: str | None = None
    warnings: tuple[str, ...] = ()


def read_submission(folder: Path) -> Submission:
    """Both readings of the submission in `folder` (see the module docstring)."""
    warnings: list[str] = []
    fatal: str | None = None
    metadata = folder / METADATA
    if not folder.is_dir():
        problem = f"no submission folder {folder}"
        return Submission(folder, fatal=problem, warnings=(problem,))
    others = sorted(p.name for p in folder.iterdir() if p.name.endswith(".jsonl"))
    if others != [METADATA]:
        fatal = (
            f"evaluate.py asserts exactly one .jsonl named {METADATA} in the folder, "
            f"found {others or 'none'}"
        )
    if not os.path.lexists(metadata):
        warnings.append(f"no {METADATA} in {folder}: nothing is scored (expected {LAYOUT})")
        return Submission(folder, fatal=fatal or f"no {METADATA}", warnings=tuple(warnings))
    try:  # read as every prediction file is: regular, in its folder, bounded
        text = read_prediction_text(metadata, folder, ReadLimits())
    except PredictionRefused as exc:
        problem = f"cannot read {metadata}: {exc}"
        return Submission(folder, fatal=problem, warnings=(f"{problem}; nothing is scored",))
    lines = list(io.StringIO(text, newline=None))  # universal newlines, as `open(path, 'r')`
    official: dict[str, SubmissionEntry] = {}
    strict: dict[str, SubmissionEntry] = {}
    stopped: int | None = None
    for number, line in enumerate(lines, start=1):
        try:
            item = json_input.loads(line.strip())
        except json.JSONDecodeError as error:  # nested past the reader, too (`json_input`)
            reason = error.msg
            if stopped is None:
                stopped = number
                rest = sum(1 for later in lines[number:] if later.strip())
                if rest:
                    warnings.append(
                        f"{METADATA}:{number}: not JSON ({reason}); the official reader stops "
                        f"here and silently drops the {rest} non-blank line(s) after it "
                        "(strict scoring reads them)"
                    )
            if line.strip():
                warnings.append(f"{METADATA}:{number}: not JSON ({reason}); line skipped")
            continue
        instance_id = item.get("instance_id") if isinstance(item, dict) else None
        if not isinstance(item, dict) or "instance_id" not in item:
            problem = f"{METADATA}:{number}: not an object with an instance_id: {line.strip()[:80]}"
            warnings.append(f"{problem}; line skipped")
            if stopped is None and fatal is None:
                fatal = f"evaluate.py crashes reading {problem}"
            continue
        if not isinstance(instance_id, str):
            warnings.append(
                f"{METADATA}:{number}: instance_id {instance_id!r} is not a string; "
                "it matches no task (officially silently)"
            )
            if stopped is None and fatal is None and not _hashable(instance_id):
                fatal = f"evaluate.py crashes on the unhashable instance_id at line {number}"
            continue
        entry = SubmissionEntry(instance_id, item, number)
        if instance_id in strict:
            warnings.append(
                f"{METADATA}:{number}: {instance_id} given again (line "
                f"{strict[instance_id].line}); the last line counts"
            )
        strict[instance_id] = entry
        if stopped is None:
            official[instance_id] = entry
    if not any(line.strip() for line in lines):
        warnings.append(f"{metadata} holds no line: nothing is scored (expected {LAYOUT})")
    if fatal is not None:
        warnings.append(f"the official evaluate.py scores nothing: {fatal}")
    return Submission(folder, official, strict, fatal, tuple(dict.fromkeys(warnings)))


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
