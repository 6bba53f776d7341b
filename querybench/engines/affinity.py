"""SQLite's type affinity, made explicit when SQLite SQL is translated for a stricter engine.

SQLite compares a text column with a number by converting one side first
(https://sqlite.org/datatype3.html#type_conversions_prior_to_comparison): a column with
numeric affinity turns the other operand into a number when it looks like one; a text column
turns an operand without affinity (a literal, an expression) into text; otherwise nothing is
converted. PostgreSQL, DuckDB and ClickHouse refuse `text = bigint` instead, and MySQL converts
the other way (to numbers). Spider's databases declare ids and years as TEXT in one table and
INTEGER in another, so `transpile` writes SQLite's conversions out as casts, given the loaded
database's column types. `avg()` / `sum()` over text read each value's numeric prefix (0 when
it has none), as SQLite does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

TEXT, NUMERIC = "text", "numeric"
# A number as SQLite's numeric affinity accepts it (POSIX classes: PostgreSQL and MariaDB alike).
_NUMBER_PATTERN = r"^[[:space:]]*[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?[[:space:]]*$"
_NUMBER_PREFIX = r"^[[:space:]]*[-+]?(?:[0-9]+[.]?[0-9]*|[.][0-9]+)(?:[eE][-+]?[0-9]+)?"
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
_NUMBER_RESULTS = (exp.Count, exp.Sum, exp.Avg, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)
_TEXT_RESULTS = (exp.DPipe, exp.Concat, exp.Upper, exp.Lower, exp.Substring, exp.Trim)

Schema = Mapping[str, Mapping[str, str]]  # table -> column -> affinity (TEXT or NUMERIC)


def storage_value(value: Any) -> Any:
    """`value` as one of SQLite's storage classes would hold it (Decimal -> int or float,
    bool -> int, dates -> ISO text), so rows from any engine compare with SQLite's."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def column_affinity(engine_type: str) -> str | None:
    """TEXT or NUMERIC for an engine's column type name; None for anything else (bytes, dates)."""
    upper = engine_type.upper()
    if any(word in upper for word in ("CHAR", "TEXT", "STRING", "CLOB")):
        return TEXT
    if any(word in upper for word in ("INT", "FLOAT", "DOUBLE", "REAL", "DEC", "NUMERIC")):
        return None if "POINT" in upper or "INTERVAL" in upper else NUMERIC
    return None


def sqlite_affinity_casts(tree: exp.Expr, schema: Schema, write: str) -> exp.Expr:
    """`tree` (SQLite SQL) with SQLite's implicit comparison conversions written as casts."""
    schema = {t.lower(): {c.lower(): a for c, a in cols.items()} for t, cols in schema.items()}
    scopes = traverse_scope(tree)
    by_select = {id(scope.expression): scope for scope in scopes}
    for scope in scopes:
        typer = _Typer(scope, schema, by_select)
        for node in list(scope.find_all(*_COMPARISONS, exp.In, exp.Between, exp.Avg, exp.Sum)):
            if isinstance(node, exp.Avg | exp.Sum):
                if typer.kind(node.this)[1] == TEXT:
                    node.set("this", _number_or_zero(node.this, write))
            elif isinstance(node, exp.In):
                query = node.args.get("query")
                others = [query] if query is not None else list(node.expressions)
                for other in others:
                    _convert_pair(node, "this", other, typer, write)
            elif isinstance(node, exp.Between):
                for key in ("low", "high"):
                    _convert_pair(node, "this", node.args[key], typer, write)
            else:
                _convert_pair(node, "this", node.expression, typer, write)
    return tree


class _Typer:
    """(affinity, value type) of expressions within one scope; None where unknown."""

    def __init__(self, scope: Scope, schema: Schema, by_select: dict[int, Scope]) -> None:
        self.scope, self.schema, self.by_select = scope, schema, by_select

    def kind(self, node: exp.Expr) -> tuple[str | None, str | None]:
        if isinstance(node, exp.Paren):
            return self.kind(node.this)
        if isinstance(node, exp.Literal):
            return None, TEXT if node.is_string else NUMERIC
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
            return None, NUMERIC
        if isinstance(node, exp.Column):
            affinity = self.column(node, self.scope)
            return affinity, affinity
        if isinstance(node, exp.Cast):
            affinity = column_affinity(node.to.sql())
            return affinity, affinity
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
            inner = self.by_select.get(id(node.this))
            projections = node.this.expressions
            if inner is None or len(projections) != 1:
                return None, None
            projection = projections[0]
            if isinstance(projection, exp.Alias):
                projection = projection.this
            return _Typer(inner, self.schema, self.by_select).kind(projection)
        if isinstance(node, exp.Max | exp.Min):
            return None, self.kind(node.this)[1]
        if isinstance(node, _NUMBER_RESULTS):
            return None, NUMERIC
        if isinstance(node, _TEXT_RESULTS):
            return None, TEXT
        return None, None

    def column(self, column: exp.Column, scope: Scope | None) -> str | None:
        name = column.name.lower()
        while scope is not None:
            sources = {k.lower(): v for k, v in scope.sources.items()}
            candidates = [sources.get(column.table.lower())] if column.table else sources.values()
            for source in candidates:
                if isinstance(source, exp.Table):
                    affinity = self.schema.get(source.name.lower(), {}).get(name)
                    if affinity is not None:
                        return affinity
                elif isinstance(source, Scope) and isinstance(source.expression, exp.Select):
                    for projection in source.expression.expressions:
                        if projection.alias_or_name.lower() == name:
                            inner = _Typer(source, self.schema, self.by_select)
                            return inner.kind(projection.unalias())[0]
            scope = scope.parent  # a correlated column names an outer query's table
        return None


def _convert_pair(parent: exp.Expr, key: str, other: exp.Expr, typer: _Typer, write: str) -> None:
    """Convert `parent.args[key]` or `other` as SQLite does before comparing the two."""
    left = parent.args[key]
    left_affinity, left_type = typer.kind(left)
    right_affinity, right_type = typer.kind(other)
    if left_affinity == NUMERIC and right_type == TEXT and right_affinity != NUMERIC:
        _to_numbers(left, other, write)
    elif right_affinity == NUMERIC and left_type == TEXT and left_affinity != NUMERIC:
        _to_numbers(other, left, write)
    elif left_affinity == TEXT and right_affinity is None and right_type == NUMERIC:
        _convert(other, _to_text)
    elif right_affinity == TEXT and left_affinity is None and left_type == NUMERIC:
        _convert(left, _to_text)


def _to_numbers(number: exp.Expr, text: exp.Expr, write: str) -> None:
    """Read `text` as a number; ClickHouse also needs `number` as Float64 to join on the two."""
    _convert(text, lambda node: _to_number(node, write))
    if write == "clickhouse" and not isinstance(text, exp.Literal):
        _convert(number, lambda node: exp.cast(node.copy(), exp.DataType.build("double")))


def _convert(node: exp.Expr, conversion: Callable[[exp.Expr], exp.Expr]) -> None:
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
        # Convert the subquery's column, so `x IN (SELECT …)` keeps its form.
        projection = node.this.expressions[0]
        node = projection.this if isinstance(projection, exp.Alias) else projection
    node.replace(conversion(node))


def _to_text(node: exp.Expr) -> exp.Expr:
    """A number as SQLite's text affinity writes it (`2014` -> `'2014'`)."""
    if isinstance(node, exp.Literal):
        return exp.Literal.string(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return exp.Literal.string("-" + node.this.this)
    return exp.cast(node.copy(), exp.DataType.Type.TEXT)


def _to_number(node: exp.Expr, write: str) -> exp.Expr:
    """Text as SQLite's numeric affinity reads it: the number it spells, else NULL."""
    if isinstance(node, exp.Literal):
        text = node.this.strip()
        try:
            number = float(text)
        except ValueError:
            return node.copy()  # SQLite compares it as text; so will the engine, or refuse
        return exp.Literal.number(text if text.lstrip("-+").isdigit() else number)
    value = node.copy()
    double = exp.DataType.build("double")
    if write == "duckdb":
        return exp.TryCast(this=value, to=double)
    if write == "clickhouse":
        return exp.Anonymous(this="toFloat64OrNull", expressions=[value])
    pattern = exp.Literal.string(_NUMBER_PATTERN)
    looks: exp.Expr
    if write == "mysql":  # MariaDB has no REGEXP_LIKE, which sqlglot writes for MySQL
        instr = exp.Anonymous(this="REGEXP_INSTR", expressions=[value, pattern])
        looks = exp.GT(this=instr, expression=exp.Literal.number(0))
    else:
        looks = exp.RegexpLike(this=value, expression=pattern)
    return exp.Case(ifs=[exp.If(this=looks, true=exp.cast(value.copy(), double))])


def _number_or_zero(node: exp.Expr, write: str) -> exp.Expr:
    """Text as SQLite's avg()/sum() read it: its longest numeric prefix, else 0; NULL stays."""
    value = node.copy()
    double = exp.DataType.build("double")
    if write == "mysql":  # MySQL's CAST reads the numeric prefix itself
        return exp.cast(value, double)
    prefix = exp.Literal.string(_NUMBER_PREFIX)
    if write == "duckdb":
        number: exp.Expr = exp.TryCast(
            this=exp.Anonymous(this="REGEXP_EXTRACT", expressions=[value, prefix]), to=double
        )
    elif write == "clickhouse":
        extracted = exp.Anonymous(this="extract", expressions=[value, prefix])
        number = exp.Anonymous(this="toFloat64OrNull", expressions=[extracted])
    else:  # PostgreSQL's substring(text, pattern) is the match, or NULL
        number = exp.cast(exp.Anonymous(this="SUBSTRING", expressions=[value, prefix]), double)
    zero = exp.Coalesce(this=number, expressions=[exp.Literal.number(0)])
    present = exp.Not(this=exp.Is(this=node.copy(), expression=exp.Null()))
    return exp.Case(ifs=[exp.If(this=present, true=zero)])
