"""Schema from a live engine: the `Engine` protocol's `tables()` and `sample_rows()`, plus
SQLite's foreign keys where the engine can read them."""

from __future__ import annotations

from querybench.context.nested import flatten_type
from querybench.context.schema import ColumnInfo, DatabaseSchema, ForeignKey, TableInfo
from querybench.engines.base import Engine
from querybench.errors import EngineError


class LiveSchema:
    """A `SchemaSource` introspecting an open engine; the schema is read once and kept."""

    def __init__(self, engine: Engine, db: str, sample_rows: int = 3) -> None:
        self.engine = engine
        self.db = db
        self.n_samples = sample_rows
        self._schema: DatabaseSchema | None = None

    def load(self) -> DatabaseSchema:
        if self._schema is None:
            self._schema = DatabaseSchema(self.db, self.engine.dialect, tuple(self._tables()))
        return self._schema

    def _tables(self) -> list[TableInfo]:
        out = []
        for table in self.engine.tables():
            columns: list[ColumnInfo] = []
            for c in table.columns:
                columns.append(ColumnInfo(c.name, c.type))
                if c.type.upper().startswith(("STRUCT", "ARRAY")) or c.type.endswith("[]"):
                    columns.extend(flatten_type(c.name, c.type))
            ref = f"{table.schema}.{table.name}" if table.schema else table.name
            out.append(
                TableInfo(
                    name=ref,
                    short_name=table.name,
                    columns=tuple(columns),
                    schema=table.schema,
                    sample_rows=self._samples(ref),
                    foreign_keys=self._foreign_keys(table.name),
                )
            )
        return out

    def _samples(self, ref: str) -> tuple[dict[str, object], ...]:
        if self.n_samples <= 0:
            return ()
        try:
            result = self.engine.sample_rows(ref, self.n_samples)
        except EngineError:
            return ()  # a view that fails to run still has a schema worth showing
        return tuple(dict(zip(result.columns, row, strict=False)) for row in result.rows)

    def _foreign_keys(self, name: str) -> tuple[ForeignKey, ...]:
        if self.engine.dialect != "sqlite":
            return ()
        quoted = name.replace('"', '""')
        try:
            result = self.engine.execute(f'PRAGMA foreign_key_list("{quoted}")')
        except EngineError:
            return ()
        cols = {c: i for i, c in enumerate(result.columns)}
        return tuple(
            ForeignKey(str(r[cols["from"]]), str(r[cols["table"]]), str(r[cols["to"]] or ""))
            for r in result.rows
        )
