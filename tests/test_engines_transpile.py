"""Translating SQLite SQL to mean the same elsewhere (`engines.sqlite_rewrites`, `affinity`).

Two layers: the translations themselves (one line per rule), and the same queries run on each
engine against the same data, whose rows must equal SQLite's under the Spider 1.0 match.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from querybench.engines import connect
from querybench.engines.sqlite import SQLiteEngine
from querybench.engines.transpile import transpile
from querybench.evaluation.spider1.evaluate import spider1_result_match
from tests.server_databases import server_database

# Ids as TEXT in one table and INTEGER in the other, as in Spider's concert_singer.
SCHEMA = {
    "stadium": {"id": "BIGINT", "name": "TEXT", "capacity": "BIGINT"},
    "concert": {"stadium_id": "TEXT", "year": "TEXT", "mpg": "TEXT"},
}

TRANSLATIONS = [
    # (sqlite input, target, expected) — one line per rule.
    # A TEXT column against a number literal compares as text (the literal takes text affinity).
    ("SELECT 1 FROM concert WHERE year >= 2014", "postgres",
     """SELECT 1 FROM "concert" WHERE "year" >= '2014'"""),
    ("SELECT 1 FROM concert WHERE year IN (2014, 2015)", "clickhouse",
     """SELECT 1 FROM "concert" WHERE "year" IN ('2014', '2015')"""),
    # A TEXT column against an INTEGER column is read as a number (numeric affinity).
    ("SELECT 1 FROM concert AS c JOIN stadium AS s ON c.stadium_id = s.id", "duckdb",
     'SELECT 1 FROM "concert" AS c JOIN "stadium" AS s'
     ' ON TRY_CAST(c."stadium_id" AS DOUBLE) = s."id"'),
    ("SELECT 1 FROM stadium WHERE id IN (SELECT stadium_id FROM concert)", "duckdb",
     'SELECT 1 FROM "stadium" WHERE "id" IN'
     ' (SELECT TRY_CAST("stadium_id" AS DOUBLE) FROM "concert")'),
    # ClickHouse joins need both keys of one type.
    ("SELECT 1 FROM concert AS c JOIN stadium AS s ON c.stadium_id = s.id", "clickhouse",
     'SELECT 1 FROM "concert" AS c JOIN "stadium" AS s'
     ' ON toFloat64OrNull(c."stadium_id") = CAST(s."id" AS Nullable(Float64))'),
    # An INTEGER column against a numeric string literal: the literal becomes a number.
    ("SELECT 1 FROM stadium WHERE capacity > '100'", "postgres",
     'SELECT 1 FROM "stadium" WHERE "capacity" > 100'),
    # Same affinity on both sides: nothing to convert.
    ("SELECT 1 FROM concert WHERE year = stadium_id", "postgres",
     'SELECT 1 FROM "concert" WHERE "year" = "stadium_id"'),
    # avg() of text reads each value's numeric prefix, 0 when there is none.
    ("SELECT avg(mpg) FROM concert", "duckdb",
     'SELECT AVG(CASE WHEN NOT "mpg" IS NULL THEN COALESCE(TRY_CAST(REGEXP_EXTRACT("mpg", '
     "'^[[:space:]]*[-+]?(?:[0-9]+[.]?[0-9]*|[.][0-9]+)(?:[eE][-+]?[0-9]+)?') AS DOUBLE), 0) END)"
     ' FROM "concert"'),
    # LIKE ignores ASCII case in SQLite.
    ("SELECT 1 FROM stadium WHERE name LIKE 'a%'", "postgres",
     """SELECT 1 FROM "stadium" WHERE "name" ILIKE 'a%'"""),
    ("SELECT 1 FROM stadium WHERE name LIKE 'a%'", "mysql",
     "SELECT 1 FROM `stadium` WHERE LOWER(`name`) LIKE LOWER('a%')"),
    # A derived table needs no alias in SQLite.
    ("SELECT count(*) FROM (SELECT name FROM stadium)", "postgres",
     'SELECT COUNT(*) FROM (SELECT "name" FROM "stadium") AS derived_0'),
    # avg() is a double in SQLite, a 4-digit DECIMAL of integers in MySQL.
    ("SELECT avg(capacity) FROM stadium", "mysql",
     "SELECT AVG(CAST(`capacity` AS DOUBLE)) FROM `stadium`"),
    # Next to exactly one max()/min(), a bare column comes from that row.
    ("SELECT name, max(capacity) FROM stadium", "duckdb",
     'SELECT ARG_MAX("name", "capacity") AS "name", MAX("capacity") FROM "stadium"'),
    ("SELECT name, min(capacity) FROM stadium", "postgres",
     'SELECT (ARRAY_AGG("name" ORDER BY "capacity" ASC))[1] AS "name", MIN("capacity")'
     ' FROM "stadium"'),
    ("SELECT name, min(capacity), max(capacity) FROM stadium", "duckdb",
     'SELECT ANY_VALUE("name") AS "name", MIN("capacity"), MAX("capacity") FROM "stadium"'),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "target", "expected"), TRANSLATIONS)
def test_translation_keeps_sqlite_semantics(sql: str, target: str, expected: str) -> None:
    assert transpile(sql, "sqlite", target, schema=SCHEMA) == expected


# Tables as `db load` leaves them: the SQLite file's own spellings.
LOADED = {
    "Singer": {"Song_Name": "TEXT", "Age": "BIGINT"},
    "course": {"Course": "TEXT"},
    "show": {"Attendance": "BIGINT"},
}

NAMES = [
    # (sqlite input, target, expected): names resolve against the loaded tables ignoring case,
    # as in SQLite, and are quoted (as spelled; never read as a keyword), aliases are not.
    ("SELECT T1.song_name FROM singer AS T1 ORDER BY T1.SONG_NAME", "postgres",
     'SELECT t1."Song_Name" FROM "Singer" AS t1 ORDER BY t1."Song_Name" NULLS FIRST'),
    ("SELECT song_name FROM SINGER", "mysql", "SELECT `Song_Name` FROM `Singer`"),
    ("SELECT song_name FROM SINGER", "clickhouse", 'SELECT "Song_Name" FROM "Singer"'),
    ("SELECT avg(attendance) FROM SHOW", "duckdb", 'SELECT AVG("Attendance") FROM "show"'),
    # A table and a column of one name, spelled apart: each resolves in its own place.
    ("SELECT course FROM Course WHERE COURSE.course = 'x'", "postgres",
     """SELECT "Course" FROM "course" WHERE "course"."Course" = 'x'"""),
    # An output name keeps one spelling in its definition and its uses; unknown names lower-case.
    ("SELECT count(*) AS Cnt FROM singer GROUP BY age ORDER BY CNT", "clickhouse",
     'SELECT COUNT(*) AS cnt FROM "Singer" GROUP BY "Age" ORDER BY cnt NULLS FIRST'),
    # A double-quoted name that is no column stays the string SQLite reads it as.
    ('SELECT 1 FROM singer WHERE song_name = "Love"', "postgres",
     """SELECT 1 FROM "Singer" WHERE "Song_Name" = 'Love'"""),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "target", "expected"), NAMES)
def test_names_resolve_against_the_loaded_tables(sql: str, target: str, expected: str) -> None:
    assert transpile(sql, "sqlite", target, schema=LOADED) == expected


def test_without_a_schema_no_affinity_casts() -> None:
    sql = "SELECT 1 FROM concert WHERE year >= 2014"
    assert transpile(sql, "sqlite", "postgres") == sql


# Every query below gives a different answer (or an error) on some engine without the rules.
QUERIES = [
    "SELECT s.name FROM concert AS c JOIN stadium AS s ON c.stadium_id = s.id ORDER BY s.name",
    # (ClickHouse ignores a NULL in NOT IN's list, which SQL makes NULL: not tested here.)
    "SELECT name FROM stadium WHERE id NOT IN (SELECT stadium_id FROM concert WHERE year > 0)",
    "SELECT count(*) FROM concert WHERE year > 2013",
    "SELECT count(*) FROM concert WHERE mpg > 150",  # text order: '46' > '150'
    "SELECT avg(mpg) FROM concert",
    "SELECT avg(capacity) FROM stadium",
    "SELECT count(*) FROM stadium WHERE name LIKE 'WEMBLEY%'",
    "SELECT count(*) FROM stadium WHERE name = 'Alton'",  # stored as 'Alton '
    "SELECT count(*) FROM (SELECT name FROM stadium INTERSECT SELECT name FROM stadium)",
    "SELECT name, max(capacity) FROM stadium",
]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("affinity") / "affinity.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE stadium (id INTEGER, name TEXT, capacity INTEGER)")
        conn.execute("CREATE TABLE concert (stadium_id TEXT, year TEXT, mpg TEXT)")
        conn.executemany(
            "INSERT INTO stadium VALUES (?, ?, ?)",
            [(1, "Wembley", 90000), (2, "Alton ", 4000), (3, "Hampden", 51866)],
        )
        conn.executemany(
            "INSERT INTO concert VALUES (?, ?, ?)",
            [("1", "2014", "46"), ("1", "2015", "150"), ("2", "2013", "null"), (None, None, None)],
        )
    conn.close()
    return path


@pytest.fixture(params=["duckdb", "postgres", "mysql", "chdb"])
def target_url(request: pytest.FixtureRequest, source: Path, tmp_path: Path) -> Iterator[str]:
    if request.param == "duckdb":
        from querybench.engines.load import load

        url = f"duckdb://{tmp_path / 'affinity.duckdb'}"
        load(url, source)
        yield url
    else:
        with server_database(request.param, source, tmp_path) as url:
            yield url


def test_translated_queries_agree_with_sqlite(source: Path, target_url: str) -> None:
    with SQLiteEngine(source) as sqlite:
        gold = [sqlite.execute(sql).rows for sql in QUERIES]
    engine = connect(target_url)
    try:
        schema = {t.name: {c.name: c.type for c in t.columns} for t in engine.tables()}
        for sql, expected in zip(QUERIES, gold, strict=True):
            translated = transpile(sql, "sqlite", engine.dialect, schema=schema)
            rows = engine.execute(translated).rows
            assert spider1_result_match(expected, rows, "ORDER BY" in sql), (sql, translated, rows)
    finally:
        engine.close()
