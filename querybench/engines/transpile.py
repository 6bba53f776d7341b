"""Dialects through sqlglot: translating SQL between engines, and checking a read-only statement.

`read_only_statement` is the up-front check the server engines share: exactly one statement,
and that statement a query. It runs before the server's own guarantees (read-only transactions,
`readonly=1`), never instead of them; when sqlglot cannot parse a statement that still starts
like a query, the server decides.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.tokenizer_core import TokenType

from querybench.engines.base import Engine
from querybench.engines.registry import sqlglot_dialect
from querybench.engines.sqlite_rewrites import (
    STRICT_GROUPING,
    bare_columns_aggregated,
    sqlite_semantics,
)
from querybench.errors import SEVERAL_STATEMENTS, EngineError, QueryRefused

_QUERY_START = frozenset({TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN, TokenType.VALUES})
_FIRST_WORD_OF_QUERY = re.compile(r"(?is)\s*(select|with|values|\()")
_STATEMENT_VERBS = frozenset(
    {
        "ALTER", "ANALYZE", "ATTACH", "BEGIN", "CALL", "CHECKPOINT", "CLUSTER", "COMMENT",
        "COMMIT", "COPY", "CREATE", "DEALLOCATE", "DECLARE", "DELETE", "DETACH", "DISCARD", "DO",
        "DROP", "EXECUTE", "EXPORT", "FLUSH", "GRANT", "HANDLER", "IMPORT", "INSERT", "INSTALL",
        "KILL", "LISTEN", "LOAD", "LOCK", "MERGE", "NOTIFY", "OPTIMIZE", "PREPARE", "PRAGMA",
        "PURGE", "REASSIGN", "REFRESH", "REINDEX", "RENAME", "REPAIR", "REPLACE", "RESET",
        "REVOKE", "ROLLBACK", "SAVEPOINT", "SECURITY", "SET", "START", "SYSTEM", "TRUNCATE",
        "UNLISTEN", "UNLOCK", "UPDATE", "USE", "VACUUM", "XA",
    }
)  # fmt: skip
_WRITES = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter,
    exp.Command, exp.Set, exp.Into, exp.Copy,
)  # fmt: skip


def dialect_name(name: str) -> str:
    """The sqlglot dialect for `name` (an engine name, URL scheme, alias or sqlglot dialect,
    as `engines.registry` spells them); raises for unknown ones."""
    key = sqlglot_dialect(name)
    try:
        sqlglot.Dialect.get_or_raise(key)
    except ValueError as exc:
        raise EngineError(f"unknown SQL dialect {name!r}") from exc
    return key


def transpile(
    sql: str,
    source: str,
    target: str,
    *,
    pretty: bool = False,
    lower_names: bool = False,
    columns: Collection[str] | None = None,
    schema: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """`sql` (one statement) written in `target`'s dialect; unchanged when the dialects agree.

    `lower_names` lower-cases and quotes every identifier, for tables loaded with lower-case
    names (`engines.load`, `names="lower"`): SQLite and MySQL match names case-insensitively,
    PostgreSQL and ClickHouse do not. With `columns` (the database's column names) a
    double-quoted SQLite name that is no column becomes the string it is to SQLite. With
    `schema` (table -> column -> the target's column type) translating from SQLite also writes
    out SQLite's comparison conversions between text and numbers as casts (`engines.affinity`).
    """
    read, write = dialect_name(source), dialect_name(target)
    if read == write and not lower_names:
        return sql
    try:
        trees = sqlglot.parse(sql, read=read)
        if len(trees) != 1 or trees[0] is None:
            raise QueryRefused("only one statement per query is allowed", SEVERAL_STATEMENTS)
        tree = trees[0]
        if read == "sqlite" and write != "sqlite":
            tree = sqlite_semantics(tree, write, columns=columns, schema=schema)
        elif read == "mysql" and write in STRICT_GROUPING:
            tree = bare_columns_aggregated(tree, write, from_sqlite=False)
        resolve = schema is not None and read == "sqlite" and write != "sqlite"
        if lower_names or resolve:
            tree = normalize_identifiers(tree, dialect="sqlite")
        if resolve:
            assert schema is not None
            tree = catalogue_names(tree, schema)
        return tree.sql(dialect=write, pretty=pretty, identify=lower_names)
    except (ParseError, TokenError) as exc:
        raise EngineError(f"cannot translate from {read} to {write}: {exc}") from exc


def engine_schema(engine: Engine) -> dict[str, dict[str, str]]:
    """`engine`'s tables as `transpile(schema=...)` takes them: table -> column -> type, with
    the names spelled as the engine stores them. Read once per engine, not per query."""
    return {t.name: {c.name: c.type for c in t.columns} for t in engine.tables()}


# Identifiers naming a table (or a table's alias, a CTE) rather than a column or an output name.
_TABLE_SLOTS = ((exp.Table, "this"), (exp.Column, "table"), (exp.TableAlias, "this"))


def catalogue_names(tree: exp.Expr, schema: Mapping[str, Mapping[str, str]]) -> exp.Expr:
    """`tree`, its identifiers lower-cased, with each one naming a table or column of `schema`
    spelled as `schema` spells it and quoted: SQLite's case-insensitive match, on an engine that
    matches names exactly.

    A name spelled two ways in different tables (`Name`, `name`) cannot be told apart without
    resolving scopes and stays lower-case; an alias is lower-cased (or spelled as the column it
    shares a name with) in its definition and its uses alike.
    """
    tables = {t.lower(): t for t in schema}
    spellings: dict[str, set[str]] = {}
    for columns in schema.values():
        for column in columns:
            spellings.setdefault(column.lower(), set()).add(column)
    columns = {k: next(iter(v)) for k, v in spellings.items() if len(v) == 1}
    table_slots = {
        id(node.args[key])
        for kind, key in _TABLE_SLOTS
        for node in tree.find_all(kind)
        if isinstance(node.args.get(key), exp.Identifier)
    }
    for identifier in tree.find_all(exp.Identifier):
        names = tables if id(identifier) in table_slots else columns
        name = names.get(identifier.name)
        if name is not None:  # quoted: kept as spelled, and never read as a keyword (`show`)
            identifier.set("this", name)
            identifier.set("quoted", True)
    return tree


def read_only_statement(
    sql: str, dialect: str, *, refused_tokens: frozenset[str] = frozenset()
) -> str:
    """`sql` without trailing semicolons, after refusing anything but one query.

    `refused_tokens` are upper-case words refused anywhere outside strings and comments
    (ClickHouse's `SETTINGS`, MySQL's `OUTFILE`).
    """
    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
    except TokenError:
        tokens = None
    if tokens is None:
        body = sql.strip().rstrip(";").strip()
        if not body:
            raise EngineError("empty statement")
        if not _FIRST_WORD_OF_QUERY.match(body):
            raise QueryRefused("only queries (SELECT, WITH, VALUES) are allowed (read-only)")
        return body  # the server's own checks decide; each refuses a second statement
    groups: list[int] = []  # number of tokens per statement
    current = 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if current:
                groups.append(current)
            current = 0
        else:
            current += 1
            if token.text.upper() in refused_tokens and token.token_type not in (
                TokenType.STRING, TokenType.IDENTIFIER,
            ):  # fmt: skip
                kind = token.text.upper()
                raise QueryRefused(f"{kind} is not allowed (read-only)", kind)
    if current:
        groups.append(current)
    if not groups:
        raise EngineError("empty statement")
    if len(groups) > 1:
        raise QueryRefused("only one statement per query is allowed", SEVERAL_STATEMENTS)
    first = tokens[0]
    if first.token_type == TokenType.VAR and first.text.upper() not in _STATEMENT_VERBS:
        # Not a statement anywhere: a typo, refused by no rule, so the plain syntax error.
        raise EngineError(f"syntax error at or near {first.text!r}")
    if first.token_type not in _QUERY_START:
        kind = first.text.upper()
        raise QueryRefused(f"{kind} statements are not allowed (read-only)", kind)
    semicolons = [t for t in tokens if t.token_type == TokenType.SEMICOLON]
    statement = sql[: semicolons[0].start] if semicolons else sql
    try:
        tree = sqlglot.parse_one(statement, read=dialect)
    except (ParseError, TokenError):
        return statement
    for node in tree.walk():
        if isinstance(node, _WRITES):
            raise QueryRefused(f"{node.key.upper()} is not allowed (read-only)", node.key.upper())
    return statement
