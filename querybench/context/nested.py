"""Flatten nested column types into dotted paths a model can write: STRUCT/ARRAY (BigQuery,
DuckDB) from the type text, VARIANT/OBJECT (Snowflake) from the keys of sampled JSON values."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from querybench import json_input
from querybench.context.schema import ColumnInfo

_MAX_FIELDS = 200  # a pathological type should not flood the prompt


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside <>, (), [] and quotes."""
    parts: list[str] = []
    depth = 0
    quote = ""
    start = 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
        elif ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _inner(type_text: str, keyword: str) -> str | None:
    t = type_text.strip()
    if t.upper().startswith(keyword + "<") and t.endswith(">"):
        return t[len(keyword) + 1 : -1]
    if t.upper().startswith(keyword + "(") and t.endswith(")"):  # DuckDB STRUCT(a INT, ...)
        return t[len(keyword) + 1 : -1]
    return None


def struct_fields(type_text: str) -> list[tuple[str, str]]:
    """Direct fields of a STRUCT type (through any ARRAY wrapping): [(name, type)]."""
    t = type_text.strip()
    while True:
        inner = _inner(t, "ARRAY")
        if inner is None:
            break
        t = inner
    if t.endswith("[]"):  # DuckDB list syntax
        return struct_fields(t[:-2])
    body = _inner(t, "STRUCT")
    if body is None:
        return []
    fields = []
    for part in split_top_level(body):
        name, _, ftype = part.partition(" ")
        fields.append((name.strip('"`'), ftype.strip()))
    return fields


def flatten_type(name: str, type_text: str) -> list[ColumnInfo]:
    """Nested fields below column `name` (the column itself excluded), depth first."""
    out: list[ColumnInfo] = []

    def walk(prefix: str, t: str) -> None:
        for fname, ftype in struct_fields(t):
            if len(out) >= _MAX_FIELDS:
                return
            path = f"{prefix}.{fname}"
            out.append(ColumnInfo(path, ftype))
            walk(path, ftype)

    walk(name, type_text)
    return out


def variant_paths(name: str, samples: Iterable[Any], limit: int = 40) -> list[ColumnInfo]:
    """Keys seen in sampled VARIANT/OBJECT values, as `col:key` paths (Snowflake's syntax)."""
    seen: dict[str, str] = {}

    def walk(prefix: str, value: Any, depth: int) -> None:
        if depth > 3 or len(seen) >= limit:
            return
        if isinstance(value, list):
            for item in value[:3]:
                walk(prefix + "[]", item, depth + 1)
        elif isinstance(value, dict):
            for key, sub in value.items():
                path = f"{prefix}:{key}" if depth == 0 else f"{prefix}.{key}"
                seen.setdefault(path, _json_type(sub))
                walk(path, sub, depth + 1)

    for raw in samples:
        value = raw
        if isinstance(raw, str):
            try:
                value = json_input.loads(raw)
            except ValueError:
                continue
        walk(name, value, 0)
    return [ColumnInfo(path, t) for path, t in seen.items()]


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int | float):
        return "NUMBER"
    if isinstance(value, str):
        return "TEXT"
    if isinstance(value, list):
        return "ARRAY"
    if isinstance(value, dict):
        return "OBJECT"
    return "VARIANT"
