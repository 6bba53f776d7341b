"""Reading task files so that every problem is one `DataError` naming file, line and field.

JSON arrays (BIRD's and Spider's `dev.json`) are walked entry by entry with the decoder's own
offsets, so an error names the line an entry starts on, not just its index.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from querybench import json_input
from querybench.errors import DataError, NotRegularFile
from querybench.file_digests import open_regular

_WHITESPACE = " \t\n\r"
# The largest input file read (a task file, metadata, a gold file): a prediction file's bound.
MAX_INPUT_BYTES = 1 << 30


def read_text(path: Path, what: str, folder: Path | None = None, errors: str = "strict") -> str:
    """The file's text as `Path.read_text` gives it (UTF-8, universal newlines), read only
    if it is a regular file of at most `MAX_INPUT_BYTES`: a FIFO never returns a read, and a
    device such as `/dev/zero` has no end (it was read until the process was killed for its
    memory). Opened without blocking, checked on the descriptor. With `folder` (a run folder,
    a data folder: whoever made it chose its links), a file whose real path is outside it is
    refused, not read; `errors` as `read_text`'s."""
    if folder is not None:
        _inside(path, folder, what)
    try:
        fd, _ = open_regular(path)
    except FileNotFoundError:
        raise DataError(f"{path}: {what} not found (run `querybench data status`)") from None
    except NotRegularFile:
        raise DataError(f"{path}: cannot read {what}: not a regular file") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read {what}: {exc}") from exc
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise DataError(f"{path}: cannot read {what}: {exc}") from exc
    if len(data) > MAX_INPUT_BYTES:
        raise DataError(
            f"{path}: cannot read {what}: larger than the limit {MAX_INPUT_BYTES:,} bytes"
        )
    try:
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors=errors).read()
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: cannot read {what}: {exc}") from exc


def _inside(path: Path, folder: Path, what: str) -> None:
    """`DataError` when `path`, links resolved, is not inside `folder`."""
    real, root = os.path.realpath(path), os.path.realpath(folder)
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        raise DataError(
            f"{path}: cannot read {what}: it is a link to {real}, outside {folder} (not followed)"
        )


def text_lines(text: str) -> list[str]:
    """The lines of a text file as text-mode `readlines()` yields them (the official scripts'
    reader, and JSON Lines'), line ends removed: `\n`, `\r\n` and a lone `\r` end a line,
    nothing else does. `str.splitlines` also splits on `\x0b \x0c \x1c \x1d \x1e \x85` and
    U+2028 / U+2029, which an answer or a JSON string may hold: one such character would
    add a line, shifting every answer after it onto another task's gold."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines[-1] == "":  # the end of the last line, not a line of its own
        lines.pop()
    return lines


def one_line(sql: str) -> str:
    """Official text formats hold one query per line, cut at the first tab: every character
    the official `readlines()` ends a line at (`\r`, `\n`) or cuts it at (`\t`) becomes a
    space, so no answer can add a line or shift the next answer (`text_lines` reads it)."""
    return sql.replace("\r", " ").replace("\n", " ").replace("\t", " ").strip()


def read_jsonl(path: Path, what: str = "task file") -> Iterator[tuple[str, dict[str, Any]]]:
    """(`path:line`, object) for every non-blank line; a bad line is a `DataError`."""
    for number, line in enumerate(text_lines(read_text(path, what)), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            item = json_input.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(item, dict):
            raise DataError(f"{where}: expected a JSON object, got {type(item).__name__}")
        yield where, item


def read_json_array(path: Path, what: str = "task file") -> Iterator[tuple[str, dict[str, Any]]]:
    """(`path:line`, object) for every entry of a JSON array of objects."""
    text = read_text(path, what)
    index = _skip(text, 0)
    if not text.startswith("[", index):
        raise DataError(f"{path}:{_line(text, index)}: expected a JSON array ({what})")
    index = _skip(text, index + 1)
    if text.startswith("]", index):
        return
    line, counted_to = 1, 0
    while True:
        line += text.count("\n", counted_to, index)
        counted_to = index
        where = f"{path}:{line}"
        try:
            item, index = json_input.raw_decode(text, index)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(item, dict):
            raise DataError(f"{where}: expected a JSON object, got {type(item).__name__}")
        yield where, item
        index = _skip(text, index)
        if text.startswith("]", index):
            return
        if not text.startswith(",", index):
            raise DataError(f"{path}:{_line(text, index)}: expected ',' or ']' in the array")
        index = _skip(text, index + 1)


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def _line(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def required_str(item: Mapping[str, Any], field: str, where: str, *, int_ok: bool = False) -> str:
    """A non-empty string field; with `int_ok`, an int too (ids such as BIRD's `question_id`)."""
    if field not in item or item[field] is None:
        raise DataError(f"{where}: field {field!r} is missing")
    value = item[field]
    if (
        isinstance(value, bool)
        or not isinstance(value, str | int)
        or (isinstance(value, int) and not int_ok)
    ):
        raise DataError(f"{where}: field {field!r} must be a string, got {type(value).__name__}")
    text = str(value)
    if not text.strip():
        raise DataError(f"{where}: field {field!r} is empty")
    return text


def required_name(item: Mapping[str, Any], field: str, where: str, *, int_ok: bool = False) -> str:
    """`required_str`, naming one entry of a folder (a database id, which becomes
    `<folder>/<db>/<db>.sqlite` or a server URL's database; an instance id, which becomes
    `<id>.csv`, `<id>.sql`, a trajectory's file, a DBT project's folder): a path out of its
    folder, `..`, a separator or a NUL is a `DataError`, not a host file opened or written."""
    text = required_str(item, field, where, int_ok=int_ok)
    if not plain_name(text):
        raise DataError(f"{where}: field {field!r} is not a plain name: {text!r}")
    return text


def plain_name(text: str) -> bool:
    """Whether `text` names one entry of a folder, and only that."""
    return text not in ("", ".", "..") and not any(c in text for c in "/\\\x00")


def optional_str(item: Mapping[str, Any], field: str, where: str) -> str | None:
    """A string field that may be absent, null or empty (then None)."""
    value = item.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DataError(f"{where}: field {field!r} must be a string, got {type(value).__name__}")
    return value if value.strip() else None


def unique_ids(ids: list[str], path: Path) -> None:
    seen: set[str] = set()
    for instance_id in ids:
        if instance_id in seen:
            raise DataError(f"{path}: instance id {instance_id!r} appears more than once")
        seen.add(instance_id)
