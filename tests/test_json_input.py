"""JSON nested past the interpreter's recursion limit, or holding an integer past its digit
limit, is one more malformed input: every file or reply querybench decodes goes through
`json_input`, so it is a stated error, never a `RecursionError` or `ValueError` traceback."""

from __future__ import annotations

import ast
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench import json_input
from querybench.cli import app
from querybench.models.tools import ToolCall
from querybench.tasks.input_files import read_json_array, read_jsonl

PACKAGE = Path(__file__).resolve().parent.parent / "querybench"
DEEP = "[" * 100_000 + "]" * 100_000
# An integer past the interpreter's 4,300-digit conversion limit: `json.loads` raises a plain
# `ValueError` for it, not a `JSONDecodeError`.
LONG = '{"0": ' + "9" * 5_000 + "}"
# Modules that decode only bytes they wrote themselves into their own SQLite stores.
OWN_STORES = {
    "evaluation/spider2/verdict_cache.py",
    "evaluation/bird/run_cache.py",
    "engines/cache_values.py",
}


def test_deep_nesting_is_a_decode_error() -> None:
    for text in (DEEP, DEEP.encode()):
        with pytest.raises(json.JSONDecodeError, match=json_input.NESTED):
            json_input.loads(text)
    with pytest.raises(json.JSONDecodeError, match=json_input.NESTED):
        json_input.raw_decode(f"[{DEEP}]", 1)
    assert json_input.loads('{"a": [1]}') == {"a": [1]}
    for text in (LONG, LONG.encode()):
        with pytest.raises(json.JSONDecodeError, match=json_input.LONG_NUMBER):
            json_input.loads(text)
    with pytest.raises(json.JSONDecodeError, match=json_input.LONG_NUMBER):
        json_input.raw_decode(f"[{LONG}]", 1)
    assert json_input.loads("9" * 4_300) == int("9" * 4_300)
    assert json_input.raw_decode("[1] x", 0) == ([1], 3)


def test_every_json_decode_goes_through_the_one_reader() -> None:
    direct = sorted(
        (name, node.lineno)
        for path in sorted(PACKAGE.rglob("*.py"))
        if (name := path.relative_to(PACKAGE).as_posix()) not in OWN_STORES | {"json_input.py"}
        for node in ast.walk(ast.parse(path.read_text(), name))
        if isinstance(node, ast.Attribute)
        and node.attr in {"loads", "load", "raw_decode"}
        and isinstance(node.value, ast.Name)
        and node.value.id == "json"
    )
    assert direct == [], "decode JSON with querybench.json_input"


def test_task_files_nested_too_deep_name_their_line(tmp_path: Path) -> None:
    lines = tmp_path / "t.jsonl"
    lines.write_text('{"a": 1}\n' + DEEP + "\n")
    with pytest.raises(Exception, match=r"t\.jsonl:2: not valid JSON \(nested past the reader"):
        list(read_jsonl(lines))
    array = tmp_path / "t.json"
    array.write_text('[{"a": 1},\n' + DEEP + "]")
    with pytest.raises(Exception, match=r"t\.json:2: not valid JSON \(nested past the reader"):
        list(read_json_array(array))


def test_a_tool_call_nested_too_deep_is_that_calls_error() -> None:
    call = ToolCall.parse("c1", "execute_sql", DEEP)
    assert call.arguments is None and json_input.NESTED in (call.error or "")


@pytest.mark.parametrize("text", [DEEP, LONG], ids=["nested", "long-number"])
@pytest.mark.parametrize("flag", ["--predictions", "--questions"])
def test_eval_bird_on_a_file_json_cannot_hold_is_one_error_line(
    tmp_path: Path, flag: str, text: str
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(text)
    (questions := tmp_path / "questions.json").write_text("[]")
    (predictions := tmp_path / "predictions.json").write_text("{}")
    db = tmp_path / "db" / "shop" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    sqlite3.connect(db).close()
    files = {"--predictions": predictions, "--questions": questions} | {flag: deep}
    args = ["eval", "bird", *(x for kv in files.items() for x in (kv[0], str(kv[1])))]
    result = CliRunner().invoke(app, [*args, "--db-dir", str(tmp_path / "db")])
    assert result.exit_code == 2, result.output
    why = json_input.NESTED if text == DEEP else json_input.LONG_NUMBER
    assert why in " ".join(result.output.split())
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_run_config_nested_too_deep_is_one_error_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    result = CliRunner().invoke(
        app,
        [
            "run",
            "spider1",
            "--method",
            "oracle",
            "--config",
            str(deep),
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "nested past the reader" in " ".join(result.output.split())
