"""Row comparison that a result cannot make quadratic, with the plain comparison's verdicts.

Integers k * (2**61 - 1) all hash alike; a result of such rows used to make the BIRD and
Spider 1.0 set comparisons cost n**2 / 2 equality tests (a million rows: hours). The tests count
the equality tests made, on an `int` that counts them.
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal
from fractions import Fraction
from typing import Any
from uuid import UUID

import pytest

from querybench.evaluation.bird.evaluate import bird_result_match, bird_verdict
from querybench.evaluation.row_keys import CHECK_ABOVE, cell_key, crowded, hash_safe
from querybench.evaluation.spider1.evaluate import spider1_result_match

MODULUS = 2**61 - 1  # Python's hash of an int is the int modulo this
comparisons = 0


class CountingInt(int):
    """An int that counts how often it is compared for equality (hashing as an int)."""

    def __eq__(self, other: object) -> bool:
        global comparisons
        comparisons += 1
        return int(self) == other

    __hash__ = int.__hash__


def colliding(n: int, start: int = 1) -> list[tuple[Any, ...]]:
    return [(CountingInt(k * MODULUS),) for k in range(start, start + n)]


@pytest.fixture(autouse=True)
def _reset() -> None:
    global comparisons
    comparisons = 0


N = 3000  # unbounded, the comparisons below would be about N**2 / 2 = 4.5 million


def test_bird_match_of_colliding_rows_is_linear() -> None:
    gold = colliding(N)
    assert bird_result_match(gold, list(reversed(gold)))
    assert not bird_result_match(gold, colliding(N, start=2))
    assert comparisons < 20 * N


def test_bird_verdict_of_colliding_rows_is_linear() -> None:
    from querybench.engines.base import Result

    verdict = bird_verdict(Result(("a",), colliding(N)), Result(("a",), colliding(N, start=2)))
    assert not verdict.passed
    assert verdict.message == f"different row sets: gold {N} distinct rows, prediction {N}"
    assert comparisons < 20 * N


def test_spider1_match_of_colliding_rows_is_linear() -> None:
    gold = [(a, CountingInt(i)) for i, (a,) in enumerate(colliding(N))]
    swapped = [(b, a) for a, b in reversed(gold)]  # another column order, another row order
    assert spider1_result_match(gold, swapped, order_matters=False)
    assert not spider1_result_match(gold, [*swapped[1:], swapped[0][::-1]], order_matters=False)
    assert comparisons < 40 * N


def test_many_copies_of_one_row_are_not_crowded() -> None:
    # one hash shared by copies of one value costs nothing: no stand-ins then
    rows = [(1, "x")] * (CHECK_ABOVE * 4)
    assert not crowded(rows)
    assert hash_safe(rows, rows)[0] is rows
    assert crowded(colliding(CHECK_ABOVE + 1))


VALUES = [
    0,
    1,
    True,
    False,
    1.0,
    -0.0,
    0.1,
    0.5,
    Decimal("0.1"),
    Decimal("0.5"),
    Decimal("1.00"),
    Decimal("1e400"),
    Fraction(1, 2),
    float("inf"),
    Decimal("-Infinity"),
    float("-inf"),
    complex(1, 0),
    complex(1, 2),
    MODULUS,
    2 * MODULUS,
    "1",
    "",
    b"1",
    b"",
    None,
    UUID(int=MODULUS),
    UUID(int=2 * MODULUS),
]


def test_keys_are_equal_exactly_when_the_values_are() -> None:
    for a, b in itertools.product(VALUES, repeat=2):
        assert (a == b) == (cell_key(a) == cell_key(b)), (a, b)
        if a == b:
            assert hash(cell_key(a)) == hash(cell_key(b)), (a, b)


def test_nan_stays_unequal_to_another_nan() -> None:
    nan, other = float("nan"), float("nan")
    assert cell_key(nan) is nan and cell_key(nan) != cell_key(other)
    assert math.isnan(cell_key(Decimal("NaN")))
