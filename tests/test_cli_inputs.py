"""Wrong inputs that used to score 0 in silence: each is named with what was expected and what
was found (a warning), or refused with exit 2 when it can only be a mistake."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from tests.test_cli import _gold, _toy_db

runner = CliRunner()


def _said(output: str) -> str:
    return " ".join(output.split())


def _lite(tmp_path: Path, files: dict[str, str]) -> list[str]:
    """`eval spider2-lite` over the toy gold and a predictions folder holding `files`."""
    gold = _gold(tmp_path)
    pred = tmp_path / "pred"
    pred.mkdir()
    for name, text in files.items():
        (pred / name).write_text(text)
    return ["eval", "spider2-lite", "--predictions", str(pred), "--gold-dir", str(gold)]


def test_sql_files_without_mode_sql_are_named(tmp_path: Path) -> None:
    args = _lite(tmp_path, {f"{iid}.sql": "SELECT 1\n" for iid in ("bq001", "sf002", "local003")})
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    said = _said(result.output)
    assert "warning:" in said and "3 .sql files and no .csv" in said
    assert "did you mean --mode sql?" in said
    assert "missing_prediction 3: no <id>.csv" in said  # one cause, counted once


def test_db_dir_without_any_database_exits_two(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    gold = tmp_path / "gold.sql"
    gold.write_text("SELECT 1\ttoy\n")
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT 1\n")
    base = ["eval", "spider1", "--gold", str(gold), "--predictions", str(pred)]
    result = runner.invoke(app, [*base, "--db-dir", str(empty)])
    assert result.exit_code == 2
    assert "holds no database: expected <db_id>/<db_id>.sqlite" in _said(result.output)
    other = tmp_path / "other"
    (other / "x").mkdir(parents=True)
    sqlite3.connect(other / "x" / "x.sqlite").close()
    result = runner.invoke(app, [*base, "--db-dir", str(other)])
    assert result.exit_code == 2 and "holds none of the 1 databases" in _said(result.output)
    questions = tmp_path / "dev.json"
    questions.write_text(json.dumps([{"question_id": 0, "db_id": "toy", "SQL": "SELECT 1"}]))
    bird = ["eval", "bird", "--questions", str(questions), "--predictions", str(pred)]
    result = runner.invoke(app, [*bird, "--db-dir", str(empty)])
    assert result.exit_code == 2 and "holds no database" in _said(result.output)
    gold2 = _gold(tmp_path / "s2")
    sql = ["eval", "spider2-lite", "--predictions", str(tmp_path), "--gold-dir", str(gold2)]
    result = runner.invoke(app, [*sql, "--mode", "sql", "--db-dir", str(empty)])
    assert result.exit_code == 2 and "holds no database" in _said(result.output)


def test_short_spider1_prediction_file_warns_and_is_not_submitted(tmp_path: Path) -> None:
    db_dir = _toy_db(tmp_path)
    gold = tmp_path / "gold.sql"
    # the last two gold lines name a database that is not here
    gold.write_text("SELECT x FROM t\ttoy\nSELECT y FROM t\ttoy\nSELECT 1\tgone\nSELECT 2\tgone\n")
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT x FROM t\n")
    out = tmp_path / "s.jsonl"
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(pred)]
    result = runner.invoke(app, [*args, "--db-dir", str(db_dir), "--output", str(out)])
    assert result.exit_code == 0, result.output
    said = _said(result.output)
    assert "has 1 prediction lines for 4 gold queries" in said
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [d["error"] for d in lines] == [None] + ["missing_prediction"] * 3
    assert "│ submitted │ 1 │" in said  # the lines past the end are not submitted
    longer = tmp_path / "long.txt"
    longer.write_text("SELECT 1\n" * 5)
    result = runner.invoke(app, [*args[:-1], str(longer), "--db-dir", str(db_dir)])
    assert result.exit_code == 2 and "has 5 prediction lines for 4 gold" in _said(result.output)


def test_tasks_that_cannot_run_are_counted_and_the_runnable_score_labelled(
    tmp_path: Path,
) -> None:
    db_dir = _toy_db(tmp_path)
    gold = tmp_path / "gold.sql"
    gold.write_text("SELECT x FROM t\ttoy\nSELECT 1\tgone\n")
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT x FROM t\nSELECT 1\n")
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(pred)]
    result = runner.invoke(app, [*args, "--db-dir", str(db_dir)])
    assert result.exit_code == 0, result.output
    said = _said(result.output)
    assert "│ all tasks │ 2 │ 50.00 │" in said
    assert "│ runnable here │ 1 │ 100.00 │" in said
    assert "1 of 2 tasks could not run here" in said
    assert "engine_unavailable 1: database not found:" in said


def test_help_keeps_angle_bracket_placeholders_of_every_option() -> None:
    """`<bench>-<method>-<model>` and the like must not be eaten as markup in any --help."""
    import re
    from typing import Any

    import typer.main

    root = typer.main.get_command(app)

    def walk(command: Any, path: list[str]) -> list[tuple[list[str], Any]]:
        found = [(path, command)]
        for name, sub in getattr(command, "commands", {}).items():  # a group's subcommands
            found += walk(sub, [*path, name])
        return found

    checked = 0
    for path, command in walk(root, []):
        wanted = [
            token
            for param in command.params
            for token in re.findall(r"<[\w-]+>", getattr(param, "help", None) or "")
        ]
        if not wanted:
            continue
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "400"})
        assert result.exit_code == 0, result.output
        for token in wanted:
            assert token in result.output, f"{' '.join(path)} --help lost {token}"
            checked += 1
    assert checked >= 5


def test_error_messages_group_by_cause_without_touching_numbers() -> None:
    from querybench.evaluation.record import InstanceResult
    from querybench.report.summary import error_counts

    down = "http://127.0.0.1:9/v1 refused the request: HTTP 400"
    results = [InstanceResult(str(i), 0.0, "model_error", down) for i in range(12)]
    results += [
        InstanceResult(f"bq00{i}", 0.0, "missing_prediction", f"no bq00{i}.csv") for i in (1, 2)
    ]
    lines = [e.line for e in error_counts(results)]
    assert lines == [f"model_error 12: {down}", "missing_prediction 2: no <id>.csv"]


def test_files_named_after_no_task_are_named(tmp_path: Path) -> None:
    args = _lite(tmp_path, {"sf_bq999.csv": "a\n1\n"})
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    said = _said(result.output)
    assert "1 .csv files but none is named after a spider2-lite instance id" in said
    assert "found e.g. sf_bq999.csv, expected e.g. bq001.csv" in said


def test_a_dbt_predictions_path_that_is_not_a_folder_exits_two(tmp_path: Path) -> None:
    # it used to score all 68 tasks `missing_prediction`, exit 0, like every other eval refuses
    a_file = tmp_path / "pred.txt"
    a_file.write_text("SELECT 1\n")
    for predictions in (tmp_path / "typo", a_file):
        result = runner.invoke(app, ["eval", "spider2-dbt", "--predictions", str(predictions)])
        assert result.exit_code == 2, result.output
        assert f"--predictions {predictions} is not a folder" in _said(result.output)


def test_an_output_that_cannot_be_written_exits_two_before_scoring(tmp_path: Path) -> None:
    # it used to score everything (an hour of SQL, maybe) and then end in a traceback
    base = _lite(tmp_path, {"bq001.csv": "a\n1\n"})
    a_file = tmp_path / "results.txt"
    a_file.write_text("")
    for output, said in (
        (tmp_path, f"--output {tmp_path} is a folder"),
        (a_file / "r.jsonl", f"cannot be written: {a_file} is not a folder"),
    ):
        result = runner.invoke(app, [*base, "--output", str(output)])
        assert result.exit_code == 2, result.output
        assert said in _said(result.output)
        assert "score = official" not in result.output  # no summary: nothing was scored
    new = tmp_path / "new" / "folder" / "r.jsonl"
    result = runner.invoke(app, [*base, "--output", str(new)])
    assert result.exit_code == 0, result.output
    assert new.is_file() and "score = official" in result.output


def test_an_empty_predictions_folder_is_named(tmp_path: Path) -> None:
    # it used to score every task missing_prediction without a word
    args = _lite(tmp_path, {"notes.txt": "not a prediction\n"})
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    said = _said(result.output)
    assert "holds no <instance_id>.csv file (nor any .sql): every instance will be" in said
    assert said.count("warning:") == 1


def test_a_timeout_that_is_no_duration_exits_two(tmp_path: Path) -> None:
    # a negative or nan --timeout used to stop every query at once: each scored 0, exit 0
    file = tmp_path / "f.sql"
    file.write_text("SELECT 1\ttoy\n")
    paths = {flag: str(file) for flag in ("--gold", "--predictions", "--questions")}
    paths["--db-dir"] = str(tmp_path)
    for command in ("spider1", "bird", "bird-mini-dev", "spider2-lite", "spider2-snow", "spider2"):
        required = [f for f in ("--gold", "--questions", "--db-dir") if _requires(command, f)]
        args = ["eval", command, "--predictions", str(file)]
        args += [x for flag in required for x in (flag, paths[flag])]
        for bad in ("-5", "0", "nan"):
            result = runner.invoke(app, [*args, "--timeout", bad])
            assert result.exit_code == 2, (command, bad, result.output)
            assert "Invalid value for '--timeout'" in _said(result.output), result.output
    result = runner.invoke(app, ["db", "query", str(file), "SELECT 1", "--timeout", "-1"])
    assert result.exit_code == 2 and "Invalid value for '--timeout'" in _said(result.output)
    result = runner.invoke(app, ["db", "query", str(file), "SELECT 1", "--max-rows", "-1"])
    assert result.exit_code == 2 and "Invalid value for '--max-rows'" in _said(result.output)
    run = ["run", "spider1", "--model", "oracle", "--out", str(tmp_path / "run")]
    result = runner.invoke(app, [*run, "--timeout", "-1"])  # seconds per HTTP request
    assert result.exit_code == 2 and "Invalid value for '--timeout'" in _said(result.output)
    assert not (tmp_path / "run").exists()


def _requires(command: str, flag: str) -> bool:
    from querybench.commands.eval_flags import COMMANDS

    return any(f.option == flag and f.required for f in COMMANDS[command])


def test_an_empty_dbt_or_agentic_predictions_folder_is_named(tmp_path: Path) -> None:
    # both used to score every instance missing_prediction with no word of the layout
    from tests.conftest import require_data

    require_data("spider2", "spider2-dbt")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes").mkdir()  # a folder, but no <instance_id>/<db>.duckdb in it
    result = runner.invoke(app, ["eval", "spider2-dbt", "--predictions", str(empty)])
    assert result.exit_code == 0, result.output
    said = _said(result.output)
    assert f"warning: {empty} holds no <instance_id>/<db>.duckdb file" in said, said
    assert "every instance will be missing_prediction" in said and said.count("warning:") == 1
    require_data("spider2", "spider2", "examples", "spider2.jsonl")
    for metadata in (None, ""):
        folder = tmp_path / f"agentic{metadata is None}"
        folder.mkdir()
        if metadata is not None:
            (folder / "results_metadata.jsonl").write_text(metadata)
        result = runner.invoke(app, ["eval", "spider2", "--predictions", str(folder)])
        assert result.exit_code == 0, result.output
        said = _said(result.output)
        assert "nothing is scored" in said, said
        assert "a JSON line per instance" in said and said.count("warning:") == 1


def test_a_gold_dir_that_is_not_a_folder_exits_two_for_dbt_and_agentic(tmp_path: Path) -> None:
    # both used to score every instance 0 (gold missing) with exit 0, where lite/snow exit 2
    predictions = tmp_path / "pred"
    predictions.mkdir()
    for command in ("spider2-dbt", "spider2"):
        args = ["eval", command, "--predictions", str(predictions)]
        result = runner.invoke(app, [*args, "--gold-dir", str(tmp_path / "typo")])
        assert result.exit_code == 2, result.output
        assert f"--gold-dir {tmp_path / 'typo'} is not a folder" in _said(result.output)


def test_a_gold_or_questions_file_that_is_not_there_says_so(tmp_path: Path) -> None:
    # it said "cannot read the gold file /x/typo.sql: no typo.sql"
    db = tmp_path / "db"
    (db / "toy").mkdir(parents=True)
    sqlite3.connect(db / "toy" / "toy.sqlite").close()
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT 1\n")
    missing = tmp_path / "typo.sql"
    base = ["--predictions", str(pred), "--db-dir", str(db)]
    for command, flag, what in (
        ("spider1", "--gold", "gold"),
        ("bird", "--questions", "questions"),
    ):
        result = runner.invoke(app, ["eval", command, flag, str(missing), *base])
        assert result.exit_code == 2, result.output
        assert f"cannot read the {what} file {missing}: no such file" in _said(result.output)


def test_no_gold_in_any_data_root_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An installed tool with no data yet (no checkout beside it, nothing fetched): the gold's
    # absence is said with the fix, not as a folder "with no spider2lite_eval.jsonl".
    import querybench.data.roots as data

    monkeypatch.delenv("QUERYBENCH_DATA", raising=False)
    monkeypatch.setattr(data, "shared_data_dir", lambda: tmp_path / "no-shared")
    monkeypatch.setattr(data, "user_data_dir", lambda: tmp_path / "no-user")
    for benchmark in ("spider2-lite", "spider2-snow"):
        result = runner.invoke(app, ["eval", benchmark, "--predictions", str(tmp_path)])
        assert result.exit_code == 2, result.output
        said = _said(result.output)
        assert f"no {benchmark} gold folder in the data roots" in said
        assert f"querybench data fetch {benchmark}" in said and "--gold-dir" in said


def test_sql_mode_flags_given_to_exec_result_mode_are_named(tmp_path: Path) -> None:
    # exec_result mode reads the CSV results and runs nothing: a --tasks-file or --db-dir given
    # to it is said to be ignored, not dropped in silence.
    gold = _gold(tmp_path)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("")
    args = ["eval", "spider2-lite", "--predictions", str(tmp_path), "--gold-dir", str(gold)]
    result = runner.invoke(app, [*args, "--tasks-file", str(tasks), "--db-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    said = _said(result.output)
    assert "--tasks-file is read only with --mode sql" in said
    assert "--db-dir is read only with --mode sql" in said
    result = runner.invoke(app, args)
    assert "read only with --mode sql" not in _said(result.output)


def test_control_codes_in_a_message_do_not_reach_the_terminal(tmp_path: Path) -> None:
    # hostile model SQL: the engine's error echoes the token, and the summary printed its ESC
    # (a terminal control sequence) as it was; rich strips BEL and CR, not ESC
    gold = tmp_path / "gold.sql"
    gold.write_text("SELECT 1\ttoy\n")
    (tmp_path / "db" / "toy").mkdir(parents=True)
    sqlite3.connect(tmp_path / "db" / "toy" / "toy.sqlite").close()
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT \x1b[2J\x1b]0;owned\x07 FROM t\n")
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(pred)]
    result = runner.invoke(app, [*args, "--db-dir", str(tmp_path / "db")])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "\\x1b" in result.output  # shown, escaped
