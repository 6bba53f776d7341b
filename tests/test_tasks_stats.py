"""`tasks stats BENCH`: the paper's dataset statistics computed from task files, metadata and
gold; on a data root built here (every figure known by construction) and on the shared data
(the release's answer types and unrated tasks against the paper's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.report.dataset_stats import PUBLISHED, dataset_stats, formatted, reference_text
from querybench.tasks import load_tasks
from tests.conftest import require_data

# (instance id, db, gold SQL, official token count, external knowledge)
TASKS = [
    ("bq901", "cloudy", "SELECT DATE_DIFF(a, b, DAY), COUNT(*) FROM t GROUP BY 1", 40, "doc.md"),
    ("bq902", "cloudy", "SELECT SUM(x) FROM t WHERE a = 1 AND b = 2", 100, None),
    ("local901", "shop", "SELECT name FROM items", 200, None),
]
# cloudy: two schemas, three tables; 2 + 3 + 1 columns, two of them nested
DDL = {
    "ds_a": [
        ("t", "CREATE TABLE t (\n  a INT64,\n  b STRUCT<x INT64, y STRING>\n)"),
        ("u", "CREATE TABLE u (\n  k STRING,\n  v ARRAY<INT64>,\n  w FLOAT64\n)"),
    ],
    "ds_b": [("z", "CREATE TABLE z (\n  id INT64\n)")],
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return build_root(tmp_path)


def build_root(tmp_path: Path) -> Path:
    """A small Spider 2.0-Lite data root: three tasks, their gold and one database's DDL."""
    data = tmp_path / "data"
    lite = data / "spider2" / "spider2-lite"
    gold = lite / "evaluation_suite" / "gold"
    (gold / "sql").mkdir(parents=True)
    (gold / "exec_result").mkdir()
    tasks, specs = [], []
    for instance_id, db, sql, toks, knowledge in TASKS:
        tasks.append(
            {"instance_id": instance_id, "db": db, "question": "q", "external_knowledge": knowledge}
        )
        spec = {"instance_id": instance_id, "condition_cols": [], "ignore_order": True}
        specs.append({**spec, "toks": str(toks)})
        (gold / "sql" / f"{instance_id}.sql").write_text(sql)
    (lite / "spider2-lite.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (gold / "spider2lite_eval.jsonl").write_text("".join(json.dumps(s) + "\n" for s in specs))
    for schema, tables in DDL.items():
        folder = lite / "resource" / "databases" / "bigquery" / "cloudy" / schema
        folder.mkdir(parents=True)
        rows = "".join(f'{name},"{ddl}"\n' for name, ddl in tables)
        (folder / "DDL.csv").write_text("table_name,ddl\n" + rows)
    return data


def _by_name(payload: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(s["group"], s["name"]): s for s in payload["statistics"]}


def test_stats_of_a_built_root(root: Path, tmp_path: Path) -> None:
    page = tmp_path / "stats.html"
    args = ["tasks", "stats", "spider2-lite", "--data-dir", str(root), "--json"]
    result = CliRunner().invoke(app, [*args, "--html", str(page)])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    stats = _by_name(payload)
    assert stats["tasks", "tasks"]["value"] == 3
    assert stats["tasks", "tasks"]["note"] == "-544 against the official README"
    assert stats["tasks by type", "BigQuery"]["value"] == 2
    assert stats["tasks by type", "SQLite"]["value"] == 1
    assert stats["tasks by type", "Snowflake"]["value"] == 0  # published, none here
    levels = {n: stats["tasks by difficulty", n]["value"] for n in ("easy", "medium", "hard")}
    assert levels == {"easy": 1, "medium": 1, "hard": 1}  # toks 40, 100, 200
    assert stats["gold SQL", "official token count (toks, mean)"]["value"] == round(340 / 3, 1)
    # sqlglot's functions, AND/CASE not among them: {DATE_DIFF, COUNT}, {SUM}, {}
    assert stats["gold SQL", "distinct functions per SQL (mean)"]["value"] == 1.0
    assert set(payload["functions"]) == {"DATEDIFF", "COUNT", "SUM"}
    assert stats["databases", "databases"]["value"] == 2
    assert stats["databases", "with metadata here"]["value"] == 1
    assert stats["databases", "tables per database (mean)"]["value"] == 3.0
    assert stats["databases", "columns per database (mean)"]["value"] == 6.0
    assert stats["databases", "nested columns in all"]["value"] == 2
    assert "1 of 2 databases" in stats["databases", "columns per database (mean)"]["note"]
    assert stats["external knowledge", "tasks with a document"]["value"] == 1
    assert payload["type_by_difficulty"] == {
        "BigQuery": {"easy": 1, "medium": 1, "hard": 0},
        "SQLite": {"easy": 0, "medium": 0, "hard": 1},
    }
    assert payload["columns_per_database"] == [6]
    assert len(payload["gold_tokens"]) == 3
    html = page.read_text()
    assert html.count("<svg") >= 4 and "spider2-lite: tasks by difficulty" in html


def test_the_terminal_table_sets_the_published_figure_beside(root: Path) -> None:
    args = ["tasks", "stats", "spider2-lite", "--data-dir", str(root)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "214 (official README)" in result.output
    assert "-212 against the official README" in result.output


def test_the_release_against_the_paper() -> None:
    """The agentic 632: answer types 281/271/80 where the paper has 392/162/78, 94 unrated."""
    require_data("spider2", "spider2", "examples", "spider2.jsonl")
    result = dataset_stats("spider2", load_tasks("spider2"))
    stats = {(s.group, s.name): s for s in result.statistics}
    answers = {k: stats["answer types", k] for k in ("table", "string", "database")}
    assert {k: s.value for k, s in answers.items()} == {
        "table": 281,
        "string": 271,
        "database": 80,
    }
    assert {k: s.reference.value for k, s in answers.items() if s.reference} == {
        "table": 392,
        "string": 162,
        "database": 78,
    }
    assert answers["table"].difference.startswith("-111 against the paper")
    assert "281/271/80, the paper 392/162/78" in answers["table"].difference
    unrated = stats["tasks by difficulty", "unrated"]
    assert unrated.value == 94 and "no difficulty" in unrated.difference
    crossed = result.to_json()["type_by_difficulty"]
    assert sum(levels["unrated"] for levels in crossed.values()) == 94
    assert {k: sum(v.values()) for k, v in crossed.items()}["DuckDB"] == 68
    assert all(
        s.difference == "" for (group, _), s in stats.items() if group == "tasks by type"
    )  # the README's 214/198/135/68/10/7


LITE = Path("spider2") / "spider2-lite"
EVAL = LITE / "evaluation_suite" / "gold" / "spider2lite_eval.jsonl"
SCHEMA = LITE / "resource" / "databases" / "bigquery" / "cloudy" / "ds_a"
DEEP = "[" * 100_000 + "]" * 100_000
# Each damage a task file, eval config or metadata file can hold, and the words said of it.
DAMAGED: dict[str, tuple[Path, str, str]] = {
    "a task line cut off": (LITE / "spider2-lite.jsonl", '{"instance_id": "bq901",', "not valid"),
    "a task nested past the reader": (
        LITE / "spider2-lite.jsonl",
        '{"instance_id": "bq901", "db": "cloudy", "question": ' + DEEP + "}",
        "nested past the reader",
    ),
    "a task's db a number": (
        LITE / "spider2-lite.jsonl",
        '{"instance_id": "bq901", "db": 5, "question": "q"}',
        "field 'db' must be a string",
    ),
    "an eval line not an object": (EVAL, '"x"', "bad eval config line"),
    "toks past any integer": (EVAL, '{"instance_id": "bq901", "toks": 1e400}', "infinity"),
    "toks of 5,000 digits": (
        EVAL,
        '{"instance_id": "bq901", "toks": "' + "9" * 5000 + '"}',
        "digits",
    ),
    "table metadata of the wrong type": (SCHEMA / "t.json", '{"column_types": 5}', "unreadable"),
    "table metadata nested past the reader": (SCHEMA / "t.json", DEEP, "nested past the reader"),
    "table metadata cut off": (SCHEMA / "t.json", '{"table_name": ', "unreadable"),
    "a DDL cut inside its quotes": (
        SCHEMA / "DDL.csv",
        'table_name,ddl\nt,"CREATE TABLE t (\n  a INT64',
        "DDL.csv: row 2: unexpected end of data",
    ),
}


@pytest.mark.parametrize("damage", DAMAGED, ids=list(DAMAGED))
def test_damaged_metadata_is_one_clear_error(tmp_path: Path, damage: str) -> None:
    data = build_root(tmp_path)
    where, text, words = DAMAGED[damage]
    if where.parent == SCHEMA:
        (data / SCHEMA / "DDL.csv").unlink()  # the JSON files are read where no DDL is
    (data / where).write_text(text + "\n", encoding="utf-8")
    args = ["tasks", "stats", "spider2-lite", "--data-dir", str(data), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert words in " ".join(result.output.split())


def test_each_published_figure_prints_beside_the_computed_one() -> None:
    """Every figure entered for the agentic 632 sits on its statistic's row, after the value
    computed here, with the source it was read in."""
    require_data("spider2", "spider2", "examples", "spider2.jsonl")
    result = CliRunner().invoke(app, ["tasks", "stats", "spider2"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    statistics = dataset_stats("spider2", load_tasks("spider2")).statistics
    referenced = [s for s in statistics if s.reference is not None]
    entered = [ref for key, ref in PUBLISHED.items() if key[0] == "spider2"]
    assert len(referenced) == len(entered)
    assert ("databases", "columns per database (mean)") in {(s.group, s.name) for s in referenced}
    for statistic in referenced:
        rows = [row for row in result.output.splitlines() if row.startswith(f"│ {statistic.name} ")]
        cells = [[cell.strip() for cell in row.split("│")[1 : 3 + 1]] for row in rows]
        expected = [statistic.name, formatted(statistic), reference_text(statistic)]
        assert expected in cells, (statistic.name, rows)


@pytest.mark.parametrize(
    ("damage", "words"),
    [("DDL.csv missing", "ds_a: no table metadata"), ("DDL.csv a folder", "DDL.csv: not a file")],
)
def test_a_schema_without_table_metadata_is_one_clear_error(
    tmp_path: Path, damage: str, words: str
) -> None:
    """Neither a DDL.csv nor a table's JSON: the schema's tables are unknown, not zero."""
    data = build_root(tmp_path)
    (data / SCHEMA / "DDL.csv").unlink()
    if damage == "DDL.csv a folder":
        (data / SCHEMA / "DDL.csv").mkdir()
    args = ["tasks", "stats", "spider2-lite", "--data-dir", str(data), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert words in " ".join(result.output.split())


@pytest.mark.parametrize(
    ("gold", "words", "tokenized"),
    [  # sqlglot's tokenizer takes the nested one (its parser recurses), nothing takes the long one
        ("SELECT " + "(" * 20_000 + "1" + ")" * 20_000, "1 gold SQL sqlglot cannot read", 3),
        ("SELECT " + ", ".join(["a"] * 100_000) + " FROM t", "1 gold SQL past 256 KiB", 2),
    ],
    ids=["nested 20,000 deep", "300 KiB long"],
)
def test_a_gold_sql_sqlglot_cannot_take_is_left_out_and_said(
    tmp_path: Path, gold: str, words: str, tokenized: int
) -> None:
    data = build_root(tmp_path)
    (data / LITE / "evaluation_suite" / "gold" / "sql" / "bq902.sql").write_text(gold)
    args = ["tasks", "stats", "spider2-lite", "--data-dir", str(data), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    stats = _by_name(json.loads(result.output))
    assert stats["gold SQL", "tasks with gold SQL here"]["value"] == 3
    assert words in stats["gold SQL", "distinct functions per SQL (mean)"]["note"]
    assert len(json.loads(result.output)["gold_tokens"]) == tokenized


def test_a_task_file_that_is_a_fifo_or_past_the_bound_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task file is read as a regular file of bounded size: a FIFO (the read never returned)
    or a device (`/dev/zero` was read until the process was killed for memory) is refused
    before a byte is read, and a file past `MAX_INPUT_BYTES` is refused with its size."""
    import os

    from querybench.tasks import input_files

    os.mkfifo(tmp_path / "fifo.jsonl")
    big = tmp_path / "big.jsonl"
    big.write_text('{"instance_id": "a", "question": "q", "database": "d"}\n' * 4)
    monkeypatch.setattr(input_files, "MAX_INPUT_BYTES", 100)
    for path, words in ((big, "limit 100"), (tmp_path / "fifo.jsonl", "not a regular file")):
        result = CliRunner().invoke(app, ["tasks", "stats", "custom", "--path", str(path)])
        assert result.exit_code == 2, result.output
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), result.output
        assert words in " ".join(result.output.split()), result.output
