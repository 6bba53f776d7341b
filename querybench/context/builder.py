"""Assemble a prompt context within a token budget: schema entries ranked by relevance and
degraded gracefully, the task's document, and the dialect functions most relevant."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from querybench.context.documents import FunctionDoc, select_document, select_functions
from querybench.context.families import Unit, group_families
from querybench.context.rank import BM25, query_weights, terms
from querybench.context.render import LEVELS, header, other_tables, render_unit
from querybench.context.schema import DatabaseSchema
from querybench.context.tokens import count_tokens
from querybench.errors import BudgetTooSmall

DROPPED = len(LEVELS)
_DOC_SHARE = 0.3  # of the budget, at most, reserved for the task's document
_FUNCTION_SHARE = 0.08
_FUNCTIONS = 8
_SEP = 2  # tokens of the blank line between entries, counted generously

T = TypeVar("T")


@dataclass(frozen=True)
class FamilySummary:
    pattern: str
    members: int
    suffixes: str

    def to_json(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "members": self.members, "suffixes": self.suffixes}


@dataclass(frozen=True)
class Context:
    prompt: str
    tokens: int
    budget: int | None
    tables: tuple[str, ...]  # every table whose schema the prompt shows (family members too)
    families: tuple[FamilySummary, ...] = ()
    documents: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()
    levels: dict[str, int] = field(default_factory=dict)  # entry title -> detail level shown

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "tokens": self.tokens,
            "budget": self.budget,
            "tables": list(self.tables),
            "families": [f.to_json() for f in self.families],
            "documents": list(self.documents),
            "functions": list(self.functions),
        }


@dataclass(frozen=True)
class Document:
    name: str
    text: str


def assemble(
    schema: DatabaseSchema,
    question: str,
    budget: int | None = None,
    document: Document | None = None,
    functions: tuple[FunctionDoc, ...] = (),
) -> Context:
    weights = query_weights(question, document.text if document else "")
    units = rank_units(schema, weights)
    head = header(schema.db, schema.dialect, schema.schemas)
    fns = select_functions(functions, query_weights(question), _FUNCTIONS)
    if budget is None:
        doc_text = document.text if document else ""
        return _finish(
            schema, head, units, [0] * len(units), weights, doc_text, document, fns, None
        )
    head_cost = count_tokens(head) + _SEP
    if head_cost > budget:
        raise BudgetTooSmall(f"a budget of {budget} tokens cannot hold even the database header")
    fns = _fit_functions(fns, int(budget * _FUNCTION_SHARE))
    fn_cost = _functions_cost(schema.dialect, fns)
    doc_cost = 0
    if document is not None:
        doc_cost = min(count_tokens(document.text) + 20, int(budget * _DOC_SHARE))
    levels = choose_levels(schema, units, weights, budget - head_cost - fn_cost - doc_cost)
    schema_cost = sum(_cost(schema, units[i], lvl, weights) for i, lvl in enumerate(levels))
    doc_text = ""
    if document is not None:
        room = budget - head_cost - fn_cost - schema_cost - 20
        doc_text = select_document(document.text, weights, room)[0] if room > 0 else ""
    while True:
        ctx = _finish(schema, head, units, levels, weights, doc_text, document, fns, budget)
        if ctx.tokens <= budget:
            return ctx
        # Joining pieces can tokenise a little differently from their parts: shed the least
        # relevant entry, then functions, then the document, until the whole text fits.
        kept = [i for i, lvl in enumerate(levels) if lvl < DROPPED]
        if kept:
            levels[kept[-1]] = DROPPED
        elif fns:
            fns = fns[:-1]
        elif doc_text:
            doc_text = ""
        else:
            raise BudgetTooSmall(f"a budget of {budget} tokens cannot hold the context header")


def rank_units(schema: DatabaseSchema, weights: dict[str, float]) -> list[Unit]:
    """Tables and families, most relevant to the question first (BM25 over names, column names,
    descriptions and sampled values); ties keep the metadata order."""
    memo = schema._memo
    ranking = memo.get("ranking")
    if ranking is None:
        # Stored in one assignment: tasks on the same database build contexts concurrently.
        units = group_families(schema.tables)
        ranking = memo["ranking"] = (units, BM25([_unit_terms(u) for u in units]))
    units, index = ranking
    scores = index.scores(weights)
    order = sorted(range(len(units)), key=lambda i: (-scores[i], i))
    return [units[i] for i in order]


def _unit_terms(unit: Unit) -> list[str]:
    t = unit.table
    name = terms(unit.family.prefix if unit.family else t.short_name)
    out = name * 3 + terms(t.schema or "") + terms(t.description)
    for c in t.columns:
        out += terms(c.name) + terms(c.description)
    for row in t.sample_rows[:3]:
        for value in row.values():
            if isinstance(value, str) and len(value) < 80:
                out += terms(value)
    return out


def choose_levels(
    schema: DatabaseSchema, units: list[Unit], weights: dict[str, float], room: int
) -> list[int]:
    """Degrade the least relevant entries first, one level at a time across all entries (drop
    samples, then descriptions, then columns), and drop whole entries only after that."""
    levels = [0] * len(units)
    total = sum(_cost(schema, u, 0, weights) for u in units)
    for level in LEVELS[1:]:
        for i in reversed(range(len(units))):
            if total <= room:
                return levels
            total += _cost(schema, units[i], level, weights) - _cost(
                schema, units[i], levels[i], weights
            )
            levels[i] = level
    for i in reversed(range(len(units))):
        if total <= room:
            break
        total -= _cost(schema, units[i], levels[i], weights)
        levels[i] = DROPPED
    return levels


def _cost(schema: DatabaseSchema, unit: Unit, level: int, weights: dict[str, float]) -> int:
    if level >= DROPPED:
        return 0
    if level == LEVELS[-1]:  # depends on the question: not memoised
        return count_tokens(render_unit(unit, level, schema.dialect, weights)) + _SEP
    key = ("cost", unit.title, level)
    memo = schema._memo
    cost: int | None = memo.get(key)
    if cost is None:
        cost = memo[key] = count_tokens(render_unit(unit, level, schema.dialect)) + _SEP
    return cost


def _fit(items: list[T], cost: Callable[[T], int], used: int, room: int) -> list[T]:
    """The longest prefix of `items` whose costs, added to `used`, stay within `room`."""
    out: list[T] = []
    for item in items:
        used += cost(item)
        if used > room:
            break
        out.append(item)
    return out


def _fit_functions(fns: list[FunctionDoc], room: int) -> list[FunctionDoc]:
    return _fit(fns, lambda f: count_tokens(f.text) + 4, 10, room)


def _functions_cost(dialect: str, fns: list[FunctionDoc]) -> int:
    return count_tokens(_functions_text(dialect, fns)) + _SEP if fns else 0


def _functions_text(dialect: str, fns: list[FunctionDoc]) -> str:
    lines = [f"## {dialect} functions that may help"]
    lines += [f"- {f.name}: {f.text}" for f in fns]
    return "\n".join(lines)


def _finish(
    schema: DatabaseSchema,
    head: str,
    units: list[Unit],
    levels: list[int],
    weights: dict[str, float],
    doc_text: str,
    document: Document | None,
    fns: list[FunctionDoc],
    budget: int | None,
) -> Context:
    parts = [head]
    shown = [(u, lvl) for u, lvl in zip(units, levels, strict=True) if lvl < DROPPED]
    parts += [render_unit(u, lvl, schema.dialect, weights) for u, lvl in shown]
    dropped = [u for u, lvl in zip(units, levels, strict=True) if lvl >= DROPPED]
    if dropped and budget is not None:
        used = count_tokens("\n\n".join(parts))
        listing = _fit_listing(dropped, budget - used - _room_after(doc_text, fns, schema.dialect))
        if listing:
            parts.append(listing)
    if doc_text and document is not None:
        parts.append(f"## External knowledge: {document.name}\n{doc_text}")
    if fns:
        parts.append(_functions_text(schema.dialect, fns))
    prompt = "\n\n".join(parts)
    tables = tuple(name for u, _ in shown for name in u.covers)
    families = tuple(
        FamilySummary(u.family.pattern, len(u.family.members), u.family.suffix_range)
        for u, _ in shown
        if u.family
    )
    return Context(
        prompt=prompt,
        tokens=count_tokens(prompt),
        budget=budget,
        tables=tables,
        families=families,
        documents=(document.name,) if doc_text and document else (),
        functions=tuple(f.name for f in fns),
        levels={u.title: lvl for u, lvl in shown},
    )


def _room_after(doc_text: str, fns: list[FunctionDoc], dialect: str) -> int:
    n = count_tokens(doc_text) + 20 if doc_text else 0
    return n + _functions_cost(dialect, fns)


def _fit_listing(dropped: list[Unit], room: int) -> str:
    """Names of entries whose schema did not fit, as many as the room allows."""
    used = count_tokens(other_tables([])) + _SEP
    names = _fit(dropped, lambda u: count_tokens(u.title) + 1, used, room)
    return other_tables(names) if names else ""
