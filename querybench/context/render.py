"""How one table or family reads in a prompt, at four levels of detail.

Levels degrade in the order the budget asks for: FULL (types, descriptions, sampled rows),
NO_SAMPLES, NO_DESCRIPTIONS, KEY_COLUMNS (only the columns most relevant to the question).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from querybench.context.families import Family, Unit
from querybench.context.rank import terms
from querybench.context.schema import ColumnInfo, TableInfo

FULL, NO_SAMPLES, NO_DESCRIPTIONS, KEY_COLUMNS = 0, 1, 2, 3
LEVELS = (FULL, NO_SAMPLES, NO_DESCRIPTIONS, KEY_COLUMNS)
KEY_COLUMN_COUNT = 10
_DESCRIPTION_CHARS = 160
_SAMPLE_COLUMNS = 8
_CELL_CHARS = 40


def render_unit(
    unit: Unit,
    level: int,
    dialect: str,
    weights: Mapping[str, float] | None = None,
) -> str:
    table = unit.table
    lines = [f"### {unit.title}"]
    if unit.family is not None:
        lines.append(family_note(unit.family, dialect))
    if table.description and level < NO_DESCRIPTIONS:
        lines.append(f"Description: {_clip(table.description, 2 * _DESCRIPTION_CHARS)}")
    columns = list(table.columns)
    hidden = 0
    if level >= KEY_COLUMNS and len(columns) > KEY_COLUMN_COUNT:
        keep = set(key_columns(columns, weights or {}))
        hidden = len(columns) - len(keep)
        columns = [c for c in columns if c.name in keep]
    nested = {c.name.rsplit(".", 1)[0] for c in table.columns if c.depth}
    nested |= {c.name.split(":")[0] for c in table.columns if ":" in c.name}
    if columns:
        lines.append("Columns:")
        for c in columns:
            lines.append(_column_line(c, level < NO_DESCRIPTIONS, c.name in nested))
        if hidden:
            lines.append(f"(+{hidden} more columns not shown)")
    else:
        lines.append("Columns: not listed in the metadata")
    if table.foreign_keys:
        keys = ", ".join(f"{k.column} → {k.ref_table}.{k.ref_column}" for k in table.foreign_keys)
        lines.append(f"Foreign keys: {keys}")
    if level == FULL and table.sample_rows:
        lines.append(sample_markdown(table))
    return "\n".join(lines)


def family_note(family: Family, dialect: str) -> str:
    n = len(family.members)
    kind = {8: "daily", 6: "monthly", 4: "yearly"}.get(len(family.suffixes[0]), "numbered")
    head = (
        f"Family of {n} {kind} tables {family.prefix}{family.suffixes[0]} … "
        f"{family.prefix}{family.suffixes[-1]} (suffixes {family.suffix_range}), "
        f"all with the schema below (shown from {family.representative.short_name})."
    )
    if dialect == "bigquery":
        return head + (
            f" Query several at once with the wildcard table `{family.pattern}` and filter "
            f"the pseudo column _TABLE_SUFFIX, e.g. WHERE _TABLE_SUFFIX BETWEEN "
            f"'{family.suffixes[0]}' AND '{family.suffixes[-1]}'."
        )
    return head + " Query one member by name, or combine members with UNION ALL."


def key_columns(columns: list[ColumnInfo], weights: Mapping[str, float]) -> list[str]:
    """The most question-relevant columns; ties keep table order (keys tend to come first)."""

    def score(c: ColumnInfo) -> float:
        name_terms = set(terms(c.name))
        desc_terms = set(terms(c.description)) - name_terms
        return sum(weights.get(t, 0.0) for t in name_terms) + 0.3 * sum(
            weights.get(t, 0.0) for t in desc_terms
        )

    ranked = sorted(enumerate(columns), key=lambda ic: (-score(ic[1]), ic[0]))
    return [c.name for _, c in ranked[:KEY_COLUMN_COUNT]]


def _column_line(c: ColumnInfo, with_description: bool, has_fields: bool) -> str:
    ctype = c.type
    if has_fields and "<" in ctype:  # fields follow on their own lines
        ctype = "ARRAY<STRUCT>" if ctype.upper().startswith("ARRAY") else "STRUCT"
    text = f"- {c.name} {ctype}".rstrip()
    if with_description and c.description:
        text += f" — {_clip(c.description, _DESCRIPTION_CHARS)}"
    return text


def sample_markdown(table: TableInfo) -> str:
    names = [c.name for c in table.columns if c.depth == 0 and ":" not in c.name]
    names = names[:_SAMPLE_COLUMNS]
    rows = table.sample_rows
    lines = [
        "Sample rows:",
        "| " + " | ".join(names) + " |",
        "|" + "---|" * len(names),
    ]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(n)) for n in names) + " |")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    return _clip(" ".join(str(value).split()).replace("|", "\\|"), _CELL_CHARS)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def header(db: str, dialect: str, schemas: tuple[str, ...]) -> str:
    where = f" ({len(schemas)} schemas: {', '.join(schemas)})" if len(schemas) > 1 else ""
    return f"## Database {db} — {dialect}{where}\nTables are named as they must be written in SQL."


def other_tables(units: list[Unit]) -> str:
    names = ", ".join(u.title for u in units)
    return f"### Other tables (schema not shown)\n{names}"
