from __future__ import annotations

import itertools
import json
import os
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from querybench.engines.base import Result
from querybench.errors import DataError, EngineError, ErrorCode, QueryTimeout
from querybench.evaluation.spider1.evaluate import (
    evaluate_spider1,
    prepare_spider1,
    remove_distinct,
    spider1_hardness,
    spider1_result_match,
    spider1_verdict,
)
from tests.conftest import require_data

Rows = list[tuple[Any, ...]]


@pytest.fixture(autouse=True)
def _private_result_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gold results are cached by default; keep this test's cache out of the home folder."""
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "default-cache"))


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
    # only the first statement survives, as with sqlparse.parse(sql)[0]
    ("SELECT DISTINCT a FROM t; DROP TABLE t", "SELECT  a FROM t;"),
    ("SELECT a FROM t WHERE b = ';' ; SELECT 2", "SELECT a FROM t WHERE b = ';' ;"),
    ("SELECT a FROM t -- ; \n; SELECT 2", "SELECT a FROM t -- ; \n;"),
    ("SELECT a FROM t;", "SELECT a FROM t;"),
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
    assert (wrong.score, wrong.error) == (0.0, ErrorCode.WRONG_RESULT)
    assert "shape" in (wrong.message or "")
    reordered = spider1_verdict(gold, _result([(2, "b"), (1, "a")]), order_matters=True)
    assert reordered.error == ErrorCode.WRONG_RESULT
    assert "order" in (reordered.message or "")
    timed_out = spider1_verdict(gold, QueryTimeout("ran past 1s"), order_matters=False)
    assert (timed_out.score, timed_out.error) == (0.0, ErrorCode.TIMEOUT)
    gold_failed = spider1_verdict(EngineError("no such table"), gold, order_matters=False)
    assert (gold_failed.score, gold_failed.error) == (0.0, ErrorCode.GOLD_ERROR)


# --- Hardness -------------------------------------------------------------------------------


def _parsed(**overrides: Any) -> dict[str, Any]:
    sql: dict[str, Any] = {
        "from": {"table_units": [["table_unit", 0]], "conds": []},
        "select": [False, [[0, [0, [0, 1, False], None]]]],
        "where": [],
        "groupBy": [],
        "having": [],
        "orderBy": [],
        "limit": None,
        "intersect": None,
        "union": None,
        "except": None,
    }
    sql.update(overrides)
    return sql


def test_hardness_levels() -> None:
    cond = [False, 2, [0, [0, 1, False], None], 1.0, None]
    assert spider1_hardness(_parsed()) == "easy"
    assert spider1_hardness(_parsed(where=[cond])) == "easy"
    two_cols = [False, [[0, [0, [0, 1, False], None]], [0, [0, [0, 2, False], None]]]]
    assert spider1_hardness(_parsed(where=[cond], select=two_cols)) == "medium"
    assert spider1_hardness(_parsed(union=_parsed())) == "hard"
    assert spider1_hardness(_parsed(union=_parsed(), where=[cond])) == "hard"
    assert spider1_hardness(_parsed(union=_parsed(), select=two_cols)) == "extra"


def test_hardness_of_spider_dev_matches_published_counts() -> None:
    entries = json.loads((require_data("spider1") / "dev.json").read_text(encoding="utf-8"))
    counts = Counter(spider1_hardness(e["sql"]) for e in entries)
    # The counts the official evaluation prints for Spider dev.
    assert counts == {"easy": 248, "medium": 446, "hard": 174, "extra": 166}


# --- evaluate_spider1 on tiny databases made here ------------------------------------------


def _make_db(path: Path, rows: list[tuple[int, str, int]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE singer (id INTEGER, name TEXT, age INTEGER)")
    con.executemany("INSERT INTO singer VALUES (?, ?, ?)", rows)
    con.commit()
    con.close()


SINGERS = [(1, "Ann", 30), (2, "Bob", 25), (3, "Cid", 41), (4, "Ann", 52)]


def _lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_evaluate_spider1_tiny(tmp_path: Path) -> None:
    _make_db(tmp_path / "db" / "music" / "music.sqlite", SINGERS)
    gold = _lines(
        tmp_path / "gold.sql",
        [
            "SELECT DISTINCT name FROM singer\tmusic",
            "SELECT name, age FROM singer ORDER BY age\tmusic",
            "SELECT name, age FROM singer ORDER BY age\tmusic",
            "SELECT count(*) FROM singer WHERE age > 30\tmusic",
            "SELECT count(*) FROM singer WHERE age > 30\tmusic",
            "SELECT name FROM singer\tnowhere",
            "SELECT nme FROM singer\tmusic",
            "SELECT name FROM singer\tmusic",
        ],
    )
    pred = _lines(
        tmp_path / "pred.sql",
        [
            "SELECT name FROM singer",  # DISTINCT is removed from both: the bags agree
            "SELECT age, name FROM singer ORDER BY age\textra fields ignored",
            "SELECT name, age FROM singer ORDER BY age DESC",
            "SELECT count(*) FROM singer WHERE age > value AND id > 0",  # " value " is " 1 "
            "SELECT count(*) FROM singer WHERE age > = 31",  # "> =" is mended
            "SELECT name FROM singer",
            "SELECT name FROM singer",
        ],
    )
    results = evaluate_spider1(pred, gold=gold, db_dir=tmp_path / "db", timeout=10, workers=2)
    assert [r.instance_id for r in results] == [str(i) for i in range(8)]
    assert [(r.score, r.error) for r in results] == [
        (1.0, None),
        (1.0, None),
        (0.0, ErrorCode.WRONG_RESULT),
        (0.0, ErrorCode.WRONG_RESULT),
        (1.0, None),
        (0.0, "engine_unavailable"),
        (0.0, ErrorCode.GOLD_ERROR),
        (0.0, "missing_prediction"),
    ]
    assert "nowhere" in (results[5].message or "")
    # the queries that ran are in the default cache: 3 distinct gold results, 5 distinct
    # prediction results, and the gold's deterministic failure (no such column)
    store = sqlite3.connect(tmp_path / "default-cache" / "results" / "outcomes.sqlite3")
    values = [bytes(v)[32:] for (v,) in store.execute("SELECT entry FROM sealed")]
    store.close()
    assert sum(v.startswith(b"querybench result cache") for v in values) == 8
    assert [v for v in values if v.startswith(b"querybench error cache")] == [
        b'querybench error cache v2\n{"class": "EngineError", "message": "no such column: nme"}'
    ]
    assert all(r.difficulty is None and r.engine == "sqlite" for r in results)


def test_prediction_failures(tmp_path: Path) -> None:
    _make_db(tmp_path / "db" / "music" / "music.sqlite", SINGERS)
    gold = _lines(tmp_path / "gold.sql", ["SELECT name FROM singer\tmusic"] * 4)
    slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    pred = _lines(tmp_path / "pred.sql", ["SELEC name FROM singer", "DROP TABLE singer", slow, ""])
    results = evaluate_spider1(pred, gold=gold, db_dir=tmp_path / "db", timeout=0.5, workers=2)
    assert [r.error for r in results] == [
        "exec_error",
        "refused_write",
        "timeout",
        "missing_prediction",
    ]
    assert all(r.score == 0.0 and r.message for r in results)


def test_test_suite_folders_compare_on_every_database(tmp_path: Path) -> None:
    # A test-suite folder holds variants of the database; a prediction must match on all.
    folder = tmp_path / "db" / "music"
    _make_db(folder / "music.sqlite", SINGERS)
    _make_db(folder / "music_variant.sqlite", [(1, "Ann", 29), (2, "Bob", 45)])
    gold = _lines(tmp_path / "gold.sql", ["SELECT name FROM singer WHERE age > 28\tmusic"] * 2)
    pred = _lines(
        tmp_path / "pred.sql",
        ["SELECT name FROM singer WHERE age >= 30", "SELECT name FROM singer WHERE age > 26"],
    )
    first, second = evaluate_spider1(pred, gold=gold, db_dir=tmp_path / "db", timeout=10, workers=2)
    assert (first.score, first.error) == (0.0, ErrorCode.WRONG_RESULT)
    assert "music_variant.sqlite" in (first.message or "")
    assert (second.score, second.error) == (1.0, None)


def test_bad_files(tmp_path: Path) -> None:
    _make_db(tmp_path / "db" / "music" / "music.sqlite", SINGERS)
    gold = _lines(tmp_path / "gold.sql", ["SELECT 1\tmusic"])
    with pytest.raises(DataError, match="2 prediction lines for 1 gold"):
        evaluate_spider1(
            _lines(tmp_path / "p.sql", ["SELECT 1", "SELECT 2"]), gold=gold, db_dir=tmp_path
        )
    with pytest.raises(DataError, match="cannot read the predictions file"):
        evaluate_spider1(tmp_path / "absent.sql", gold=gold, db_dir=tmp_path)
    with pytest.raises(DataError, match="expected 'SQL<TAB>db_id'"):
        evaluate_spider1(gold, gold=_lines(tmp_path / "g.sql", ["SELECT 1"]), db_dir=tmp_path)
    with pytest.raises(DataError, match="blank line"):
        evaluate_spider1(
            gold,
            gold=_lines(tmp_path / "g.sql", ["SELECT 1\tmusic", "", "SELECT 1\tmusic"]),
            db_dir=tmp_path,
        )
    os.mkfifo(tmp_path / "fifo.sql")  # an open that would never return
    with pytest.raises(DataError, match="is a FIFO"):
        evaluate_spider1(tmp_path / "fifo.sql", gold=gold, db_dir=tmp_path)
    with pytest.raises(DataError, match="is a character device"):
        # a read that would never end
        evaluate_spider1(Path("/dev/zero"), gold=gold, db_dir=tmp_path)


# --- The real Spider 1.0 dev databases -------------------------------------------------------


def _subset_files(tmp_path: Path, wrong: dict[int, str]) -> tuple[Path, Path, Path]:
    root = require_data("spider1")
    entries = json.loads((root / "dev_subset_available_dbs.json").read_text(encoding="utf-8"))
    gold = _lines(tmp_path / "gold.sql", [f"{e['query'].strip()}\t{e['db_id']}" for e in entries])
    pred = _lines(
        tmp_path / "pred.sql", [wrong.get(i, e["query"].strip()) for i, e in enumerate(entries)]
    )
    return gold, pred, root


@pytest.mark.slow
def test_gold_against_gold_on_all_available_dev_questions(tmp_path: Path) -> None:
    gold, pred, root = _subset_files(tmp_path, wrong={})
    results = evaluate_spider1(
        pred, gold=gold, db_dir=root, timeout=60, workers=4, cache_dir=tmp_path / "cache"
    )
    assert len(results) == 972
    failures = [r for r in results if r.score != 1.0]
    assert not failures, failures[:5]
    # a second run reads the gold results from the cache and scores the same
    again = evaluate_spider1(
        pred, gold=gold, db_dir=root, timeout=60, workers=4, cache_dir=tmp_path / "cache"
    )
    assert [r.score for r in again] == [1.0] * 972


def test_hand_made_wrong_predictions_on_dev(tmp_path: Path) -> None:
    root = require_data("spider1")
    entries = json.loads((root / "dev_subset_available_dbs.json").read_text(encoding="utf-8"))
    assert entries[2]["query"] == "SELECT name ,  country ,  age FROM singer ORDER BY age DESC"
    cases = {
        0: ("SELECT count(*) FROM stadium", ErrorCode.WRONG_RESULT),  # another number
        1: ("SELECT count(*) FROM singers", "exec_error"),  # no such table
        2: (
            "SELECT name, country, age FROM singer ORDER BY age ASC",
            ErrorCode.WRONG_RESULT,
        ),  # order
        3: (
            "SELECT name, country FROM singer ORDER BY age DESC",
            ErrorCode.WRONG_RESULT,
        ),  # a column less
    }
    gold, pred, _ = _subset_files(tmp_path, {i: sql for i, (sql, _) in cases.items()})
    lines = gold.read_text(encoding="utf-8").splitlines()[:10]
    pred_lines = pred.read_text(encoding="utf-8").splitlines()[:10]
    # column order is free; DISTINCT is dropped from gold and prediction alike
    pred_lines[4] = "SELECT max(age), avg(age), min(age) FROM singer WHERE country = 'France'"
    pred_lines[8] = "SELECT country FROM singer WHERE age > 20"
    results = evaluate_spider1(
        _lines(tmp_path / "p10.sql", pred_lines),
        gold=_lines(tmp_path / "g10.sql", lines),
        db_dir=root,
        timeout=30,
        workers=2,
        questions=None,
    )
    for i, (_, error) in cases.items():
        assert (results[i].score, results[i].error) == (0.0, error), results[i]
    assert entries[8]["query"] == "SELECT DISTINCT country FROM singer WHERE age  >  20"
    assert [r.score for r in results[4:]] == [1.0] * 6


def test_difficulty_from_dev_json(tmp_path: Path) -> None:
    root = require_data("spider1")
    gold = root / "dev_gold.sql"
    pred = _lines(tmp_path / "pred.sql", ["SELECT count(*) FROM singer"] * 3)
    results = evaluate_spider1(
        pred, gold=gold, db_dir=root, timeout=30, workers=2, questions=root / "dev.json"
    )
    assert len(results) == 1034
    assert Counter(r.difficulty for r in results) == {
        "easy": 248,
        "medium": 446,
        "hard": 174,
        "extra": 166,
    }
    assert [r.score for r in results[:3]] == [1.0, 1.0, 0.0]
    assert results[3].error == "missing_prediction"
    # the 1,031 lines past the file's end are not submitted, wta_1's (not shipped) included
    assert sum(r.error == "missing_prediction" for r in results) == 1031


def test_only_the_first_statement_runs(tmp_path: Path) -> None:
    # The official DISTINCT removal keeps sqlparse's first statement only, so the rest of a
    # multi-statement prediction is never executed (and never refused).
    _make_db(tmp_path / "db" / "music" / "music.sqlite", SINGERS)
    gold = _lines(tmp_path / "gold.sql", ["SELECT name FROM singer\tmusic"])
    pred = _lines(tmp_path / "pred.sql", ["SELECT name FROM singer; DROP TABLE singer"])
    (result,) = evaluate_spider1(pred, gold=gold, db_dir=tmp_path / "db", timeout=10, workers=1)
    assert (result.score, result.error) == (1.0, None)


def test_every_value_substring_becomes_1_officially_not_strictly(tmp_path: Path) -> None:
    path = tmp_path / "db" / "shop" / "shop.sqlite"
    path.parent.mkdir(parents=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (id INTEGER, value INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(1, 5), (2, 9)])
    con.commit()
    con.close()
    gold = _lines(
        tmp_path / "gold.sql",
        [
            "SELECT max(value) FROM t\tshop",
            "SELECT id FROM t WHERE id = 1\tshop",
            "SELECT id FROM t\tshop",
        ],
    )
    pred = _lines(
        tmp_path / "pred.sql",
        [
            "SELECT max(value) FROM t",  # officially max(1): 1, not 9
            "SELECT id FROM t WHERE id = value AND 1 = 1",  # the placeholder: 1 in both readings
            "SELECT id FROM t",
        ],
    )
    results = evaluate_spider1(pred, gold=gold, db_dir=tmp_path / "db", timeout=10, workers=1)
    got = [(r.score, r.official_score, r.strict_score) for r in results]
    assert got == [(0.0, 0.0, 1.0), (1.0, 1.0, 1.0), (1.0, 1.0, 1.0)]
    assert 'rewrote every "value"' in str(results[0].message)
    assert "passes" in str(results[0].message)
    assert prepare_spider1("SELECT 1", "SELECT value_id FROM t").pred_sql == "SELECT 1_id FROM t"
    strict = prepare_spider1("SELECT 1", "SELECT value_id FROM t", reading="strict")
    assert strict.pred_sql == "SELECT value_id FROM t"


def test_a_gold_database_id_that_is_a_path_opens_no_host_file(tmp_path: Path) -> None:
    """`SQL<TAB>db_id` becomes `<db-dir>/<db_id>/<db_id>.sqlite`: a db_id of `../../x` would
    open `x.sqlite` wherever it is (here, beside the database folder)."""
    _make_db(tmp_path / "outside.sqlite", SINGERS)
    (tmp_path / "outside").mkdir()  # `<db-dir>/../outside/../outside.sqlite` resolves
    (tmp_path / "db").mkdir()  # before: scored 1.0 on the outside file
    gold = _lines(tmp_path / "gold.sql", ["SELECT count(*) FROM singer\t../outside"])
    pred = _lines(tmp_path / "pred.sql", ["SELECT count(*) FROM singer"])
    with pytest.raises(DataError, match=r"gold\.sql:1: the database id '\.\./outside' is not"):
        evaluate_spider1(pred, gold=gold, db_dir=tmp_path / "db", timeout=10, workers=1)
