"""Collapse date- or year-sharded tables (`events_20201101` … `events_20210131`) into one family
shown once, with its suffix range and one representative schema."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from querybench.context.schema import TableInfo

_SHARD = re.compile(r"^(.*?)(\d{8}|\d{6}|\d{4})$")
_MIN_MEMBERS = 2
_MIN_OVERLAP = 0.5  # Jaccard of top-level column names against the representative


@dataclass(frozen=True)
class Family:
    pattern: str  # qualified wildcard name, e.g. `bigquery-public-data.ga4_….events_*`
    prefix: str  # short name before the suffix, e.g. `events_`
    members: tuple[str, ...]  # qualified member names, in suffix order
    suffixes: tuple[str, ...]
    representative: TableInfo

    @property
    def suffix_range(self) -> str:
        return f"{self.suffixes[0]} … {self.suffixes[-1]}"


@dataclass(frozen=True)
class Unit:
    """What the prompt shows as one entry: a table, or a family through its representative."""

    table: TableInfo
    family: Family | None = None

    @property
    def covers(self) -> tuple[str, ...]:
        return self.family.members if self.family else (self.table.name,)

    @property
    def title(self) -> str:
        return self.family.pattern if self.family else self.table.name


def group_families(tables: tuple[TableInfo, ...]) -> tuple[Unit, ...]:
    """Tables sharing a schema, a name prefix and most columns, differing only in a numeric
    (date or year) suffix, become one family; every other table stays its own unit."""
    candidates: dict[tuple[str | None, str], list[tuple[str, TableInfo]]] = defaultdict(list)
    for table in tables:
        m = _SHARD.match(table.short_name)
        if m:
            candidates[(table.schema, m.group(1))].append((m.group(2), table))
    in_family: dict[str, Family] = {}
    for (_, prefix), shards in candidates.items():
        if len(shards) < _MIN_MEMBERS:
            continue
        shards.sort(key=lambda s: (len(s[0]), s[0]))
        representative = shards[-1][1]
        rep_cols = _top_columns(representative)
        members = [(s, t) for s, t in shards if _overlap(_top_columns(t), rep_cols) >= _MIN_OVERLAP]
        if len(members) < _MIN_MEMBERS:
            continue
        head = representative.name[: len(representative.name) - len(representative.short_name)]
        family = Family(
            pattern=f"{head}{prefix}*",
            prefix=prefix,
            members=tuple(t.name for _, t in members),
            suffixes=tuple(s for s, _ in members),
            representative=representative,
        )
        for _, t in members:
            in_family[t.name] = family
    units: list[Unit] = []
    emitted: set[str] = set()
    for table in tables:
        found = in_family.get(table.name)
        if found is None:
            units.append(Unit(table))
        elif found.pattern not in emitted:
            emitted.add(found.pattern)
            units.append(Unit(found.representative, found))
    return tuple(units)


def _top_columns(table: TableInfo) -> frozenset[str]:
    return frozenset(c.name.lower() for c in table.columns if c.depth == 0 and ":" not in c.name)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
