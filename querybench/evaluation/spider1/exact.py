"""Spider 1.0 exact set match (EM) and its partial component scores, as the official
`evaluation.py` (`--etype match`) computes them, re-implemented on `spider1_sql`'s structure.

Before comparing, both parses are rebuilt as the official script rebuilds them: every
condition value that is not a subquery becomes None (values do not count), a column that a
foreign key links to another is replaced by the lowest-numbered column of its key group (the
official `build_foreign_key_map`, whose groups are not merged when a key joins two of them),
and DISTINCT is dropped from SELECT and from every column. Subqueries inside conditions and in
FROM are left as parsed, and subqueries in FROM keep their values.

EM is 1 when every component's F1 is 1 and the FROM tables agree as a multiset; a prediction
the parser cannot read is scored as the official empty query. `--plug_value` and
`--keep_distinct` change only execution match, so nothing here depends on them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from querybench.errors import SqlParseError
from querybench.tasks.spider1_hardness import spider1_hardness
from querybench.tasks.spider1_sql import (
    EMPTY_SQL,
    WHERE_OPS,
    ColUnit,
    Condition,
    CondUnit,
    OrderBy,
    SelectClause,
    SpiderSchema,
    SpiderSql,
    Value,
    ValUnit,
    parse_spider_sql,
)

PARTIAL_TYPES = (
    "select",
    "select(no AGG)",
    "where",
    "where(no OP)",
    "group(no Having)",
    "group",
    "order",
    "and/or",
    "IUEN",
    "keywords",
)
LEVELS = ("easy", "medium", "hard", "extra", "all")
# The longest prediction parsed for EM, in characters: forty times Spider's longest gold (under
# 600). The parser costs tens of microseconds a character, more on a loaded machine, so one
# 16 MiB answer would hold the eval for minutes; a longer prediction cannot be the gold's
# structure in any honest form, and is scored as the official empty query, saying why.
MAX_PARSED_CHARS = 24_000
ForeignKeys = Mapping[str, str]  # "__table.column__" -> the column its key group maps it to


@dataclass(frozen=True)
class PartialScore:
    """One component: the official acc/rec/F1 (each 0 or 1) and the two unit counts."""

    acc: int
    rec: int
    f1: int
    label_total: int
    pred_total: int


@dataclass(frozen=True)
class ExactMatch:
    """One instance's EM with its components; `reason` says why the prediction did not parse."""

    score: int
    hardness: str
    partial: Mapping[str, PartialScore]
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"em": self.score, "hardness": self.hardness}
        out["partial"] = {k: vars(p) for k, p in self.partial.items()}
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class ExactMatchFailure:
    """No EM for an instance: its gold does not parse, or no schema names its database."""

    reason: str
    score: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"em": 0, "reason": self.reason}


def exact_match_from_json(data: Mapping[str, Any]) -> ExactMatch | ExactMatchFailure:
    """The inverse of either `to_json`."""
    if "hardness" not in data:
        return ExactMatchFailure(str(data["reason"]))
    partial = {
        str(k): PartialScore(**{f: int(n) for f, n in v.items()})
        for k, v in data["partial"].items()
    }
    return ExactMatch(int(data["em"]), str(data["hardness"]), partial, data.get("reason"))


def foreign_key_map(entry: Mapping[str, Any]) -> dict[str, str]:
    """A tables.json entry's foreign keys as the official `build_foreign_key_map` makes them."""
    names = entry["table_names_original"]
    columns = [
        f"__{names[t].lower()}.{c.lower()}__" if t >= 0 else "__all__"
        for t, c in entry["column_names_original"]
    ]
    groups: list[set[int]] = []
    for first, second in entry["foreign_keys"]:
        group = next((g for g in groups if first in g or second in g), None)
        if group is None:
            group = set()
            groups.append(group)
        group |= {first, second}
    out: dict[str, str] = {}
    for group in groups:
        ordered = sorted(group)
        out |= {columns[i]: columns[ordered[0]] for i in ordered}
    return out


def score_exact(
    schema: SpiderSchema, foreign_keys: ForeignKeys, gold_sql: str, pred_sql: str
) -> ExactMatch:
    """EM of one pair, the prediction read as the official script reads it ("value" -> "1");
    one past `MAX_PARSED_CHARS` is the empty query.

    `SqlParseError` when the gold itself does not parse (the official script stops there).
    """
    gold = parse_spider_sql(schema, gold_sql)
    hardness = spider1_hardness(gold.to_json())
    reason = None
    if len(pred_sql) > MAX_PARSED_CHARS:
        pred, reason = (
            EMPTY_SQL,
            (
                f"the prediction is {len(pred_sql):,} characters, past the exact-match bound of "
                f"{MAX_PARSED_CHARS:,}: not parsed, scored as the empty query"
            ),
        )
    else:
        try:
            pred = parse_spider_sql(schema, pred_sql.replace("value", "1"))
        except SqlParseError as exc:
            pred, reason = EMPTY_SQL, f"the official parser cannot read the prediction: {exc}"
    gold, pred = _rebuild(schema, foreign_keys, gold), _rebuild(schema, foreign_keys, pred)
    partial = partial_scores(pred, gold)
    return ExactMatch(exact_match(pred, gold, partial), hardness, partial, reason)


# --- The official rebuild: values masked, foreign keys mapped, DISTINCT dropped -------------


def _rebuild(schema: SpiderSchema, foreign_keys: ForeignKeys, sql: SpiderSql) -> SpiderSql:
    prefixes = {t.target[:-2] for t in sql.tables if isinstance(t.target, str)}
    by_prefix = schema.column_ids_by_prefix
    valid: set[str] = set().union(*(by_prefix.get(p, ()) for p in prefixes))
    return _rebuild_columns(_mask_values(sql), valid, foreign_keys)


def _mask_values(sql: SpiderSql) -> SpiderSql:
    def mask(value: Value) -> Value:
        return _mask_values(value) if isinstance(value, SpiderSql) else None

    def condition(cond: Condition) -> Condition:
        return tuple(
            u._replace(first=mask(u.first), second=mask(u.second)) if isinstance(u, CondUnit) else u
            for u in cond
        )

    return replace(
        sql,
        joins=condition(sql.joins),
        where=condition(sql.where),
        having=condition(sql.having),
        intersect=sql.intersect and _mask_values(sql.intersect),
        except_=sql.except_ and _mask_values(sql.except_),
        union=sql.union and _mask_values(sql.union),
    )


def _rebuild_columns(sql: SpiderSql, valid: set[str], foreign_keys: ForeignKeys) -> SpiderSql:
    def _mapped(column: str) -> str:
        return foreign_keys[column] if column in foreign_keys and column in valid else column

    def col(unit: ColUnit | None) -> ColUnit | None:
        return None if unit is None else ColUnit(unit.agg, _mapped(unit.column), None)

    def val(unit: ValUnit) -> ValUnit:
        left = col(unit.left)
        assert left is not None
        return ValUnit(unit.op, left, col(unit.right))

    def condition(cond: Condition) -> Condition:
        return tuple(u._replace(left=val(u.left)) if isinstance(u, CondUnit) else u for u in cond)

    order = sql.order_by
    return replace(
        sql,
        select=SelectClause(None, tuple((a, val(v)) for a, v in sql.select.items)),
        joins=condition(sql.joins),
        where=condition(sql.where),
        group_by=tuple(ColUnit(u.agg, _mapped(u.column), None) for u in sql.group_by),
        order_by=None if order is None else OrderBy(order.direction, tuple(map(val, order.items))),
        having=condition(sql.having),
        intersect=sql.intersect and _rebuild_columns(sql.intersect, valid, foreign_keys),
        except_=sql.except_ and _rebuild_columns(sql.except_, valid, foreign_keys),
        union=sql.union and _rebuild_columns(sql.union, valid, foreign_keys),
    )


# --- Components ---------------------------------------------------------------------------


def _scores(count: int, pred_total: int, label_total: int) -> PartialScore:
    ok = int(pred_total == label_total and count == pred_total)
    return PartialScore(ok, ok, ok, label_total, pred_total)


def _multiset_hits(pred: Sequence[Any], gold: Sequence[Any]) -> int:
    left = list(gold)
    hits = 0
    for unit in pred:
        if unit in left:
            hits += 1
            left.remove(unit)
    return hits


def _units(cond: Condition) -> list[CondUnit]:
    return [u for u in cond[::2] if isinstance(u, CondUnit)]


def _group_column(column: str) -> str:
    return column.split(".")[1] if "." in column else column


def _keywords(sql: SpiderSql) -> set[str]:
    words = {
        name
        for name, present in (
            ("where", sql.where),
            ("group", sql.group_by),
            ("having", sql.having),
            ("limit", sql.limit is not None),
            ("except", sql.except_ is not None),
            ("union", sql.union is not None),
            ("intersect", sql.intersect is not None),
        )
        if present
    }
    if sql.order_by is not None:
        words |= {sql.order_by.direction, "order"}
    conds = (sql.joins, sql.where, sql.having)
    if "or" in [w for c in conds for w in c[1::2]]:
        words.add("or")
    units = [u for c in conds for u in _units(c)]
    ops = {u.op for u in units}
    words |= {"not"} if any(u.negated for u in units) else set()
    words |= {"in"} if WHERE_OPS.index("in") in ops else set()
    words |= {"like"} if WHERE_OPS.index("like") in ops else set()
    return words


def partial_scores(pred: SpiderSql, gold: SpiderSql) -> dict[str, PartialScore]:
    """The official `eval_partial_match` of two rebuilt parses, component by component."""
    out: dict[str, PartialScore] = {}
    p_sel, g_sel = pred.select.items, gold.select.items
    out["select"] = _scores(_multiset_hits(p_sel, g_sel), len(p_sel), len(g_sel))
    hits = _multiset_hits([u[1] for u in p_sel], [u[1] for u in g_sel])
    out["select(no AGG)"] = _scores(hits, len(p_sel), len(g_sel))

    p_where, g_where = _units(pred.where), _units(gold.where)
    out["where"] = _scores(_multiset_hits(p_where, g_where), len(p_where), len(g_where))
    hits = _multiset_hits([u.left for u in p_where], [u.left for u in g_where])
    out["where(no OP)"] = _scores(hits, len(p_where), len(g_where))

    p_group = [_group_column(u.column) for u in pred.group_by]
    g_group = [_group_column(u.column) for u in gold.group_by]
    out["group(no Having)"] = _scores(_multiset_hits(p_group, g_group), len(p_group), len(g_group))
    p_total, g_total = int(bool(pred.group_by)), int(bool(gold.group_by))
    same = [u.column for u in pred.group_by] == [u.column for u in gold.group_by]
    hit = int(p_total == g_total == 1 and same and pred.having == gold.having)
    out["group"] = _scores(hit, p_total, g_total)

    p_total, g_total = int(pred.order_by is not None), int(gold.order_by is not None)
    hit = int(
        gold.order_by is not None
        and pred.order_by == gold.order_by
        and (pred.limit is None) == (gold.limit is None)
    )
    out["order"] = _scores(hit, p_total, g_total)

    # The official returns (1,1,1) on equal sets, else (|pred|, |gold|, 0) in the places of
    # (label_total, pred_total, count): the two counts are swapped, and kept so.
    p_ao, g_ao = set(pred.where[1::2]), set(gold.where[1::2])
    out["and/or"] = _scores(1, 1, 1) if p_ao == g_ao else _scores(0, len(g_ao), len(p_ao))

    label_total = pred_total = hit = 0
    for p_sub, g_sub in zip(pred.nested().values(), gold.nested().values(), strict=True):
        pred_total += p_sub is not None
        label_total += g_sub is not None
        if p_sub is not None and g_sub is not None:
            hit += exact_match(p_sub, g_sub, partial_scores(p_sub, g_sub))
    out["IUEN"] = _scores(hit, pred_total, label_total)

    p_words, g_words = _keywords(pred), _keywords(gold)
    out["keywords"] = _scores(len(p_words & g_words), len(p_words), len(g_words))
    return out


def exact_match(pred: SpiderSql, gold: SpiderSql, partial: Mapping[str, PartialScore]) -> int:
    """1 when every component's F1 is 1 and the FROM tables agree (as a multiset)."""
    if any(score.f1 != 1 for score in partial.values()):
        return 0
    if gold.tables:
        return int(Counter(gold.tables) == Counter(pred.tables))
    return 1
