"""The `evaluation` field of a Spider 2.0 agentic / DBT eval-config line: its checks.

An entry reads `{"func": "duckdb_match", "parameters": {...}}`; the field holds one entry or a
list of them. Here only their shape is read (task data); whether a matcher of that name takes
those parameters is the scorer's to say (`evaluation/spider2/agentic/score.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from querybench.errors import DataError


@dataclass(frozen=True)
class AgenticCheck:
    """One `{func, parameters}` entry of an official eval config."""

    func: str
    parameters: Mapping[str, Any]


def parse_checks(evaluation: object) -> tuple[AgenticCheck, ...]:
    """The entries of one `evaluation` field, each with a func name and a parameters object."""
    entries = evaluation if isinstance(evaluation, list) else [evaluation]
    if not entries:
        raise DataError("empty evaluation list")
    checks = []
    for entry in entries:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("func"), str):
            raise DataError(f"evaluation entry without a func: {entry!r}")
        parameters = entry.get("parameters", {})
        if not isinstance(parameters, Mapping):
            raise DataError(f"parameters of {entry['func']} is not an object: {parameters!r}")
        checks.append(AgenticCheck(entry["func"], dict(parameters)))
    return tuple(checks)
