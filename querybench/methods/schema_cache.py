"""One schema source per database for a whole run: introspected once, reused by every task."""

from __future__ import annotations

import threading
from pathlib import Path

from querybench.context import build_context
from querybench.context.builder import Context
from querybench.context.schema import DatabaseSchema, SchemaSource
from querybench.tasks.model import Task


class ContextCache:
    """One schema source per database for the whole run (introspected once, then reused)."""

    def __init__(self) -> None:
        self._sources: dict[tuple[str, ...], SchemaSource] = {}
        self._lock = threading.Lock()

    def source(self, task: Task, data_dir: Path | None) -> SchemaSource:
        from querybench.context.live import LiveSchema
        from querybench.context.resolve import schema_source

        key = (str(data_dir), task.benchmark, task.db, str(task.extra.get("db_path", "")))
        with self._lock:
            if key not in self._sources:
                source = schema_source(task, data_dir)
                source.load()
                if isinstance(source, LiveSchema):
                    source.engine.close()
                self._sources[key] = source
            return self._sources[key]

    def build(
        self, task: Task, budget: int | None, data_dir: Path | None
    ) -> tuple[Context, DatabaseSchema]:
        """The ranked context within `budget` (as zero-shot builds it) and the full schema."""
        source = self.source(task, data_dir)
        context = build_context(task, budget=budget, data=data_dir, source=source)
        return context, source.load()
