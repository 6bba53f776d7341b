"""Spider 1.0 hardness (easy / medium / hard / extra), as the official evaluation grades it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# --- Hardness, as the official `Evaluator.eval_hardness` grades the parsed gold SQL ----------
# It works on the parse that the official `process_sql.get_sql` produces, which Spider ships
# as the "sql" field of dev.json/train.json. The counts are kept as the official ones are,
# quirks included: HAVING's and/or words and WHERE's NOT flags count as aggregates.
_LIKE_OP = 9  # index of "like" in the official WHERE_OPS


def spider1_hardness(sql: Mapping[str, Any]) -> str:
    """easy / medium / hard / extra for one parsed Spider SQL (the "sql" field of dev.json)."""
    c1, c2, others = _component1(sql), _component2(sql), _others(sql)
    if c1 <= 1 and others == 0 and c2 == 0:
        return "easy"
    if (others <= 2 and c1 <= 1 and c2 == 0) or (c1 <= 2 and others < 2 and c2 == 0):
        return "medium"
    if (
        (others > 2 and c1 <= 2 and c2 == 0)
        or (2 < c1 <= 3 and others <= 2 and c2 == 0)
        or (c1 <= 1 and others == 0 and c2 <= 1)
    ):
        return "hard"
    return "extra"


def _condition_parts(sql: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    """(condition units, and/or words) of the FROM ... ON, WHERE and HAVING conditions."""
    conditions = (sql["from"]["conds"], sql["where"], sql["having"])
    return [u for c in conditions for u in c[::2]], [w for c in conditions for w in c[1::2]]


def _component1(sql: Mapping[str, Any]) -> int:
    units, words = _condition_parts(sql)
    count = sum(bool(sql[key]) for key in ("where", "groupBy", "orderBy"))
    count += sql["limit"] is not None
    count += max(len(sql["from"]["table_units"]) - 1, 0)
    count += words.count("or")
    return count + sum(1 for unit in units if unit[1] == _LIKE_OP)


def _component2(sql: Mapping[str, Any]) -> int:
    units, _ = _condition_parts(sql)
    nested = sum(isinstance(value, dict) for unit in units for value in (unit[3], unit[4]))
    return nested + sum(sql[key] is not None for key in ("intersect", "except", "union"))


def _others(sql: Mapping[str, Any]) -> int:
    def aggregates(units: Sequence[Any]) -> int:
        return sum(1 for unit in units if unit[0] != 0)

    order = sql["orderBy"][1] if sql["orderBy"] else []
    order_cols = [u[1] for u in order if u[1]] + [u[2] for u in order if u[2]]
    n_agg = aggregates(sql["select"][1]) + aggregates(sql["where"][::2])
    n_agg += aggregates(sql["groupBy"]) + aggregates(order_cols) + aggregates(sql["having"])
    return (
        (n_agg > 1)
        + (len(sql["select"][1]) > 1)
        + (len(sql["where"]) > 1)
        + (len(sql["groupBy"]) > 1)
    )
