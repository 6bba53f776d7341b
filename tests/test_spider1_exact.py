"""Spider 1.0 exact match: the official tokenizer, parser and comparison rules, on cases built
here (each expectation follows from the rule its test names, not from a recorded output)."""

from __future__ import annotations

from typing import Any

import pytest

from querybench.errors import SqlParseError, SqlTokenError
from querybench.evaluation.spider1.exact import (
    MAX_PARSED_CHARS,
    PartialScore,
    foreign_key_map,
    score_exact,
)
from querybench.tasks.spider1_sql import (
    MAX_NESTING,
    ColUnit,
    CondUnit,
    SpiderSchema,
    TableUnit,
    ValUnit,
    parse_spider_sql,
)
from querybench.tasks.spider1_tokens import tokenize_sql

SCHEMA = SpiderSchema.of(
    {
        "singer": ["singer_id", "name", "age", "country", "value"],
        "concert": ["concert_id", "singer_id", "year", "name"],
        "stadium": ["stadium_id", "capacity"],
    }
)
TABLES_JSON = {
    "table_names_original": ["singer", "concert", "stadium"],
    "column_names_original": [
        [-1, "*"],
        [0, "Singer_ID"],
        [0, "Name"],
        [0, "Age"],
        [0, "Country"],
        [0, "value"],
        [1, "Concert_ID"],
        [1, "Singer_ID"],
        [1, "Year"],
        [1, "Name"],
        [2, "Stadium_ID"],
        [2, "Capacity"],
    ],
    "foreign_keys": [[7, 1]],
}
FKS = foreign_key_map(TABLES_JSON)


def em(gold: str, pred: str) -> int:
    return score_exact(SCHEMA, FKS, gold, pred).score


def partial(gold: str, pred: str, component: str) -> PartialScore:
    return score_exact(SCHEMA, FKS, gold, pred).partial[component]


# --- Tokens -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "tokens"),
    [
        (
            "SELECT name FROM t WHERE a >= 1",
            ["select", "name", "from", "t", "where", "a", ">=", "1"],
        ),
        ("SELECT a FROM t WHERE a != 1", ["select", "a", "from", "t", "where", "a", "!=", "1"]),
        ("WHERE a=1", ["where", "a=1"]),  # "=" is not a separator
        ("WHERE n = 'Bob'", ["where", "n", "=", '"Bob"']),  # quotes unified, case kept
        ("WHERE x IN (1,2)", ["where", "x", "in", "(", "1,2", ")"]),  # a comma before a digit
        ("SELECT a,b", ["select", "a", ",", "b"]),
        ("SELECT cannot", ["select", "can", "not"]),  # nltk's contraction rule
        ("SELECT count(*)", ["select", "count", "(", "*", ")"]),
        ("SELECT T1.* FROM t", ["select", "t1", ".", "*", "from", "t"]),  # Punkt: a sentence end
        ("SELECT st.* FROM t", ["select", "st.", "*", "from", "t"]),  # "st." is an abbreviation
        ("WHERE x = 3. and y", ["where", "x", "=", "3.", "and", "y"]),  # lower case next: no end
        ("WHERE x = 3. AND y", ["where", "x", "=", "3", ".", "and", "y"]),
        ("SELECT a FROM t.", ["select", "a", "from", "t", "."]),  # the final period
        # a run of backticks is spaced off, then each "``" in it once more
        ("SELECT ```a FROM t", ["select", "``", "`", "a", "from", "t"]),
        ("SELECT ````a FROM t", ["select", "``", "``", "a", "from", "t"]),
        ("SELECT `a` FROM t", ["select", "`", "a", "`", "from", "t"]),
        # the contraction rules run on Python's re (nltk compiles them so): a superscript is a
        # word character there and a combining mark is not
        ("SELECT cannot\u00b2 FROM t", ["select", "cannot\u00b2", "from", "t"]),
        ("SELECT a\u0301cannot FROM t", ["select", "a\u0301", "can", "not", "from", "t"]),
    ],
)
def test_tokens_follow_the_official_tokenizer(sql: str, tokens: list[str]) -> None:
    assert tokenize_sql(sql) == tokens


def test_an_odd_number_of_quotes_cannot_be_tokenized() -> None:
    with pytest.raises(SqlTokenError, match="Unexpected quote"):
        tokenize_sql('SELECT a FROM t WHERE n = "it\'s"')


# --- Parse ------------------------------------------------------------------------------------


def test_parse_builds_the_official_units() -> None:
    sql = parse_spider_sql(
        SCHEMA,
        "SELECT T1.name, count(*) FROM singer AS T1 JOIN concert AS T2 "
        "ON T1.singer_id = T2.singer_id WHERE T1.age > 20 GROUP BY T1.name LIMIT 5",
    )
    name = ColUnit(0, "__singer.name__", False)
    assert sql.select.items == (
        (0, ValUnit(0, name, None)),
        (3, ValUnit(0, ColUnit(0, "__all__", False), None)),
    )
    assert sql.tables == (
        TableUnit("table_unit", "__singer__"),
        TableUnit("table_unit", "__concert__"),
    )
    join = CondUnit(
        False, 2, ValUnit(0, ColUnit(0, "__singer.singer_id__", False), None),
        ColUnit(0, "__concert.singer_id__", False), None,
    )  # fmt: skip
    assert sql.joins == (join,)
    assert sql.where == (
        CondUnit(False, 3, ValUnit(0, ColUnit(0, "__singer.age__", False), None), 20.0, None),
    )
    assert sql.group_by == (name,)
    assert sql.limit == 1  # every LIMIT reads as 1


def test_a_value_that_is_an_expression_is_the_column_at_its_start() -> None:
    sql = parse_spider_sql(SCHEMA, "SELECT name FROM singer WHERE age > singer_id + 1")
    assert isinstance(sql.where[0], CondUnit)
    assert sql.where[0].first == ColUnit(0, "__singer.singer_id__", False)


def test_tokens_after_a_complete_query_are_ignored() -> None:
    plain = parse_spider_sql(SCHEMA, "SELECT name FROM singer ORDER BY age")
    assert parse_spider_sql(SCHEMA, "SELECT name FROM singer ORDER BY age whatever") == plain


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT name FROM singer, concert", "unknown table"),  # only JOIN joins
        ("SELECT count(*) AS n FROM singer", "Error col"),  # a column alias
        ("SELECT name FROM concert AS singer", "same name in table"),
        ("SELECT nickname FROM singer", "Error col: nickname"),
        ("SELECT name FROM singer LIMIT", "ends too early"),
        ("SELECT name", "'from' not found"),
        ("SELECT name FROM singer WHERE age=1", "Error col: age=1"),
    ],
)
def test_what_the_official_parser_cannot_read(sql: str, reason: str) -> None:
    with pytest.raises(SqlParseError, match=reason):
        parse_spider_sql(SCHEMA, sql)


def test_schema_from_tables_json_matches_its_original_names() -> None:
    schema = SpiderSchema.from_tables_json(TABLES_JSON)
    assert schema.tables["singer"] == ("singer_id", "name", "age", "country", "value")
    assert schema.ids["concert.year"] == "__concert.year__"
    assert schema.ids["stadium"] == "__stadium__"


# --- Exact match ------------------------------------------------------------------------------

GOLD = "SELECT name FROM singer WHERE country = 'France' ORDER BY age DESC LIMIT 3"


@pytest.mark.parametrize(
    "pred",
    [
        GOLD,
        "select NAME from SINGER where COUNTRY = 'Spain' order by AGE desc limit 1",  # values
        "SELECT DISTINCT name FROM singer WHERE country = 'France' ORDER BY age DESC LIMIT 3",
        "SELECT T9.name FROM singer AS T9 WHERE T9.country = 'x' ORDER BY T9.age DESC LIMIT 10",
    ],
)
def test_em_ignores_values_distinct_aliases_and_case(pred: str) -> None:
    assert em(GOLD, pred) == 1


W = "WHERE country = 'France'"


@pytest.mark.parametrize(
    ("pred", "failing"),
    [
        (f"SELECT age FROM singer {W} ORDER BY age DESC LIMIT 3", {"select"}),
        (f"SELECT name FROM singer {W} ORDER BY age ASC LIMIT 3", {"order", "keywords"}),
        (f"SELECT name FROM singer {W} ORDER BY age DESC", {"order", "keywords"}),
        ("SELECT name FROM singer WHERE country != 'x' ORDER BY age DESC LIMIT 3", {"where"}),
        ("SELECT name FROM singer ORDER BY age DESC LIMIT 3", {"where", "where(no OP)"}),
    ],
)
def test_em_fails_on_the_components_that_differ(pred: str, failing: set[str]) -> None:
    result = score_exact(SCHEMA, FKS, GOLD, pred)
    assert result.score == 0
    wrong = {k for k, p in result.partial.items() if p.f1 != 1}
    assert failing <= wrong
    if "select" in failing:
        assert wrong == {"select", "select(no AGG)"}


def test_select_without_agg_ignores_only_the_aggregate() -> None:
    assert partial("SELECT max(age) FROM singer", "SELECT min(age) FROM singer", "select").f1 == 0
    assert (
        partial("SELECT max(age) FROM singer", "SELECT min(age) FROM singer", "select(no AGG)").f1
        == 1
    )


def test_where_without_op_ignores_only_the_operator() -> None:
    gold, pred = "SELECT name FROM singer WHERE age > 3", "SELECT name FROM singer WHERE age < 3"
    assert partial(gold, pred, "where").f1 == 0
    assert partial(gold, pred, "where(no OP)").f1 == 1


def test_group_without_having_compares_column_names_only() -> None:
    join = "FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id"
    gold, pred = (
        f"SELECT count(*) {join} GROUP BY T1.name",
        f"SELECT count(*) {join} GROUP BY T2.name",
    )
    assert partial(gold, pred, "group(no Having)").f1 == 1  # "name" = "name"
    assert partial(gold, pred, "group").f1 == 0  # singer.name != concert.name


def test_foreign_key_columns_count_as_their_key() -> None:
    join = "FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id"
    assert em(f"SELECT T1.singer_id {join}", f"SELECT T2.singer_id {join}") == 1
    # Without the linked table in FROM the column is not mapped: concert alone differs.
    assert em("SELECT singer_id FROM singer", "SELECT singer_id FROM concert") == 0


def test_foreign_key_groups_are_not_merged_when_a_key_joins_two() -> None:
    entry = {
        "table_names_original": ["t"],
        "column_names_original": [[-1, "*"], [0, "a"], [0, "b"], [0, "c"], [0, "d"]],
        "foreign_keys": [[1, 2], [3, 4], [2, 3]],
    }
    # {1,2} then {3,4} then (2,3) joins the first group only: {1,2,3} and {3,4}; the later
    # group's mapping of column 3 wins.
    assert foreign_key_map(entry) == {
        "__t.a__": "__t.a__",
        "__t.b__": "__t.a__",
        "__t.c__": "__t.c__",
        "__t.d__": "__t.c__",
    }


def test_and_or_mismatch_keeps_the_official_swapped_totals() -> None:
    gold = "SELECT name FROM singer WHERE age > 1"
    both = partial(gold, "SELECT name FROM singer WHERE age > 1 AND age < 9", "and/or")
    # sets {} (gold) and {"and"} (prediction): label_total is the prediction's size.
    assert both == PartialScore(0, 0, 0, label_total=1, pred_total=0)
    assert partial(gold, gold, "and/or") == PartialScore(1, 1, 1, 1, 1)


def test_subqueries_in_from_keep_their_values() -> None:
    # (the outer query can name only *: a subquery gives FROM no table to find columns in)
    gold = "SELECT count(*) FROM (SELECT name FROM singer WHERE age > 30)"
    assert em(gold, "SELECT count(*) FROM (SELECT name FROM singer WHERE age > 30)") == 1
    assert em(gold, "SELECT count(*) FROM (SELECT name FROM singer WHERE age > 40)") == 0


def test_nested_set_operations_must_match_exactly() -> None:
    gold = "SELECT name FROM singer WHERE age > 1 INTERSECT SELECT name FROM singer WHERE age < 9"
    same = gold.replace("1", "5")
    assert em(gold, same) == 1
    assert partial(gold, gold.replace("INTERSECT", "UNION"), "IUEN").f1 == 0
    assert partial(gold, gold.replace("age < 9", "age > 9"), "IUEN").f1 == 0


def test_an_unparsable_prediction_scores_0_against_the_empty_query() -> None:
    result = score_exact(SCHEMA, FKS, "SELECT name FROM singer", "SELECT name FROM singer, concert")
    assert result.score == 0
    assert result.reason is not None and "cannot read the prediction" in result.reason
    assert result.partial["select"] == PartialScore(0, 0, 0, label_total=1, pred_total=0)
    assert result.partial["where"] == PartialScore(1, 1, 1, 0, 0)  # nothing against nothing


def test_every_value_in_the_prediction_becomes_1_before_parsing() -> None:
    # the column named "value" turns into the number 1, which is not a column
    result = score_exact(
        SCHEMA, FKS, "SELECT max(value) FROM singer", "SELECT max(value) FROM singer"
    )
    assert result.score == 0 and result.reason is not None


@pytest.mark.parametrize(
    ("sql", "level"),
    [
        ("SELECT count(*) FROM singer", "easy"),
        ("SELECT name, age FROM singer WHERE age > 3", "medium"),  # 2 columns + WHERE
        ("SELECT name FROM singer WHERE age > 1 INTERSECT SELECT name FROM singer", "hard"),
        ("SELECT name FROM singer WHERE age > 1 OR age < 3 ORDER BY age LIMIT 1", "extra"),
    ],
)
def test_hardness_follows_the_official_counts(sql: str, level: str) -> None:
    assert score_exact(SCHEMA, FKS, sql, sql).hardness == level


def test_a_gold_the_parser_cannot_read_is_an_error() -> None:
    with pytest.raises(SqlParseError):
        score_exact(SCHEMA, FKS, "SELECT nickname FROM singer", "SELECT name FROM singer")


@pytest.mark.parametrize(
    "tail",
    [
        " -- " + "y" * 1_000_000,  # one long comment
        " WHERE " + " AND ".join(["age = 1"] * 50_000),  # a long chain of conditions
    ],
)
def test_a_prediction_past_the_parse_bound_is_scored_empty_with_its_reason(tail: str) -> None:
    """The parser's cost grows with the text (seconds per 100 KB on a loaded machine), so a
    prediction a hundred times the longest gold is not parsed: it scores as the empty query,
    saying why, and costs nothing."""
    gold = "SELECT name FROM singer WHERE age = 1"
    result = score_exact(SCHEMA, FKS, gold, "SELECT name FROM singer" + tail)
    assert result.score == 0
    assert result.reason is not None and "exact-match bound" in result.reason, result.reason
    assert result.partial["select"].pred_total == 0  # the empty query's units
    # one just inside the bound is parsed as before
    inside = gold + " " * (MAX_PARSED_CHARS - len(gold))
    assert score_exact(SCHEMA, FKS, gold, inside).score == 1


@pytest.mark.parametrize(
    "nest",
    [
        lambda n: (
            "SELECT name FROM singer WHERE age IN "
            + "(SELECT age FROM singer WHERE age IN " * n
            + "(1)"
            + ")" * n
        ),
        lambda n: "SELECT * FROM " + "(SELECT * FROM " * n + "singer" + ")" * n,
        lambda n: " UNION ".join(["SELECT age FROM singer"] * n),
    ],
)
def test_a_prediction_nested_past_the_bound_is_unreadable_not_a_crash(nest: Any) -> None:
    """Subqueries nested deeper than any gold: the parse stops at a fixed depth, so the
    verdict does not depend on the stack the scorer runs on (a depth that parsed and then
    overflowed the comparison raised RecursionError out of the eval)."""
    gold = "SELECT name FROM singer"
    for depth in (MAX_NESTING + 1, 200):
        result = score_exact(SCHEMA, FKS, gold, nest(depth))
        assert result.score == 0
        assert result.reason is not None and "nests past" in result.reason, result.reason
    inside = nest(MAX_NESTING - 2)
    assert score_exact(SCHEMA, FKS, inside, inside).score == 1
