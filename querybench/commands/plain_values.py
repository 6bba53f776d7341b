"""Typer's coercion of a plain option value (a decimal number in its bounds, a string, a path),
without typer: `plain_options.py` gives it to typer's commands and the eval fast path
(`eval_fast.py`) uses it alone; anything else is left to typer's own coercion (`_UNSET`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_INT = re.compile(r"0|[1-9][0-9]{0,17}")
_FLOAT = re.compile(r"(0|[1-9][0-9]{0,14})(\.[0-9]{1,15})?")
_DEFAULT_PATH_FLAGS = {
    "exists": False,
    "file_okay": True,
    "dir_okay": True,
    "writable": False,
    "readable": True,
    "resolve_path": False,
    "allow_dash": False,
    "path_type": None,
    "parser": None,
}
_UNSET = object()


@dataclass(frozen=True)
class Flag:
    """An option as typer declares it, what the eval fast path (`eval_fast.py`) reads; its
    bounds are those `plain_value` checks."""

    option: str  # "--db-dir"
    name: str  # the parameter: "db_dir"
    kind: str  # str, int, float or path
    required: bool = False
    default: Any = None
    min: int | float | None = None
    max: int | float | None = None


def plain_value(annotation: Any, info: Any, value: Any) -> Any:
    """`value` coerced as typer would, or `_UNSET` when only typer's own coercion can say."""
    if getattr(info, "parser", None) is not None or getattr(info, "clamp", False):
        return _UNSET
    if annotation is str:
        return value if isinstance(value, str) else _UNSET
    if annotation is int or annotation is float:
        if isinstance(value, str) and (_INT if annotation is int else _FLOAT).fullmatch(value):
            number: Any = annotation(value)
        elif type(value) is int or (annotation is float and type(value) is float):
            number = annotation(value)
        else:
            return _UNSET
        low, high = info.min, info.max
        if (low is not None and number < low) or (high is not None and number > high):
            return _UNSET
        return number
    if annotation is Path:
        if any(getattr(info, k, v) != v for k, v in _DEFAULT_PATH_FLAGS.items()):
            return _UNSET
        if isinstance(value, Path):
            path = value
        elif isinstance(value, str) and value:
            path = Path(value)
        else:
            return _UNSET
        try:
            os.stat(path)
        except OSError:
            return path
        return path if os.access(path, os.R_OK) else _UNSET
    return _UNSET
