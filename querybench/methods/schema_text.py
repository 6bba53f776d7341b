"""Schema representations the published methods use, rendered from a `DatabaseSchema`.

* `create_tables`: DAIL-SQL's "code representation" (and CHESS's), CREATE TABLE statements with
  column descriptions and sampled values as comments, foreign keys as constraints;
* `din_tables`: DIN-SQL's `Table t, columns = [*,a,b]` lines with `Foreign_keys = [...]`.

Only the tables `shown` are rendered (the ones the context builder fitted in the budget, or the
ones a model kept); a family of sharded tables is one statement for its representative with a
comment naming the family.
"""

from __future__ import annotations

from collections.abc import Collection

from querybench.context.families import Unit, group_families
from querybench.context.render import family_note
from querybench.context.schema import ColumnInfo, DatabaseSchema, TableInfo

_VALUE_CHARS = 30
_SAMPLES = 3


def shown_units(schema: DatabaseSchema, shown: Collection[str] | None) -> list[Unit]:
    """Units of `schema` whose tables are all in `shown` (every unit when `shown` is None),
    in the order of `shown` (its first table), else the schema's order."""
    units = list(group_families(schema.tables))
    if shown is None:
        return units
    wanted = set(shown)
    order = {name: i for i, name in enumerate(shown)}
    kept = [u for u in units if any(name in wanted for name in u.covers)]
    return sorted(kept, key=lambda u: min(order.get(n, len(order)) for n in u.covers))


def create_tables(
    schema: DatabaseSchema, shown: Collection[str] | None = None, *, values: bool = True
) -> str:
    return "\n\n".join(
        create_table(u.table, family_note(u.family, schema.dialect) if u.family else "", values)
        for u in shown_units(schema, shown)
    )


def create_table(table: TableInfo, note: str = "", values: bool = True) -> str:
    lines = [f"/* {note} */"] if note else []
    if table.description:
        lines.append(f"/* {_one_line(table.description, 300)} */")
    top = [c for c in table.columns if c.depth == 0 and ":" not in c.name]
    samples = _samples(table) if values else {}
    body = [_column(c, samples.get(c.name)) for c in top]
    body += [
        (f"  FOREIGN KEY ({k.column}) REFERENCES {k.ref_table}({k.ref_column})", "")
        for k in table.foreign_keys
    ]
    lines.append(f"CREATE TABLE {table.name} (")
    for i, (definition, comment) in enumerate(body):
        comma = "," if i < len(body) - 1 else ""
        lines.append(f"{definition}{comma} -- {comment}" if comment else f"{definition}{comma}")
    if not body:
        lines.append("  -- columns not listed in the metadata")
    lines.append(")")
    return "\n".join(lines)


def din_tables(schema: DatabaseSchema, shown: Collection[str] | None = None) -> str:
    units = shown_units(schema, shown)
    lines = []
    for u in units:
        names = ",".join(c.name for c in u.table.columns if c.depth == 0)
        title = u.family.pattern if u.family else u.table.name
        lines.append(f"Table {title}, columns = [*,{names}]")
    keys = [
        f"{u.table.name}.{k.column} = {k.ref_table}.{k.ref_column}"
        for u in units
        for k in u.table.foreign_keys
    ]
    lines.append(f"Foreign_keys = [{','.join(keys)}]")
    return "\n".join(lines)


def _column(c: ColumnInfo, examples: list[str] | None) -> tuple[str, str]:
    """(definition, comment) of one column."""
    notes = []
    if c.description:
        notes.append(_one_line(c.description, 160))
    if examples:
        notes.append("examples: " + ", ".join(examples))
    return f"  {c.name} {c.type}".rstrip(), "; ".join(notes)


def _samples(table: TableInfo) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for row in table.sample_rows[:_SAMPLES]:
        for name, value in row.items():
            if value is not None:
                out.setdefault(name, []).append(_one_line(str(value), _VALUE_CHARS))
    return out


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
