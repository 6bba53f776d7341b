"""Row sets that no result can make quadratic to compare.

Python hashes an integer modulo 2**61 - 1, so the integers k * (2**61 - 1), and rows of them,
all share one hash; a `set` of n such rows costs about n**2 / 2 comparisons (a million rows:
hours). The official scripts compare rows with `set` and `Counter`, and so do the scorers here,
on the rows themselves while no hash is crowded, else on stand-ins: every cell replaced by a
`cell_key` that equals another exactly when the cells are equal (1 == 1.0 == True ==
Decimal(1), as Python compares them), hashed through the salted string hash, which no result
can steer. Verdicts stay those of the plain comparison; only its cost is bounded.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from decimal import Decimal
    from fractions import Fraction
    from uuid import UUID

Row = tuple[Any, ...]

# Below this many rows even the worst case is cheap (2,048 rows in one bucket: ~2M
# comparisons, tens of milliseconds); above it, a result is checked before it is compared.
CHECK_ABOVE = 2048
# More distinct values than this in one hash bucket and a result is compared through keys.
CROWDED = 64


@dataclass(frozen=True, slots=True)
class _Key:
    """A cell's stand-in: its kind ("n" for every number) and an exact text of its value."""

    kind: str
    text: str


@functools.cache
def _exact_types() -> tuple[type[Decimal], type[Fraction], type[UUID]]:
    """Imported at the first crowded result: `decimal`, `fractions` and `uuid` are 5 ms of
    every eval's start-up, and almost no result needs them."""
    from decimal import Decimal
    from fractions import Fraction
    from uuid import UUID

    return Decimal, Fraction, UUID


def cell_key(value: Any) -> Any:
    """A hashable stand-in for `value`, equal to another's exactly when the values are equal,
    whose hash a chosen value cannot steer. Text, bytes, NULL, NaN and dates stay themselves
    (their hashes are salted, or their own identity)."""
    if isinstance(value, int):  # bool too: True == 1
        return _Key("n", f"{value:x}/1")
    decimal, fraction, uuid = _exact_types()
    if isinstance(value, float | decimal | fraction):
        if isinstance(value, decimal) and not value.is_finite():
            if value.is_nan():  # equals nothing but itself, as the cell itself does
                return value
            return _Key("n", "-inf" if value.is_signed() else "inf")
        if isinstance(value, float) and not math.isfinite(value):
            return value if math.isnan(value) else _Key("n", "inf" if value > 0 else "-inf")
        numerator, denominator = value.as_integer_ratio()
        return _Key("n", f"{numerator:x}/{denominator:x}")
    if isinstance(value, complex):
        if value.imag == 0:
            return cell_key(value.real)
        return _Key("complex", f"{cell_key(value.real)}|{cell_key(value.imag)}")
    if isinstance(value, uuid):  # hashed as its 128-bit integer
        return _Key("uuid", value.hex)
    return value


def keyed_rows(rows: Iterable[Row]) -> list[Row]:
    return [tuple(map(cell_key, row)) for row in rows]


def crowded(values: Sequence[Hashable]) -> bool:
    """Whether more than `CROWDED` distinct values share one hash (a set of them would be
    quadratic); a hash shared by many copies of one value is not crowded."""
    if len(values) <= CHECK_ABOVE:
        return False
    counts = Counter(map(hash, values))
    full = {h for h, n in counts.items() if n > CROWDED}
    if not full:
        return False
    distinct: dict[int, set[Hashable]] = {h: set() for h in full}
    for value in values:
        same = distinct.get(hash(value))
        if same is not None:
            same.add(value)  # at most CROWDED + 1 entries to compare against
            if len(same) > CROWDED:
                return True
    return False


def hash_safe(
    gold: Sequence[Row], pred: Sequence[Row], *, columns: bool = False
) -> tuple[Sequence[Row], Sequence[Row]]:
    """The two results as they are, or both through `keyed_rows` when either has a crowded
    hash among its rows (or, with `columns`, among the cells of one of its columns)."""
    for rows in (gold, pred):
        if crowded(rows) or (
            columns and len(rows) > CHECK_ABOVE and any(map(crowded, zip(*rows, strict=True)))
        ):
            return keyed_rows(gold), keyed_rows(pred)
    return gold, pred
