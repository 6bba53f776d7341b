"""Spider 1.0's `--plug_value`: the prediction run again with the gold's values in its slots.

The official test-suite evaluation (`evaluation.py --plug_value`, for models that do not predict
values) scores a prediction 1 when the prediction itself, or any way of filling its value slots
with values taken from the gold query, gives the gold's rows on every database. Both queries are
read as that script reads them (after the DISTINCT and operator normalisation): sqlparse's
tokens, whitespace dropped and `T1.*` read as `*`, keywords upper-cased; then its quoted strings
(single or double quotes), the decimals and the integers not glued to a `T`/`t` are the values,
each a slot. The filled query is the script's: its words lower-cased and joined by spaces, the
values as written in the gold. Exact match does not use it (values are masked there anyway).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

_SLOT = "valuerare"  # what a value becomes in the word list (the official symbol, lower-cased)
_DECIMAL = re.compile(r"[-+]?\d*\.\d+")
_INTEGER = re.compile(r"[^tT]\d+")
_ALIAS_DOT = re.compile(r"[Tt]\d+\.")
_ALIAS_SPACE = re.compile(r"(T\d+\.)\s")
_ALIAS_STARS = ("t1.*", "t2.*", "t3.*", "T1.*", "T2.*", "T3.*")


@dataclass(frozen=True)
class ValueSlots:
    """A query as words with its values taken out: `words` hold `_SLOT` where each was."""

    words: tuple[str, ...]
    values: frozenset[str]

    @property
    def slots(self) -> int:
        return self.words.count(_SLOT)

    def filled(self, values: tuple[str, ...]) -> str:
        """The query with `values` in its slots, in order."""
        supply = iter(values)
        return " ".join(next(supply) if word == _SLOT else word for word in self.words)


def value_slots(sql: str) -> ValueSlots:
    """`sql`'s words and values, as the official value plugging reads a query."""
    import sqlparse
    from sqlparse import tokens as ttypes

    text = sql.strip().replace(";", "").replace("\t", "")
    statements = sqlparse.parse(text)
    if not statements:
        return ValueSlots((), frozenset())
    flat = statements[0].flatten()  # type: ignore[no-untyped-call]
    kept = (t.value for t in flat if t.ttype != ttypes.Whitespace)
    text = " ".join(kept)
    for star in _ALIAS_STARS:
        text = text.replace(star, "*")
    text = sqlparse.format(text, reindent=False, keyword_case="upper")
    text = _ALIAS_SPACE.sub(r"\1", text)

    quoted = [
        t.value
        for t in sqlparse.parse(text)[0].flatten()  # type: ignore[no-untyped-call]
        if t.ttype in (ttypes.Literal.String.Single, ttypes.Literal.String.Symbol)
    ]
    values = list(quoted)
    for value in quoted:
        text = text.replace(value.strip(), _SLOT.upper())
    words = text.split()
    decimals = set(_DECIMAL.findall(text))
    values += [w for w in words if w in decimals]
    words = [_SLOT.upper() if w in decimals else w for w in words]
    integers = {m.strip() for m in _INTEGER.findall(" ".join(words))}
    values += [w for w in words if w in integers]
    words = [_SLOT.upper() if w in integers else w for w in words]

    out: list[str] = []
    for word in words:
        if "." in word and _ALIAS_DOT.search(word):
            out += [part.lower() for part in word.replace(".", " . ").split()]
        elif word:
            out.append(word.lower())
    return ValueSlots(tuple(out), frozenset(values))


def plugged_predictions(gold_sql: str, pred_sql: str) -> Iterator[str]:
    """Every way of filling the prediction's slots with the gold's values (none when the gold
    has no values but the prediction has slots), each distinct query once."""
    gold, pred = value_slots(gold_sql), value_slots(pred_sql)
    if not pred.words:  # an empty prediction: nothing to plug into (the official one crashes)
        return
    seen: set[str] = set()
    for values in itertools.product(sorted(gold.values), repeat=pred.slots):
        query = pred.filled(values)
        if query not in seen:
            seen.add(query)
            yield query
