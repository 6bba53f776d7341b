"""Each engine classifies its failures by the driver's typed error where it is made (SQLite's
extended result code, DuckDB's exception class, PostgreSQL's SQLSTATE, MySQL's errno,
ClickHouse's code, Snowflake's errno), in one vocabulary, and the class survives the query
child's pipe and the result cache. Only SQLite's one SQLITE_ERROR (every SQL mistake) is
classified by its words."""

from __future__ import annotations

import pickle
import sqlite3
from pathlib import Path

import duckdb
import pytest

from querybench.engines import connect
from querybench.engines.cache_values import dump_error, load_outcome
from querybench.engines.pool import run_one
from querybench.errors import (
    AMBIGUOUS_COLUMN,
    CONVERSION_ERROR,
    MISUSE_OF_AGGREGATE,
    NO_SUCH_COLUMN,
    NO_SUCH_FUNCTION,
    NO_SUCH_TABLE,
    EngineError,
    EngineErrorClass,
    ErrorCode,
    QueryRefused,
    in_words,
)
from tests.server_databases import server_database

SCHEMA = (
    "CREATE TABLE t (a INTEGER, b TEXT); CREATE TABLE u (a INTEGER); INSERT INTO t VALUES (1, 'x');"
)

COLUMN = "SELECT zz FROM t"
TABLE = "SELECT * FROM nosuch"
SYNTAX = "SELECT FROM WHERE"
FUNCTION = "SELECT nosuchfn(a) FROM t"
AMBIGUOUS = "SELECT a FROM t, u"
AGGREGATE = "SELECT a FROM t WHERE sum(a) > 1"
CAST = "SELECT CAST('abc' AS INTEGER)"


def _executed(name: str) -> EngineErrorClass:
    return EngineErrorClass(ErrorCode.EXEC_ERROR, name)


PARSE = EngineErrorClass(ErrorCode.PARSE_ERROR, "syntax error")
SERVER_CLASSES = {
    COLUMN: _executed(NO_SUCH_COLUMN),
    TABLE: _executed(NO_SUCH_TABLE),
    SYNTAX: PARSE,
    FUNCTION: _executed(NO_SUCH_FUNCTION),
    AGGREGATE: _executed(MISUSE_OF_AGGREGATE),
}


@pytest.fixture(scope="module")
def sqlite_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("db") / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA)
    conn.close()
    return path


def _failure(target: str | Path, sql: str) -> EngineError:
    with connect(target) as engine, pytest.raises(EngineError) as info:
        engine.execute(sql, timeout=10)
    return info.value


def _given(target: str | Path, sql: str) -> EngineErrorClass | None:
    error = _failure(target, sql)
    assert error.error_class == error.given_class or error.given_class is None
    return error.given_class


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_server_errors_are_classed_by_their_code(
    kind: str, sqlite_file: Path, tmp_path: Path
) -> None:
    # PostgreSQL's SQLSTATE, MySQL's errno: the same names for the same mistakes
    with server_database(kind, sqlite_file, tmp_path) as url:
        for sql, expected in {**SERVER_CLASSES, AMBIGUOUS: _executed(AMBIGUOUS_COLUMN)}.items():
            assert _given(url, sql) == expected, sql
        if kind == "postgres":
            assert _given(url, CAST) == _executed(CONVERSION_ERROR)
            assert _given(url, "SELECT 1 / 0") == _executed("division by zero")  # its class


def test_chdb_errors_are_classed_by_their_code(sqlite_file: Path, tmp_path: Path) -> None:
    with server_database("chdb", sqlite_file, tmp_path) as url:
        for sql, expected in {**SERVER_CLASSES, CAST: _executed(CONVERSION_ERROR)}.items():
            assert _given(url, sql) == expected, sql
        # a code without a shared name: the name ClickHouse gives its code
        assert _given(url, "SELECT a + 'x' FROM t") == _executed("illegal type of argument")


@pytest.fixture(scope="module")
def duckdb_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("duck") / "t.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute(SCHEMA)
    conn.close()
    return path


def test_duckdb_errors_are_classed_by_their_exception_class(duckdb_file: Path) -> None:
    target = f"duckdb:///{duckdb_file}"
    assert _given(target, COLUMN) == _executed("binder error")
    assert _given(target, TABLE) == _executed("catalog error")
    assert _given(target, FUNCTION) == _executed("catalog error")
    assert _given(target, SYNTAX) == PARSE
    assert _given(target, CAST) == _executed(CONVERSION_ERROR)


def test_fakesnow_errors_are_classed_by_duckdbs_class_under_them(tmp_path: Path) -> None:
    from tests.test_engines_snowflake import build_emulation, write_snowflake_metadata

    out = tmp_path / "db" / "SHOP.duckdb"
    out.parent.mkdir()
    build_emulation(write_snowflake_metadata(tmp_path / "meta"), out, "snowflake")
    target = f"snowflake+local://{out}"
    assert _given(target, "SELECT zz FROM orders") == _executed("binder error")
    assert _given(target, "SELECT * FROM nosuch") == _executed("catalog error")
    assert _given(target, "SELECT FROM WHERE") == PARSE  # sqlglot's ParseError, before fakesnow


def test_snowflake_errnos_name_the_mistake() -> None:
    pytest.importorskip("snowflake.connector", reason="the snowflake extra is not installed")
    from snowflake.connector.errors import ProgrammingError

    from querybench.engines.snowflake import snowflake_error_class

    invalid = ProgrammingError(msg="SQL compilation error: invalid identifier 'ZZ'", errno=904)
    assert snowflake_error_class(invalid) == _executed(NO_SUCH_COLUMN)
    assert snowflake_error_class(ProgrammingError(msg="x", errno=1003)) == PARSE
    assert snowflake_error_class(ProgrammingError(msg="x", errno=12345)) is None  # its words


def test_sqlite_codes_decide_refusals_and_its_generic_error_falls_back_to_words(
    sqlite_file: Path,
) -> None:
    from querybench.engines.sqlite import SQLiteEngine

    error = _failure(sqlite_file, COLUMN)  # SQLITE_ERROR: one code for every SQL mistake
    assert error.given_class is None and error.error_class == _executed(NO_SUCH_COLUMN)
    conn = sqlite3.connect(f"file:{sqlite_file}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError) as info:
        conn.execute("INSERT INTO t VALUES (2, 'y')")
    conn.close()
    assert info.value.sqlite_errorname == "SQLITE_READONLY"
    with SQLiteEngine(sqlite_file) as engine:
        refused = engine._engine_error(info.value, None)
    assert isinstance(refused, QueryRefused)


def test_the_class_crosses_the_query_childs_pipe_and_the_cache(duckdb_file: Path) -> None:
    outcome = run_one(f"duckdb:///{duckdb_file}", CAST, timeout=10)
    assert isinstance(outcome.error, EngineError)
    assert outcome.error.given_class == _executed(CONVERSION_ERROR)
    typed = EngineError("Conversion Error: x", _executed(CONVERSION_ERROR))
    assert pickle.loads(pickle.dumps(typed)).given_class == typed.given_class
    stored = load_outcome(dump_error(typed))
    assert isinstance(stored, EngineError) and stored.error_class == typed.error_class
    # the words alone would call it otherwise: the class is what was stored, not re-read
    assert EngineError("Conversion Error: x").error_class == _executed(CONVERSION_ERROR)
    renamed = EngineError("Code: 6. Cannot parse string: syntax error", _executed(CONVERSION_ERROR))
    assert load_outcome(dump_error(renamed)).error_class == _executed(CONVERSION_ERROR)  # type: ignore[union-attr]
    assert EngineError(str(renamed)).error_class != renamed.error_class


def test_class_names_in_words() -> None:
    assert in_words("DivisionByZero") == "division by zero"
    assert in_words("ILLEGAL_TYPE_OF_ARGUMENT") == "illegal type of argument"
