"""`querybench db load|query|transpile`, run through the real command line on local files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from tests.test_engines_conformance import build_database

runner = CliRunner()


@pytest.fixture
def loaded(tmp_path: Path) -> str:
    source = build_database("sqlite", tmp_path / "src")
    target = f"duckdb://{tmp_path / 'out.duckdb'}"
    result = runner.invoke(app, ["db", "load", target, "--from", str(source)])
    assert result.exit_code == 0, result.output
    assert "singer\t3 rows\t4 columns" in result.output
    return target


def test_load_refuses_an_existing_table_unless_replace(loaded: str, tmp_path: Path) -> None:
    source = tmp_path / "src" / "music.sqlite"
    assert runner.invoke(app, ["db", "load", loaded, "--from", str(source)]).exit_code == 2
    again = runner.invoke(app, ["db", "load", loaded, "--from", str(source), "--replace"])
    assert again.exit_code == 0, again.output


def test_load_a_folder_of_csv_files(tmp_path: Path) -> None:
    folder = tmp_path / "csv"
    folder.mkdir()
    (folder / "people.csv").write_text("id,name\n1,Ann\n2,Bob\n")
    target = f"sqlite://{tmp_path / 'people.sqlite'}"
    assert runner.invoke(app, ["db", "load", target, "--from", str(folder)]).exit_code == 0
    out = runner.invoke(app, ["db", "query", target, "SELECT name FROM people ORDER BY id"])
    assert out.output.splitlines() == ["name", "Ann", "Bob"]


def test_query_csv_and_jsonl(loaded: str) -> None:
    out = runner.invoke(app, ["db", "query", loaded, "SELECT id, name FROM singer ORDER BY id"])
    assert out.exit_code == 0
    assert out.output.splitlines()[:2] == ["id,name", "1,Ann"]
    out = runner.invoke(app, ["db", "query", loaded, "SELECT id FROM singer", "--format", "jsonl"])
    assert json.loads(out.output.splitlines()[0]) == {"id": 1}


def test_query_file_prints_one_json_line_per_statement(loaded: str, tmp_path: Path) -> None:
    file = tmp_path / "q.sql"
    file.write_text(
        "SELECT IFNULL(score, 0) FROM singer WHERE id = 2\nDROP TABLE singer\nSELEC 1\n"
    )
    out = runner.invoke(app, ["db", "query", loaded, "--file", str(file), "--dialect", "sqlite"])
    assert out.exit_code == 0, out.output
    lines = [json.loads(line) for line in out.output.splitlines()]
    assert [line["index"] for line in lines] == [0, 1, 2]
    assert lines[0]["rows"] == [[0.0]] and lines[0]["error"] is None
    assert lines[1]["rows"] is None and lines[1]["error"].startswith("refused_write")
    assert lines[2]["error"] is not None


def test_write_is_refused_with_exit_code_2(loaded: str) -> None:
    out = runner.invoke(app, ["db", "query", loaded, "DELETE FROM singer"])
    assert out.exit_code == 2


def test_transpile_argument_and_stdin() -> None:
    out = runner.invoke(app, ["db", "transpile", "--from", "sqlite", "--to", "postgres",
                              "SELECT IFNULL(a, 0) FROM t"])  # fmt: skip
    assert out.output.strip() == "SELECT COALESCE(a, 0) FROM t"
    out = runner.invoke(
        app, ["db", "transpile", "--from", "mysql", "--to", "duckdb"], input="SELECT `a` FROM t\n"
    )
    assert out.output.strip() == 'SELECT "a" FROM t'


TRANSLATIONS = [
    # (sqlite input, target, expected) — one line per case.
    ("SELECT name, count(*) FROM t GROUP BY id", "postgres",
     'SELECT MIN(name) AS "name", COUNT(*) FROM t GROUP BY id'),
    ("SELECT name, max(age) FROM t", "clickhouse",
     'SELECT argMax(name, age) AS "name", MAX(age) FROM t'),
    ("SELECT name FROM t GROUP BY name", "duckdb", "SELECT name FROM t GROUP BY name"),
    ("SELECT count(*) FROM t WHERE c = \"Asia\"", "postgres",
     "SELECT COUNT(*) FROM t WHERE c = 'Asia'"),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "target", "expected"), TRANSLATIONS)
def test_translation_from_sqlite(sql: str, target: str, expected: str) -> None:
    from querybench.engines.transpile import transpile

    assert transpile(sql, "sqlite", target, columns=["name", "age", "id", "c"]) == expected


def test_lower_names_quotes_every_identifier() -> None:
    from querybench.engines.transpile import transpile

    out = transpile("SELECT T1.Name FROM City AS T1", "sqlite", "postgres", lower_names=True)
    assert out == 'SELECT "t1"."name" FROM "city" AS "t1"'
