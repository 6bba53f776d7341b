"""Schema linking: the tables a predicted query reads against the tables its gold query reads.

Tables are found with sqlglot in the task's dialect; CTE names are not tables, and names are
compared by their last part, lower-cased (`project.dataset.events_*` and `events_*` are the
same table to a reader of the report). A query sqlglot cannot parse has no diagnosis.
"""

from __future__ import annotations

from dataclasses import dataclass

from querybench.engines.registry import engine_dialect
from querybench.tasks.spider2 import FAMILY_KINDS


@dataclass(frozen=True)
class SchemaLinking:
    gold_tables: tuple[str, ...]
    predicted_tables: tuple[str, ...]

    @property
    def missing(self) -> tuple[str, ...]:
        """Gold tables the prediction never reads."""
        return tuple(t for t in self.gold_tables if t not in self.predicted_tables)

    @property
    def extra(self) -> tuple[str, ...]:
        """Tables the prediction reads that the gold does not."""
        return tuple(t for t in self.predicted_tables if t not in self.gold_tables)

    @property
    def exact(self) -> bool:
        return not self.missing and not self.extra


def tables_read(sql: str, dialect: str | None = None) -> tuple[str, ...] | None:
    """Sorted table names a query reads; None when sqlglot cannot parse it."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except (SqlglotError, ValueError, RecursionError):
        return None
    if not trees:
        return None
    names: set[str] = set()
    for tree in trees:
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            name = table.name.lower()
            if name and name not in ctes:
                names.add(name)
    return tuple(sorted(names))


def schema_linking(
    predicted_sql: str | None, gold_sql: str | None, engine: str | None
) -> SchemaLinking | None:
    """Gold against predicted tables; None without both queries or when either fails to parse."""
    if not predicted_sql or not gold_sql:
        return None
    # `engine` is a task's engine kind or a result's Spider 2.0 family ("bq")
    dialect = engine_dialect(FAMILY_KINDS.get(engine or "", engine or ""))
    gold = tables_read(gold_sql, dialect)
    predicted = tables_read(predicted_sql, dialect)
    if gold is None or predicted is None:
        return None
    return SchemaLinking(gold, predicted)
