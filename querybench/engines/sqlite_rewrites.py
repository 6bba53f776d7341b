"""Rewrites that keep SQLite's meaning when SQLite SQL is translated for another engine.

sqlglot translates syntax; these passes translate semantics SQLite documents and the stricter
engines do not share. Each is a general rule of SQLite's, never a fix for one query:

* a double-quoted name that is no column is a string (`"Aberdeen"`);
* LIKE ignores ASCII case;
* a derived table needs no alias;
* `avg()` is always a floating-point number;
* a selected column neither grouped nor aggregated comes from an arbitrary row of the group, or,
  next to exactly one `min()` / `max()`, from the row holding that minimum or maximum
  (https://sqlite.org/lang_select.html#bare_columns_in_an_aggregate_query);
* text and numbers are converted before comparing them (`engines.affinity`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError

from querybench.engines.affinity import column_affinity, sqlite_affinity_casts

# Engines that refuse a selected column neither grouped nor aggregated, which SQLite and MySQL
# (without ONLY_FULL_GROUP_BY) take from an arbitrary row of the group. PostgreSQL 15 has no
# any_value(), and min() is the same value whenever the column is constant within the group.
STRICT_GROUPING = {"postgres": exp.Min, "duckdb": exp.AnyValue, "clickhouse": exp.AnyValue}


def sqlite_semantics(
    tree: exp.Expr,
    write: str,
    *,
    columns: Collection[str] | None = None,
    schema: Mapping[str, Mapping[str, str]] | None = None,
) -> exp.Expr:
    """`tree`, parsed as SQLite, rewritten to mean the same on `write`.

    `columns` (or the columns of `schema`, table -> column -> the target's type) turn quoted
    non-columns into strings; `schema` also makes SQLite's text/number conversions explicit.
    """
    if schema is not None and columns is None:
        columns = [c for table in schema.values() for c in table]
    if columns is not None:
        tree = _quoted_strings(tree, {c.lower() for c in columns})
    tree = _case_insensitive_like(tree)
    tree = _aliased_derived_tables(tree)
    if schema is not None:
        tree = _affinity_casts(tree, schema, write)
    if write == "mysql":
        tree = _float_average(tree)
    if write in STRICT_GROUPING:
        tree = bare_columns_aggregated(tree, write, from_sqlite=True)
    return tree


def bare_columns_aggregated(tree: exp.Expr, write: str, *, from_sqlite: bool) -> exp.Expr:
    """Wrap each bare selected column of an aggregating SELECT in the engine's any-value.

    From SQLite, next to exactly one min()/max() the column instead comes from the row holding
    the minimum/maximum.
    """
    wrap = STRICT_GROUPING[write]
    for select in list(tree.find_all(exp.Select)):
        group = select.args.get("group")
        projections = select.expressions
        aggregating = group is not None or any(
            p.find(exp.AggFunc) for p in projections if not p.find(exp.Window)
        )
        if not aggregating or any(p.find(exp.Window) for p in projections):
            continue
        extremes = [a for p in projections for a in p.find_all(exp.Max, exp.Min)]
        extreme = extremes[0] if from_sqlite and len(extremes) == 1 else None
        grouped = [g for g in (group.expressions if group else [])]
        keys = {g.sql().lower() for g in grouped}
        names = {g.name.lower() for g in grouped if isinstance(g, exp.Column)}
        for projection in projections:
            inner = projection.this if isinstance(projection, exp.Alias) else projection
            if isinstance(inner, exp.Star) or inner.find(exp.AggFunc) or not inner.find(exp.Column):
                continue
            if inner.sql().lower() in keys:
                continue
            if isinstance(inner, exp.Column) and inner.name.lower() in names:
                continue
            if extreme is not None:
                wrapped = _value_at_extreme(inner.copy(), extreme, write)
            else:
                wrapped = wrap(this=inner.copy())
            if isinstance(projection, exp.Alias):
                projection.set("this", wrapped)
            else:
                alias = inner.name if isinstance(inner, exp.Column) else inner.sql()
                projection.replace(exp.alias_(wrapped, alias, quoted=True))
    return tree


def _value_at_extreme(value: exp.Expr, extreme: exp.Max | exp.Min, write: str) -> exp.Expr:
    """`value` from the row where `extreme`'s argument is largest (max) or smallest (min)."""
    key = extreme.this.copy()
    largest = isinstance(extreme, exp.Max)
    if write != "postgres":
        return (exp.ArgMax if largest else exp.ArgMin)(this=value, expression=key)
    # PostgreSQL 15 has no arg_max(): the first element of the values ordered by the key.
    template = sqlglot.parse_one(
        f"(ARRAY_AGG(v ORDER BY k {'DESC' if largest else 'ASC'} NULLS LAST))[1]", read="postgres"
    )
    template.find(exp.Order).this.replace(value)  # type: ignore[union-attr]
    template.find(exp.Ordered).this.replace(key)  # type: ignore[union-attr]
    return template


def _quoted_strings(tree: exp.Expr, columns: set[str]) -> exp.Expr:
    """SQLite reads `"x"` as the string 'x' when no column is named x."""

    def visit(node: exp.Expr) -> exp.Expr:
        if (
            isinstance(node, exp.Column)
            and not node.table
            and node.this.args.get("quoted")
            and node.name.lower() not in columns
        ):
            return exp.Literal.string(node.name)
        return node

    return tree.transform(visit)


def _case_insensitive_like(tree: exp.Expr) -> exp.Expr:
    """SQLite's LIKE ignores ASCII case; ILIKE (MySQL: LOWER() on both sides) does too."""
    for like in list(tree.find_all(exp.Like)):
        like.replace(exp.ILike(this=like.this, expression=like.expression))
    return tree


def _aliased_derived_tables(tree: exp.Expr) -> exp.Expr:
    """PostgreSQL 15 and MySQL need an alias on every subquery in FROM; SQLite does not."""
    for i, subquery in enumerate(list(tree.find_all(exp.Subquery))):
        if isinstance(subquery.parent, exp.From | exp.Join) and not subquery.alias:
            subquery.set("alias", exp.TableAlias(this=exp.to_identifier(f"derived_{i}")))
    return tree


def _float_average(tree: exp.Expr) -> exp.Expr:
    """MySQL's avg() of integers is a DECIMAL with 4 more digits; SQLite's is a double."""
    for average in list(tree.find_all(exp.Avg)):
        average.set("this", exp.cast(average.this.copy(), exp.DataType.build("double")))
    return tree


def _affinity_casts(
    tree: exp.Expr, schema: Mapping[str, Mapping[str, str]], write: str
) -> exp.Expr:
    affinities = {
        table: {name: a for name, t in cols.items() if (a := column_affinity(t)) is not None}
        for table, cols in schema.items()
    }
    try:
        return sqlite_affinity_casts(tree, affinities, write)
    except OptimizeError:  # a query sqlglot cannot scope is translated without the casts
        return tree
