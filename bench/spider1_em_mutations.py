"""Near-miss predictions for the Spider 1.0 exact-match comparison: each gold query edited the
ways real predictions differ from it (a column, a condition, an operator, the order, the limit,
DISTINCT, the nesting, an aggregate), and the ways that stress the official tokenizer and
parser (spacing, quoting, case, aliases, punctuation, truncation).

The edits are textual and seeded, so a run is reproducible; an edit that does not apply to a
query (no WHERE to drop) is skipped for it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Sequence

Edit = Callable[[str, random.Random, Sequence[str]], str | None]


def _sub_once(pattern: str, repl: str, text: str, rng: random.Random) -> str | None:
    found = list(re.finditer(pattern, text, flags=re.IGNORECASE))
    if not found:
        return None
    m = rng.choice(found)
    return text[: m.start()] + m.expand(repl) + text[m.end() :]


def swap_column(sql: str, rng: random.Random, columns: Sequence[str]) -> str | None:
    words = [m for m in re.finditer(r"\b\w+\b", sql) if m.group().lower() in columns]
    if not words or len(columns) < 2:
        return None
    m = rng.choice(words)
    other = rng.choice([c for c in columns if c != m.group().lower()])
    return sql[: m.start()] + other + sql[m.end() :]


def drop_condition(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    return _sub_once(r"\s+(AND|OR)\s+[^()]+?(?=\s+(AND|OR|GROUP|ORDER|LIMIT)\b|\)|$)", "", sql, rng)


def drop_where(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    return _sub_once(
        r"\s+WHERE\s+.*?(?=\s+(GROUP|ORDER|LIMIT|INTERSECT|UNION|EXCEPT)\b|\)|$)", "", sql, rng
    )


_OPS = {"=": "!=", "!=": "=", ">": "<", "<": ">", ">=": "<=", "<=": ">=", "LIKE": "="}


def change_operator(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    found = list(re.finditer(r"(?<=\s)(!=|>=|<=|=|>|<|LIKE)(?=\s)", sql, flags=re.IGNORECASE))
    if not found:
        return None
    m = rng.choice(found)
    return sql[: m.start()] + _OPS[m.group().upper()] + sql[m.end() :]


def flip_order(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    if re.search(r"\bDESC\b", sql, re.IGNORECASE):
        return _sub_once(r"\bDESC\b", "ASC", sql, rng)
    if re.search(r"\bORDER\s+BY\b", sql, re.IGNORECASE):
        return _sub_once(r"(\bORDER\s+BY\s+\S+)", r"\1 DESC", sql, rng)
    return sql + " ORDER BY 1"


def change_limit(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    if re.search(r"\bLIMIT\s+\d+", sql, re.IGNORECASE):
        if rng.random() < 0.5:
            return _sub_once(r"\s+LIMIT\s+\d+", "", sql, rng)
        return _sub_once(r"(\bLIMIT\s+)\d+", r"\g<1>5", sql, rng)
    return sql + " LIMIT 1"


def toggle_distinct(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    if re.search(r"\bDISTINCT\b", sql, re.IGNORECASE):
        return _sub_once(r"\bDISTINCT\s+", "", sql, rng)
    return _sub_once(r"^(SELECT)\s+", r"\1 DISTINCT ", sql, rng)


def change_nesting(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    choices = [
        (r"\bNOT\s+IN\b", "IN"),
        (r"(?<!NOT )\bIN\s*\(", "NOT IN ("),
        (r"\bINTERSECT\b", "UNION"),
        (r"\bEXCEPT\b", "INTERSECT"),
        (r"\bUNION\b", "EXCEPT"),
    ]
    rng.shuffle(choices)
    for pattern, repl in choices:
        out = _sub_once(pattern, repl, sql, rng)
        if out is not None:
            return out
    return None


_AGGS = {"count": "sum", "sum": "avg", "avg": "max", "max": "min", "min": "max"}


def change_aggregate(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    found = list(re.finditer(r"\b(count|sum|avg|max|min)\s*\(", sql, re.IGNORECASE))
    found = [m for m in found if "*" not in sql[m.end() : m.end() + 2]]
    if not found:
        return None
    m = rng.choice(found)
    return sql[: m.start()] + _AGGS[m.group(1).lower()] + "(" + sql[m.end() :]


def swap_join(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    m = re.search(r"FROM\s+(\w+)\s+AS\s+(\w+)\s+JOIN\s+(\w+)\s+AS\s+(\w+)", sql, re.IGNORECASE)
    if not m:
        return None
    a, ta, b, tb = m.groups()
    return sql[: m.start()] + f"FROM {b} AS {tb} JOIN {a} AS {ta}" + sql[m.end() :]


def respace(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    forms = [
        lambda s: re.sub(r"\s*(=|>|<)\s*", r"\1", s),  # a=1 is one official token
        lambda s: re.sub(r"\s*,\s*", ",", s),
        lambda s: s.replace("(", " ( ").replace(")", " ) "),
        lambda s: re.sub(r"\s+", " ", s).strip() + " ;",
        lambda s: s.lower(),
        lambda s: s.upper(),
        lambda s: s.replace('"', "'"),
        lambda s: s.replace(">=", "> =").replace("<=", "< =").replace("!=", "! ="),
    ]
    return rng.choice(forms)(sql)


def alias_and_punctuation(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    forms = [
        lambda s: _sub_once(r"^(SELECT\s+(?:DISTINCT\s+)?)(\S+)", r"\1\2 AS result", s, rng),
        lambda s: _sub_once(r"\b(T\d)\.(\w)", r"\1. \2", s, rng),
        lambda s: _sub_once(r"\b(\d+)\b", r"\1.", s, rng),
        lambda s: _sub_once(r"^SELECT\s+\S+", "SELECT T1.*", s, rng),
        lambda s: _sub_once(
            r"\bFROM\s+(\w+)\s+AS\s+T1\s+JOIN\s+(\w+)\s+AS\s+T2\b",
            r"FROM \1 AS T1, \2 AS T2",
            s,
            rng,
        ),
        lambda s: _sub_once(r"\bFROM\s+(\w+)(?!\s+AS)", r"FROM \1 AS \1", s, rng),
        lambda s: s + " value",
        lambda s: s.replace("'", "''", 1) if "'" in s else s + " WHERE x = 'it''s'",
    ]
    return rng.choice(forms)(sql)


def truncate(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    words = sql.split()
    if len(words) < 3:
        return None
    return " ".join(words[: rng.randrange(1, len(words))])


def subquery(sql: str, rng: random.Random, _: Sequence[str]) -> str | None:
    m = re.match(r"SELECT\s+(.+?)\s+FROM\s+(\w+)(.*)$", sql, re.IGNORECASE | re.DOTALL)
    if not m or re.search(r"\bJOIN\b|\bAS\b", sql, re.IGNORECASE):
        return None
    cols, table, rest = m.groups()
    return f"SELECT {cols} FROM (SELECT * FROM {table}){rest}"


EDITS: tuple[Edit, ...] = (
    swap_column,
    drop_condition,
    drop_where,
    change_operator,
    flip_order,
    change_limit,
    toggle_distinct,
    change_nesting,
    change_aggregate,
    swap_join,
    respace,
    alias_and_punctuation,
    truncate,
    subquery,
)


def near_misses(
    sql: str, columns: Sequence[str], rng: random.Random, per_query: int
) -> Iterator[tuple[str, str]]:
    """(edit name, edited query) pairs; `per_query` edits drawn, two of them stacked."""
    edits = list(EDITS)
    rng.shuffle(edits)
    for edit in edits[:per_query]:
        out = edit(sql, rng, columns)
        if out is not None and out != sql:
            yield edit.__name__, out
    first, second = rng.sample(edits, 2)
    once = first(sql, rng, columns)
    twice = second(once, rng, columns) if once is not None else None
    if twice is not None and twice != sql:
        yield f"{first.__name__}+{second.__name__}", twice
