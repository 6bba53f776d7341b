"""Read-only engines behind one `Engine` protocol, and `connect()` to pick one from a target.

A target is a URL whose scheme names the engine (`sqlite:///abs/path`, `postgresql://…`,
`chdb:///dir`, …) or a bare path whose suffix (or, failing that, file header) names a file
engine; `engines.registry` holds the table. `QueryPool` (engines.pool) and `ResultCache`
(engines.cache) build on `connect`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from querybench.engines.base import Column, Engine, Result, Table, database_file
from querybench.engines.registry import (
    EngineKind,
    EngineSpec,
    file_specs,
    spec_for_header,
    spec_for_scheme,
    spec_for_suffix,
)
from querybench.errors import EngineError, EngineUnavailable

__all__ = [
    "Column",
    "Engine",
    "EngineKind",
    "EngineSpec",
    "Result",
    "Table",
    "Target",
    "connect",
    "parse_target",
]


@dataclass(frozen=True)
class Target:
    """Which engine opens which file."""

    kind: EngineKind
    path: Path


def parse_target(target: str | Path) -> Target:
    """Resolve a file target to its engine kind and path, without opening (or creating)
    anything."""
    spec, path = _file_target(target)
    return Target(spec.kind, path)


def connect(target: str | Path, **kw: Any) -> Engine:
    """Open `target` read-only; keyword arguments go to the engine's constructor."""
    text = str(target)
    spec = spec_for_scheme(text.partition("://")[0]) if "://" in text else None
    if spec is not None and not spec.is_file:
        engine: Engine = _opener(spec)(text, **kw)
        return engine
    spec, path = _file_target(target)
    _require_file(path, spec)
    opened: Engine = _opener(spec)(path, **kw)
    return opened


def _file_target(target: str | Path) -> tuple[EngineSpec, Path]:
    text = str(target)
    if "://" in text:
        scheme, _, rest = text.partition("://")
        spec = spec_for_scheme(scheme)
        if spec is None or not spec.is_file:
            raise EngineUnavailable(f"no engine for {scheme!r} in {text!r}: use {_file_forms()}")
        if not rest.startswith("/"):
            raise EngineError(f"{scheme}:// needs an absolute path (three slashes): {text!r}")
        return spec, Path(rest)
    path = Path(text).expanduser()
    spec = spec_for_suffix(path.suffix)
    if spec is not None:
        return spec, path
    _require_file(path)
    with path.open("rb") as f:
        spec = spec_for_header(f.read(16))
    if spec is not None:
        return spec, path
    schemes = " or ".join(f"{scheme}:///" for scheme in _file_schemes())
    raise EngineUnavailable(
        f"cannot tell which engine opens {path}: use a {schemes} URL "
        f"or a path ending in {_suffix_list()}"
    )


def _file_schemes() -> list[str]:
    return [spec.schemes[0] for spec in file_specs()]


def _suffix_list() -> str:
    suffixes = [suffix for spec in file_specs() for suffix in spec.suffixes]
    return ", ".join(suffixes[:-1]) + " or " + suffixes[-1]


def _file_forms() -> str:
    urls = ", ".join(f"{scheme}:///abs/path" for scheme in _file_schemes())
    return f"{urls} or a path ending in {_suffix_list()}"


def _opener(spec: EngineSpec) -> Any:
    """The class or `from_url` the spec names, its module imported now (drivers load late)."""
    module, _, attribute = spec.opener.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _require_file(path: Path, spec: EngineSpec | None = None) -> None:
    database_file(path, () if spec is None else spec.sidecars)
