"""The `functions` tag: a gold query calls a dialect function, not only the portable core.

The Spider 2.0 paper counts tasks that need SQL dialect functions (BigQuery's `DATE_DIFF`,
`UNNEST`, `ST_DISTANCE`, Snowflake's `FLATTEN`, SQLite's `strftime`...). Derived from the gold
SQL: any function called outside the small set every engine shares with the same meaning.
"""

from __future__ import annotations

import re

# Functions (and keywords that can precede a parenthesis) that mean the same on every engine.
_PORTABLE_NAMES = """
    abs avg cast coalesce count max min nullif round sum lower upper length trim ltrim rtrim
    replace substr substring concat row_number rank dense_rank ntile lag lead first_value
    last_value percent_rank cume_dist over partition filter within select from where join on
    using and or not in exists any all some as values with case when then else is like between
    union except intersect into table distinct group order by having limit rows range interval
    decimal numeric number varchar char character float integer int
"""
PORTABLE = frozenset(_PORTABLE_NAMES.split())

_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
_LITERAL = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`")
_CALL = re.compile(r"(?<![\w.$])([A-Za-z_][\w$.]*)\s*\(")


def called_functions(sql: str) -> set[str]:
    """Lower-case names of what the query calls (keywords before `(` included)."""
    text = _LITERAL.sub("''", _COMMENT.sub(" ", sql))
    return {name.lower() for name in _CALL.findall(text)}


def parsed_function_names(sql: str, engine: str) -> set[str] | None:
    """Upper-case names of the functions sqlglot finds in `sql` read in `engine`'s dialect
    (its canonical names; an unknown function as written; AND, OR and CASE, which sqlglot
    also models as functions, left out); None when sqlglot cannot parse it (its parser recurses:
    a query nested thousands deep is beyond it too)."""
    import sqlglot
    from sqlglot import exp

    from querybench.engines.registry import sqlglot_dialect

    try:
        trees = sqlglot.parse(sql, read=sqlglot_dialect(engine))
    except (sqlglot.errors.SqlglotError, RecursionError):
        return None
    names: set[str] = set()
    for tree in trees:
        if tree is None:
            continue
        for node in tree.find_all(exp.Func):
            if isinstance(node, (exp.Connector, exp.Case)):  # AND / OR / CASE: no call
                continue
            names.add(node.name.upper() if isinstance(node, exp.Anonymous) else node.sql_name())
    return names


def uses_dialect_functions(sql: str) -> bool:
    return bool(called_functions(sql) - PORTABLE)
