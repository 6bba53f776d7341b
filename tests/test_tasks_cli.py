"""`querybench tasks list|show` through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from querybench.cli import app
from querybench.tasks.model import Task
from tests.conftest import require_data

runner = CliRunner()

CUSTOM = """\
- id: q1
  question: How many orders?
  database: shop.sqlite
  gold_sql: SELECT count(*) FROM orders
- id: q2
  question: Largest order?
  database: shop.sqlite
"""


def _custom(tmp_path: Path) -> Path:
    path = tmp_path / "questions.yaml"
    path.write_text(CUSTOM, encoding="utf-8")
    return path


def test_list_jsonl_has_one_task_per_line_with_the_model_fields(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["tasks", "list", "custom", "--path", str(_custom(tmp_path)), "--format", "jsonl"]
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [x["instance_id"] for x in lines] == ["q1", "q2"]
    assert set(lines[0]) == set(Task.__dataclass_fields__)
    assert lines[0]["gold"]["sql"] == "SELECT count(*) FROM orders"


def test_list_table(tmp_path: Path) -> None:
    result = runner.invoke(app, ["tasks", "list", "custom", "--path", str(_custom(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "custom: 2 tasks" in result.output and "q2" in result.output


def test_show_and_unknown_id(tmp_path: Path) -> None:
    path = str(_custom(tmp_path))
    result = runner.invoke(app, ["tasks", "show", "custom", "q2", "--path", path])
    assert result.exit_code == 0
    assert json.loads(result.output)["question"] == "Largest order?"
    result = runner.invoke(app, ["tasks", "show", "custom", "q9", "--path", path])
    assert result.exit_code == 2
    assert result.output.strip() == "error: no task 'q9' in custom (2 tasks)"


def test_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "q"}\n', encoding="utf-8")
    for args, expected in (
        (
            ["tasks", "list", "custom", "--path", str(bad)],
            "bad.jsonl:1: field 'database' is missing",
        ),
        (["tasks", "list", "spider3"], "unknown benchmark 'spider3'"),
        (["tasks", "list", "custom"], "needs a task file"),
        (
            ["tasks", "list", "custom", "--path", str(bad), "--format", "csv"],
            "--format must be table or jsonl",
        ),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, args
        assert expected in result.output and len(result.output.strip().splitlines()) == 1, (
            result.output
        )


def test_show_a_spider2_task() -> None:
    require_data("spider2", "spider2-lite")
    result = runner.invoke(app, ["tasks", "show", "spider2-lite", "bq011"])
    assert result.exit_code == 0
    task = json.loads(result.output)
    assert task["engine"] == "bigquery" and task["difficulty"] == "medium"
    assert {"nested", "partitioned"} <= set(task["features"])


def test_list_spider2_lite_jsonl_counts() -> None:
    require_data("spider2", "spider2-lite")
    result = runner.invoke(app, ["tasks", "list", "spider2-lite", "--format", "jsonl"])
    assert result.exit_code == 0
    assert len(result.output.splitlines()) == 547
