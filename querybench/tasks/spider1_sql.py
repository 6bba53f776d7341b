"""Spider 1.0 exact match: SQL parsed into the official structure, re-implemented.

The official `process_sql.get_sql` walks the tokens (`spider1_tokens`) with a handful of
mutually recursive readers and builds the structure Spider ships as the "sql" field of its
dev.json. This module builds the same structure, as typed tuples (so equality, membership and
sorting behave as the official tuples and dicts do), with the official reading kept where it
surprises:

* FROM is read first, from the first `from` token on (a subquery in SELECT steals it);
* tables join only with `join`; `a, b` fails; an `AS` anywhere defines an alias, and an alias
  equal to a table name fails; a column alias (`count(*) AS n`) fails;
* every LIMIT is 1; a value that is neither a string, a number nor a subquery is read as the
  column at its start (`x = y + 1` compares with `y`);
* tokens after a complete query are ignored.

Anything the official parser raises on (an assertion, a missing key, an index past the end)
is `SqlParseError` here, with the official reason where it states one.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeAlias

from querybench.engines.registry import ENGINES
from querybench.errors import DataError, SqlParseError, SqlTokenError
from querybench.file_digests import refusal, regular_database
from querybench.tasks.spider1_tokens import tokenize_sql

CLAUSE_KEYWORDS = (
    "select",
    "from",
    "where",
    "group",
    "order",
    "limit",
    "intersect",
    "union",
    "except",
)
JOIN_KEYWORDS = ("join", "on", "as")
WHERE_OPS = ("not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is", "exists")
UNIT_OPS = ("none", "-", "+", "*", "/")
AGG_OPS = ("none", "max", "min", "count", "sum", "avg")
COND_OPS = ("and", "or")
SQL_OPS = ("intersect", "union", "except")
ORDER_OPS = ("desc", "asc")
_ENDS = (")", ";")


class ColUnit(NamedTuple):
    agg: int  # index in AGG_OPS
    column: str  # "__table.column__", "__all__" for *
    distinct: bool | None  # None once the official rebuild has dropped DISTINCT


class ValUnit(NamedTuple):
    op: int  # index in UNIT_OPS
    left: ColUnit
    right: ColUnit | None


Value: TypeAlias = "str | float | ColUnit | SpiderSql | None"


class CondUnit(NamedTuple):
    negated: bool
    op: int  # index in WHERE_OPS
    left: ValUnit
    first: Value
    second: Value  # BETWEEN's upper bound, else None


Condition = tuple[CondUnit | str, ...]  # units with "and"/"or" between them


class TableUnit(NamedTuple):
    kind: str  # "table_unit" or "sql"
    target: str | SpiderSql


class OrderBy(NamedTuple):
    direction: str  # the last asc/desc written, "asc" when none is
    items: tuple[ValUnit, ...]


class SelectClause(NamedTuple):
    distinct: bool | None
    items: tuple[tuple[int, ValUnit], ...]  # (agg index, value)


_NO_SELECT = SelectClause(False, ())


@dataclass(frozen=True)
class SpiderSql:
    """One parsed query; `order_by` None stands for the official empty list."""

    select: SelectClause = _NO_SELECT
    tables: tuple[TableUnit, ...] = ()
    joins: Condition = ()  # the ON conditions, joined by "and"
    where: Condition = ()
    group_by: tuple[ColUnit, ...] = ()
    having: Condition = ()
    order_by: OrderBy | None = None
    limit: int | None = None
    intersect: SpiderSql | None = None
    except_: SpiderSql | None = None
    union: SpiderSql | None = None

    def nested(self) -> dict[str, SpiderSql | None]:
        return {"intersect": self.intersect, "except": self.except_, "union": self.union}

    def to_json(self) -> dict[str, Any]:
        """The dev.json "sql" form (lists and dicts, as the official parser returns it)."""
        return {
            "select": [self.select.distinct, [[a, _plain(v)] for a, v in self.select.items]],
            "from": {
                "table_units": [[t.kind, _plain(t.target)] for t in self.tables],
                "conds": _plain(self.joins),
            },
            "where": _plain(self.where),
            "groupBy": _plain(self.group_by),
            "having": _plain(self.having),
            "orderBy": [] if self.order_by is None else _plain(self.order_by),
            "limit": self.limit,
            **{k: None if v is None else v.to_json() for k, v in self.nested().items()},
        }


def _plain(value: Any) -> Any:
    if isinstance(value, SpiderSql):
        return value.to_json()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


EMPTY_SQL = SpiderSql()  # what a prediction the parser cannot read is scored as


@dataclass(frozen=True)
class SpiderSchema:
    """Tables and their columns, lower-cased, as the official `Schema` maps them to ids."""

    tables: Mapping[str, tuple[str, ...]]
    ids: Mapping[str, str] = field(init=False, repr=False, compare=False)
    # "__table" -> the column ids whose text before the first "." is that (the official
    # `build_valid_col_units` matches a FROM table's id against exactly this)
    column_ids_by_prefix: Mapping[str, frozenset[str]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        ids = {"*": "__all__"}
        for table, columns in self.tables.items():
            ids |= {f"{table}.{c}": f"__{table}.{c}__" for c in columns}
        ids |= {table: f"__{table}__" for table in self.tables}
        object.__setattr__(self, "ids", ids)
        by_prefix: dict[str, set[str]] = {}
        for value in ids.values():
            if "." in value:
                by_prefix.setdefault(value[: value.index(".")], set()).add(value)
        frozen = {k: frozenset(v) for k, v in by_prefix.items()}
        object.__setattr__(self, "column_ids_by_prefix", frozen)

    @classmethod
    def of(cls, tables: Mapping[str, list[str] | tuple[str, ...]]) -> SpiderSchema:
        return cls({t.lower(): tuple(c.lower() for c in cols) for t, cols in tables.items()})

    @classmethod
    def from_sqlite(cls, path: Path) -> SpiderSchema:
        """Every table of the database file (`sqlite_sequence` too), opened read-only once it
        is a regular file (`regular_database`: a FIFO would hold the open for ever); else
        `DataError`."""
        try:
            regular_database(path, ENGINES["sqlite"].sidecars)
        except OSError as exc:
            raise DataError(f"cannot read the schema of {path}: {refusal(exc, path)}") from exc
        uri = f"file:{path.resolve()}?mode=ro"
        try:
            with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
                names = [
                    r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
                ]
                tables = {
                    str(n): [str(r[1]) for r in conn.execute(f'PRAGMA table_info("{n}")')]
                    for n in names
                }
        except sqlite3.Error as exc:
            raise DataError(f"cannot read the schema of {path}: {exc}") from exc
        return cls.of(tables)

    @classmethod
    def from_tables_json(cls, entry: Mapping[str, Any]) -> SpiderSchema:
        """A database's tables.json entry (its original names)."""
        tables: dict[str, list[str]] = {t: [] for t in entry["table_names_original"]}
        names = entry["table_names_original"]
        for table_index, column in entry["column_names_original"]:
            if table_index >= 0:
                tables[names[table_index]].append(column)
        return cls.of(tables)


def parse_spider_sql(schema: SpiderSchema, sql: str) -> SpiderSql:
    """The official parse of `sql`; `SqlParseError` where the official parser fails."""
    try:
        tokens = tokenize_sql(sql)
        parser = _Parser(tokens, schema, _aliases(schema, tokens))
        return parser.sql(0)[1]
    except SqlTokenError as exc:
        raise SqlParseError(str(exc)) from None
    except IndexError:
        raise SqlParseError("the query ends too early (index past the last token)") from None
    except KeyError as exc:
        raise SqlParseError(f"unknown table, alias or column {exc}") from None
    except ValueError as exc:
        raise SqlParseError(f"cannot read a token: {exc}") from None
    except RecursionError:
        raise SqlParseError("the query nests too deeply") from None


def _aliases(schema: SpiderSchema, tokens: list[str]) -> dict[str, str]:
    aliases = {}
    for i, tok in enumerate(tokens):
        if tok == "as":
            aliases[tokens[i + 1]] = tokens[i - 1]
    for table in schema.tables:
        if table in aliases:
            raise SqlParseError(f"Alias {table} has the same name in table")
        aliases[table] = table
    return aliases


def _check(condition: bool, reason: str) -> None:
    if not condition:
        raise SqlParseError(reason)


# Queries nested in one another (subqueries, set operations) past which a parse stops: Spider's
# golds nest at most 4 deep. A fixed bound, not the interpreter's recursion limit, so a verdict
# never depends on the stack the scorer runs on, and whatever parsed can be compared.
MAX_NESTING = 48


class _Parser:
    """The official readers, each from a token index to (next index, what it read)."""

    def __init__(self, toks: list[str], schema: SpiderSchema, aliases: dict[str, str]) -> None:
        self.toks = toks
        self.schema = schema
        self.aliases = aliases
        self.depth = 0

    def column(self, toks: list[str], i: int, tables: list[str] | None) -> tuple[int, str]:
        tok = toks[i]
        if tok == "*":
            return i + 1, self.schema.ids[tok]
        if "." in tok:
            parts = tok.split(".")
            if len(parts) != 2:
                raise ValueError(f"too many values to unpack in {tok!r}")
            alias, col = parts
            return i + 1, self.schema.ids[self.aliases[alias] + "." + col]
        _check(bool(tables), "Default tables should not be None or empty")
        for alias in tables or ():
            table = self.aliases[alias]
            if tok in self.schema.tables[table]:
                return i + 1, self.schema.ids[table + "." + tok]
        raise SqlParseError(f"Error col: {tok}")

    def col_unit(self, toks: list[str], i: int, tables: list[str] | None) -> tuple[int, ColUnit]:
        block = distinct = False
        if toks[i] == "(":
            block, i = True, i + 1
        if toks[i] in AGG_OPS:
            agg = AGG_OPS.index(toks[i])
            i += 1
            _check(i < len(toks) and toks[i] == "(", "expected ( after an aggregate")
            i += 1
            if toks[i] == "distinct":
                distinct, i = True, i + 1
            i, col = self.column(toks, i, tables)
            _check(i < len(toks) and toks[i] == ")", "expected ) after an aggregate")
            return i + 1, ColUnit(agg, col, distinct)
        if toks[i] == "distinct":
            distinct, i = True, i + 1
        i, col = self.column(toks, i, tables)
        if block:
            _check(toks[i] == ")", "expected )")
            i += 1
        return i, ColUnit(0, col, distinct)

    def val_unit(self, i: int, tables: list[str] | None) -> tuple[int, ValUnit]:
        toks = self.toks
        block = toks[i] == "("
        i += block
        i, left = self.col_unit(toks, i, tables)
        op, right = 0, None
        if i < len(toks) and toks[i] in UNIT_OPS:
            op = UNIT_OPS.index(toks[i])
            i, right = self.col_unit(toks, i + 1, tables)
        if block:
            _check(toks[i] == ")", "expected )")
            i += 1
        return i, ValUnit(op, left, right)

    def table_unit(self, i: int) -> tuple[int, str, str]:
        toks = self.toks
        key = self.aliases[toks[i]]
        i += 3 if i + 1 < len(toks) and toks[i + 1] == "as" else 1
        return i, self.schema.ids[key], key

    def value(self, i: int, tables: list[str]) -> tuple[int, Value]:
        toks, start = self.toks, i
        block = toks[i] == "("
        i += block
        val: Value
        if toks[i] == "select":
            i, val = self.sql(i)
        elif '"' in toks[i]:
            val, i = toks[i], i + 1
        else:
            try:
                val, i = float(toks[i]), i + 1
            except ValueError:
                end = i
                while (
                    end < len(toks)
                    and toks[end] not in (",", ")", "and")
                    and toks[end] not in CLAUSE_KEYWORDS
                    and toks[end] not in JOIN_KEYWORDS
                ):
                    end += 1
                _, val = self.col_unit(toks[start:end], 0, tables)
                i = end
        if block:
            _check(toks[i] == ")", "expected ) after a value")
            i += 1
        return i, val

    def condition(self, i: int, tables: list[str]) -> tuple[int, Condition]:
        toks = self.toks
        conds: list[CondUnit | str] = []
        while i < len(toks):
            i, left = self.val_unit(i, tables)
            negated = toks[i] == "not"
            i += negated
            _check(
                i < len(toks) and toks[i] in WHERE_OPS,
                f"Error condition: idx: {i}, tok: {toks[i] if i < len(toks) else '(end)'}",
            )
            op = WHERE_OPS.index(toks[i])
            i, first = self.value(i + 1, tables)
            second: Value = None
            if op == WHERE_OPS.index("between"):
                _check(toks[i] == "and", "expected AND in BETWEEN")
                i, second = self.value(i + 1, tables)
            conds.append(CondUnit(negated, op, left, first, second))
            if i < len(toks) and (
                toks[i] in CLAUSE_KEYWORDS or toks[i] in _ENDS or toks[i] in JOIN_KEYWORDS
            ):
                break
            if i < len(toks) and toks[i] in COND_OPS:
                conds.append(toks[i])
                i += 1
        return i, tuple(conds)

    def select(self, i: int, tables: list[str]) -> tuple[int, SelectClause]:
        toks = self.toks
        _check(toks[i] == "select", "'select' not found")
        i += 1
        distinct = i < len(toks) and toks[i] == "distinct"
        i += distinct
        items = []
        while i < len(toks) and toks[i] not in CLAUSE_KEYWORDS:
            agg = 0
            if toks[i] in AGG_OPS:
                agg, i = AGG_OPS.index(toks[i]), i + 1
            i, val = self.val_unit(i, tables)
            items.append((agg, val))
            if i < len(toks) and toks[i] == ",":
                i += 1
        return i, SelectClause(distinct, tuple(items))

    def from_(self, start: int) -> tuple[int, list[TableUnit], Condition, list[str]]:
        toks = self.toks
        _check("from" in toks[start:], "'from' not found")
        i = toks.index("from", start) + 1
        tables: list[str] = []
        units: list[TableUnit] = []
        conds: list[CondUnit | str] = []
        while i < len(toks):
            block = toks[i] == "("
            i += block
            if toks[i] == "select":
                i, sub = self.sql(i)
                units.append(TableUnit("sql", sub))
            else:
                if i < len(toks) and toks[i] == "join":
                    i += 1
                i, table_id, name = self.table_unit(i)
                units.append(TableUnit("table_unit", table_id))
                tables.append(name)
            if i < len(toks) and toks[i] == "on":
                i, more = self.condition(i + 1, tables)
                if conds:
                    conds.append("and")
                conds.extend(more)
            if block:
                _check(toks[i] == ")", "expected ) after a FROM item")
                i += 1
            if i < len(toks) and (toks[i] in CLAUSE_KEYWORDS or toks[i] in _ENDS):
                break
        return i, units, tuple(conds), tables

    def clause_condition(self, i: int, word: str, tables: list[str]) -> tuple[int, Condition]:
        if i >= len(self.toks) or self.toks[i] != word:
            return i, ()
        return self.condition(i + 1, tables)

    def group_by(self, i: int, tables: list[str]) -> tuple[int, tuple[ColUnit, ...]]:
        toks = self.toks
        if i >= len(toks) or toks[i] != "group":
            return i, ()
        _check(toks[i + 1] == "by", "expected BY after GROUP")
        i += 2
        units = []
        while i < len(toks) and not (toks[i] in CLAUSE_KEYWORDS or toks[i] in _ENDS):
            i, unit = self.col_unit(toks, i, tables)
            units.append(unit)
            if not (i < len(toks) and toks[i] == ","):
                break
            i += 1
        return i, tuple(units)

    def order_by(self, i: int, tables: list[str]) -> tuple[int, OrderBy | None]:
        toks = self.toks
        if i >= len(toks) or toks[i] != "order":
            return i, None
        _check(toks[i + 1] == "by", "expected BY after ORDER")
        i += 2
        items, direction = [], "asc"
        while i < len(toks) and not (toks[i] in CLAUSE_KEYWORDS or toks[i] in _ENDS):
            i, unit = self.val_unit(i, tables)
            items.append(unit)
            if i < len(toks) and toks[i] in ORDER_OPS:
                direction, i = toks[i], i + 1
            if not (i < len(toks) and toks[i] == ","):
                break
            i += 1
        return i, OrderBy(direction, tuple(items))

    def limit(self, i: int) -> tuple[int, int | None]:
        if i < len(self.toks) and self.toks[i] == "limit":
            self.toks[i + 1]  # the official reads the value (a token is never an int: 1)
            return i + 2, 1
        return i, None

    def skip_semicolons(self, i: int) -> int:
        while i < len(self.toks) and self.toks[i] == ";":
            i += 1
        return i

    def sql(self, start: int) -> tuple[int, SpiderSql]:
        if self.depth >= MAX_NESTING:
            raise SqlParseError(f"the query nests past {MAX_NESTING} levels (not parsed)")
        self.depth += 1
        try:
            return self._sql(start)
        finally:
            self.depth -= 1

    def _sql(self, start: int) -> tuple[int, SpiderSql]:
        toks = self.toks
        block = toks[start] == "("
        from_end, units, joins, tables = self.from_(start)
        _, select = self.select(start + block, tables)
        i, where = self.clause_condition(from_end, "where", tables)
        i, group_by = self.group_by(i, tables)
        i, having = self.clause_condition(i, "having", tables)
        i, order_by = self.order_by(i, tables)
        i, limit = self.limit(i)
        i = self.skip_semicolons(i)
        if block:
            _check(toks[i] == ")", "expected ) closing a subquery")
            i += 1
        i = self.skip_semicolons(i)
        nested: dict[str, SpiderSql] = {}
        if i < len(toks) and toks[i] in SQL_OPS:
            op = toks[i]
            i, nested[op] = self.sql(i + 1)
        parsed = SpiderSql(
            select,
            tuple(units),
            joins,
            where,
            group_by,
            having,
            order_by,
            limit,
            nested.get("intersect"),
            nested.get("except"),
            nested.get("union"),
        )
        return i, parsed
