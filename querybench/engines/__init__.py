"""Read-only engines behind one `Engine` protocol, and `connect()` to pick one from a target.

A target is `sqlite:///abs/path`, `duckdb:///abs/path`, or a bare path whose suffix (or, failing
that, file header) names the engine. `QueryPool` (engines.pool) and `ResultCache`
(engines.cache) build on `connect`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from querybench.engines.base import Column, Engine, Result, Table
from querybench.errors import EngineError, EngineUnavailable

__all__ = ["Column", "Engine", "EngineKind", "Result", "Table", "Target", "connect", "parse_target"]

EngineKind = Literal["sqlite", "duckdb"]

_SUFFIXES: dict[str, EngineKind] = {
    ".sqlite": "sqlite",
    ".sqlite3": "sqlite",
    ".db": "sqlite",
    ".duckdb": "duckdb",
}
_SQLITE_MAGIC = b"SQLite format 3\x00"
_DUCKDB_MAGIC = b"DUCK"  # at byte offset 8 of every DuckDB file


@dataclass(frozen=True)
class Target:
    """Which engine opens which file."""

    kind: EngineKind
    path: Path


def parse_target(target: str | Path) -> Target:
    """Resolve a target to its engine kind and path, without opening (or creating) anything."""
    text = str(target)
    if "://" in text:
        scheme, _, rest = text.partition("://")
        kind = scheme.lower()
        if kind not in ("sqlite", "duckdb"):
            raise EngineUnavailable(
                f"no engine for {scheme!r} in {text!r}: use sqlite:///abs/path, "
                "duckdb:///abs/path or a path ending in .sqlite, .sqlite3, .db or .duckdb"
            )
        if not rest.startswith("/"):
            raise EngineError(f"{scheme}:// needs an absolute path (three slashes): {text!r}")
        return Target("sqlite" if kind == "sqlite" else "duckdb", Path(rest))
    path = Path(text).expanduser()
    kind_of_suffix = _SUFFIXES.get(path.suffix.lower())
    if kind_of_suffix is not None:
        return Target(kind_of_suffix, path)
    _require_file(path)
    with path.open("rb") as f:
        header = f.read(16)
    if header.startswith(_SQLITE_MAGIC):
        return Target("sqlite", path)
    if header[8:12] == _DUCKDB_MAGIC:
        return Target("duckdb", path)
    raise EngineUnavailable(
        f"cannot tell which engine opens {path}: use a sqlite:/// or duckdb:/// URL "
        "or a path ending in .sqlite, .sqlite3, .db or .duckdb"
    )


# Server URLs (and chdb's data directory), each opened by its module's `from_url`.
_URL_ENGINES = {
    "postgresql": "postgres",
    "postgres": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "clickhouse": "clickhouse",
    "chdb": "clickhouse",
    "snowflake": "snowflake",
    "snowflake+local": "snowflake",
    "bigquery": "bigquery",
    "bigquery+local": "bigquery",
}


def connect(target: str | Path, **kw: Any) -> Engine:
    """Open `target` read-only; keyword arguments go to the engine's constructor."""
    scheme = str(target).partition("://")[0].lower() if "://" in str(target) else ""
    if scheme in _URL_ENGINES:
        import importlib

        module = importlib.import_module(f"querybench.engines.{_URL_ENGINES[scheme]}")
        engine: Engine = module.from_url(str(target), **kw)
        return engine
    parsed = parse_target(target)
    _require_file(parsed.path)
    if parsed.kind == "sqlite":
        from querybench.engines.sqlite import SQLiteEngine

        return SQLiteEngine(parsed.path, **kw)
    from querybench.engines.duckdb import DuckDBEngine

    return DuckDBEngine(parsed.path, **kw)


def _require_file(path: Path) -> None:
    if not path.is_file():
        raise EngineError(f"database file not found: {path}")
