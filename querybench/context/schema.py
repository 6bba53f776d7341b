"""The schema a context is built from, read from metadata files or a live engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ColumnInfo:
    """One column, or one nested field of a STRUCT/ARRAY/VARIANT column named by its dotted path."""

    name: str
    type: str = ""
    description: str = ""

    @property
    def depth(self) -> int:
        return self.name.count(".")


@dataclass(frozen=True)
class ForeignKey:
    column: str
    ref_table: str
    ref_column: str


@dataclass(frozen=True)
class TableInfo:
    """A table as a model sees it; `name` is fully qualified (`project.dataset.t`, `DB.S.T`)."""

    name: str
    short_name: str
    columns: tuple[ColumnInfo, ...] = ()
    schema: str | None = None  # dataset / schema, kept for multi-schema databases
    description: str = ""
    sample_rows: tuple[dict[str, Any], ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()


@dataclass(frozen=True)
class DatabaseSchema:
    db: str
    dialect: str  # bigquery, snowflake, sqlite, duckdb
    tables: tuple[TableInfo, ...]
    # Memo of rendering costs; shared by every context built over this (cached) schema.
    _memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def schemas(self) -> tuple[str, ...]:
        return tuple(sorted({t.schema for t in self.tables if t.schema}))


class SchemaSource(Protocol):
    """Anything that can produce a `DatabaseSchema`: metadata files, a live engine, a fixture."""

    def load(self) -> DatabaseSchema: ...
