from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from querybench.engines.base import Result
from querybench.errors import EngineError, QueryTimeout
from querybench.evaluation.spider1 import (
    prepare_spider1,
    remove_distinct,
    spider1_result_match,
    spider1_verdict,
)
from querybench.evaluation.verdict import GOLD_ERROR, TIMEOUT, WRONG_RESULT

Rows = list[tuple[Any, ...]]

# (gold rows, predicted rows, order matters, expected match)
RESULT_CASES: list[tuple[Rows, Rows, bool, bool]] = [
    ([], [], False, True),
    ([], [], True, True),
    ([(1,)], [], False, False),
    ([], [(1,)], False, False),
    ([(1,)], [(1,)], False, True),
    ([(1,)], [(2,)], False, False),
    # columns may be permuted
    ([(1, "a"), (2, "b")], [("a", 1), ("b", 2)], False, True),
    ([(1, "a"), (2, "b")], [("a", 1), ("b", 2)], True, True),
    ([(1, 2, 3, 4, 5)], [(5, 4, 3, 2, 1)], False, True),
    # ... but each row with the same permutation
    ([(1, 2), (3, 4)], [(2, 1), (3, 4)], False, False),
    ([(1, 2), (2, 1)], [(2, 1), (1, 2)], False, True),
    # bag semantics: duplicates count
    ([(1,), (1,), (2,)], [(1,), (2,), (2,)], False, False),
    ([(1,), (1,), (2,)], [(2,), (1,), (1,)], False, True),
    ([(1,), (1,)], [(1,)], False, False),
    # order only when the gold has ORDER BY
    ([(1,), (2,)], [(2,), (1,)], False, True),
    ([(1,), (2,)], [(2,), (1,)], True, False),
    ([(1, "x"), (2, "y")], [("x", 1), ("y", 2)], True, True),
    ([(1, "x"), (2, "y")], [("y", 2), ("x", 1)], True, False),
    # different column counts
    ([(1, 2)], [(1,)], False, False),
    ([(1,)], [(1, 1)], False, False),
    # values compare as Python values: 1 == 1.0, None only equals None
    ([(1,)], [(1.0,)], False, True),
    ([(None,)], [(None,)], False, True),
    ([(None,)], [(0,)], False, False),
    ([("1",)], [(1,)], False, False),
    # the official row pre-check sorts cells by str(value) + type name, so 2 and 2.0 next to
    # "2/" sort apart and the pair is rejected although the rows are equal as tuples
    ([(2, "2/")], [(2.0, "2/")], False, False),
    # identical columns are interchangeable
    ([(1, 1, 2)], [(2, 1, 1)], False, True),
    ([(0, 0, 0, 0, 0, 0, 0, 0, 0, 1)], [(1, 0, 0, 0, 0, 0, 0, 0, 0, 0)], False, True),
]


@pytest.mark.parametrize(("gold", "pred", "order_matters", "expected"), RESULT_CASES)
def test_result_match(gold: Rows, pred: Rows, order_matters: bool, expected: bool) -> None:
    assert spider1_result_match(gold, pred, order_matters) is expected


def _brute_force_match(gold: Rows, pred: Rows, order_matters: bool) -> bool:
    """The official rule, stated plainly: try every column permutation of the prediction."""
    if not gold and not pred:
        return True
    if len(gold) != len(pred) or len(gold[0]) != len(pred[0]):
        return False

    def unordered(rows: Rows) -> list[tuple[Any, ...]]:
        return [tuple(sorted(r, key=lambda v: str(v) + str(type(v)))) for r in rows]

    ug, up = unordered(gold), unordered(pred)
    if (ug != up) if order_matters else (set(ug) != set(up)):
        return False
    for perm in itertools.permutations(range(len(gold[0]))):
        permuted = [tuple(row[j] for j in perm) for row in pred]
        if permuted == gold if order_matters else Counter(permuted) == Counter(gold):
            return True
    return False


_cell = st.one_of(st.integers(0, 2), st.sampled_from([None, 1.0, "a", "b"]))


@st.composite
def _result_pairs(draw: st.DrawFn) -> tuple[Rows, Rows]:
    width = draw(st.integers(1, 5))
    row = st.tuples(*[_cell] * width)
    gold = draw(st.lists(row, max_size=5))
    if draw(st.booleans()):
        # a shuffled, column-permuted copy, sometimes with one cell changed
        perm = draw(st.permutations(range(width)))
        pred = [tuple(r[j] for j in perm) for r in draw(st.permutations(gold))]
        if pred and draw(st.booleans()):
            i, j = draw(st.integers(0, len(pred) - 1)), draw(st.integers(0, width - 1))
            cells = list(pred[i])
            cells[j] = draw(_cell)
            pred[i] = tuple(cells)
    else:
        pred = draw(st.lists(row, max_size=5))
    return gold, pred


@settings(max_examples=400, deadline=None)
@given(_result_pairs(), st.booleans())
def test_result_match_agrees_with_brute_force(pair: tuple[Rows, Rows], order: bool) -> None:
    gold, pred = pair
    assert spider1_result_match(gold, pred, order) == _brute_force_match(gold, pred, order)


def test_many_identical_columns_stay_fast() -> None:
    rows = [tuple([0] * 12) for _ in range(50)]
    assert spider1_result_match(rows, rows, False)
    assert not spider1_result_match(rows, [*rows[:-1], tuple([0] * 11 + [1])], False)


DISTINCT_CASES = [
    ("SELECT DISTINCT name FROM t", "SELECT  name FROM t"),
    ("select distinct(name) from t", "select (name) from t"),
    ("SELECT count(DISTINCT x) FROM t", "SELECT count( x) FROM t"),
    (
        "SELECT Distinct a FROM t UNION SELECT DISTINCT b FROM u",
        "SELECT  a FROM t UNION SELECT  b FROM u",
    ),
    ("SELECT t.distinct FROM t", "SELECT t. FROM t"),
    # not the keyword: kept
    ("SELECT a FROM t WHERE b = 'distinct'", "SELECT a FROM t WHERE b = 'distinct'"),
    ('SELECT "distinct" FROM t', 'SELECT "distinct" FROM t'),
    ("SELECT `distinct` FROM t", "SELECT `distinct` FROM t"),
    ("SELECT [distinct] FROM t", "SELECT [distinct] FROM t"),
    ("SELECT distinct_count, indistinct FROM t", "SELECT distinct_count, indistinct FROM t"),
    ("SELECT a FROM t -- distinct\n", "SELECT a FROM t -- distinct\n"),
    ("SELECT a /* distinct */ FROM t", "SELECT a /* distinct */ FROM t"),
    ("SELECT a FROM t WHERE b = 'it''s distinct'", "SELECT a FROM t WHERE b = 'it''s distinct'"),
]


@pytest.mark.parametrize(("sql", "expected"), DISTINCT_CASES)
def test_remove_distinct(sql: str, expected: str) -> None:
    assert remove_distinct(sql) == expected


def test_prepare_normalises_both_queries() -> None:
    q = prepare_spider1(
        "SELECT DISTINCT a FROM t WHERE y > = YEAR(CURDATE()) - 1 ORDER BY a",
        "select distinct a from t where x = value and y < = 3",
    )
    assert q.gold_sql == "SELECT  a FROM t WHERE y >= 2020- 1 ORDER BY a"
    assert q.pred_sql == "select  a from t where x = 1 and y <= 3"
    assert q.order_matters


def test_order_matters_only_when_gold_says_order_by() -> None:
    assert not prepare_spider1("SELECT a FROM t", "SELECT a FROM t ORDER BY a").order_matters
    assert prepare_spider1("SELECT a FROM t order by a", "SELECT a FROM t").order_matters
    # the official test is a plain substring test on the gold text
    assert not prepare_spider1("SELECT a FROM t ORDER  BY a", "SELECT 1").order_matters


def test_keep_distinct() -> None:
    q = prepare_spider1("SELECT DISTINCT a FROM t", "SELECT a FROM t", keep_distinct=True)
    assert q.gold_sql == "SELECT DISTINCT a FROM t"


def _result(rows: Rows) -> Result:
    return Result(columns=tuple(f"c{i}" for i in range(len(rows[0]) if rows else 1)), rows=rows)


def test_verdicts() -> None:
    gold = _result([(1, "a"), (2, "b")])
    assert spider1_verdict(gold, _result([("b", 2), ("a", 1)]), order_matters=False).passed
    wrong = spider1_verdict(gold, _result([(1, "a")]), order_matters=False)
    assert (wrong.score, wrong.error) == (0.0, WRONG_RESULT)
    assert "shape" in (wrong.message or "")
    reordered = spider1_verdict(gold, _result([(2, "b"), (1, "a")]), order_matters=True)
    assert reordered.error == WRONG_RESULT
    assert "order" in (reordered.message or "")
    timed_out = spider1_verdict(gold, QueryTimeout("ran past 1s"), order_matters=False)
    assert (timed_out.score, timed_out.error) == (0.0, TIMEOUT)
    gold_failed = spider1_verdict(EngineError("no such table"), gold, order_matters=False)
    assert (gold_failed.score, gold_failed.error) == (0.0, GOLD_ERROR)
