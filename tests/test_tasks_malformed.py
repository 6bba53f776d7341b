"""Malformed task files: one DataError line naming the file, the line and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from querybench.errors import DataError
from querybench.tasks import load_tasks


def _spider2_root(tmp_path: Path, lines: list[str], benchmark: str = "spider2-lite") -> Path:
    folder = tmp_path / "spider2" / benchmark
    folder.mkdir(parents=True)
    (folder / f"{benchmark}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


LITE_OK = json.dumps({"instance_id": "local001", "db": "x", "question": "q?"})


def _error(benchmark: str, root: Path) -> str:
    with pytest.raises(DataError) as info:
        load_tasks(benchmark, data_dir=root)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_bad_json_line_names_file_and_line(tmp_path: Path) -> None:
    root = _spider2_root(tmp_path, [LITE_OK, "{not json"])
    assert "spider2-lite.jsonl:2: not valid JSON" in _error("spider2-lite", root)


def test_missing_field_names_line_and_field(tmp_path: Path) -> None:
    root = _spider2_root(
        tmp_path,
        [LITE_OK, LITE_OK.replace("local001", "local002"), '{"instance_id": "bq1", "db": "d"}'],
    )
    assert _error("spider2-lite", root).endswith(
        "spider2-lite.jsonl:3: field 'question' is missing"
    )


def test_snow_uses_its_own_field_names(tmp_path: Path) -> None:
    root = _spider2_root(tmp_path, [LITE_OK], "spider2-snow")
    assert "spider2-snow.jsonl:1: field 'instruction' is missing" in _error("spider2-snow", root)


def test_wrong_type_and_unknown_prefix(tmp_path: Path) -> None:
    root = _spider2_root(tmp_path, ['{"instance_id": "local1", "db": 3, "question": "q"}'])
    assert "field 'db' must be a string, got int" in _error("spider2-lite", root)
    other = _spider2_root(tmp_path / "b", ['{"instance_id": "zz1", "db": "d", "question": "q"}'])
    assert "field 'instance_id' 'zz1' has no engine prefix" in _error("spider2-lite", other)


def test_duplicate_ids_are_an_error(tmp_path: Path) -> None:
    root = _spider2_root(tmp_path, [LITE_OK, LITE_OK])
    assert "'local001' appears more than once" in _error("spider2-lite", root)


def test_bird_entry_missing_a_field_names_its_line(tmp_path: Path) -> None:
    entries = [
        {
            "question_id": 0,
            "db_id": "a",
            "question": "q",
            "evidence": "",
            "SQL": "SELECT 1",
            "difficulty": "simple",
        },
        {"question_id": 1, "db_id": "a", "question": "q", "evidence": "", "difficulty": "simple"},
    ]
    (tmp_path / "bird").mkdir()
    (tmp_path / "bird" / "dev.json").write_text(json.dumps(entries, indent=2), encoding="utf-8")
    message = _error("bird", tmp_path)
    assert message.endswith("dev.json:10: field 'SQL' is missing"), message


def test_bird_unknown_difficulty_and_broken_array(tmp_path: Path) -> None:
    (tmp_path / "bird").mkdir()
    entry = {
        "question_id": 0,
        "db_id": "a",
        "question": "q",
        "SQL": "SELECT 1",
        "difficulty": "hard",
    }
    (tmp_path / "bird" / "dev.json").write_text(json.dumps([entry]), encoding="utf-8")
    assert "field 'difficulty' is 'hard'" in _error("bird", tmp_path)
    (tmp_path / "bird" / "dev.json").write_text('[\n\n{"q": ]', encoding="utf-8")
    assert "dev.json:3: not valid JSON" in _error("bird", tmp_path)


def test_spider1_bad_parse_names_the_sql_field(tmp_path: Path) -> None:
    (tmp_path / "spider1").mkdir()
    entry = {"db_id": "a", "question": "q", "query": "SELECT 1", "sql": {"select": []}}
    (tmp_path / "spider1" / "dev.json").write_text(json.dumps([entry]), encoding="utf-8")
    assert "dev.json:1: field 'sql' is not a parsed Spider query" in _error("spider1", tmp_path)


def test_missing_file_and_unknown_benchmark(tmp_path: Path) -> None:
    assert "spider2-lite.jsonl: task file not found" in _error("spider2-lite", tmp_path)
    with pytest.raises(DataError, match="unknown benchmark 'spider3'"):
        load_tasks("spider3")


def test_dbt_eval_config_without_evaluation(tmp_path: Path) -> None:
    dbt = tmp_path / "spider2" / "spider2-dbt"
    (dbt / "examples").mkdir(parents=True)
    (dbt / "examples" / "spider2-dbt.jsonl").write_text(
        '{"instance_id": "a001", "instruction": "do it", "type": "DBT"}\n', encoding="utf-8"
    )
    gold = dbt / "evaluation_suite" / "gold"
    gold.mkdir(parents=True)
    (gold / "spider2_eval.jsonl").write_text('{"instance_id": "a001"}\n', encoding="utf-8")
    assert "spider2_eval.jsonl:1: field 'evaluation' is missing" in _error("spider2-dbt", tmp_path)
    (gold / "spider2_eval.jsonl").unlink()
    (task,) = load_tasks("spider2-dbt", data_dir=tmp_path)
    assert task.db == "a" and set(task.features) == {"dbt", "database_answer"}


def test_bird_train_when_present(tmp_path: Path) -> None:
    assert "bird/train/train.json: question file not found" in _error("bird-train", tmp_path)
    entry = {"db_id": "a", "question": "q", "evidence": "", "SQL": "SELECT strftime('%Y', d)"}
    (tmp_path / "bird" / "train").mkdir(parents=True)
    (tmp_path / "bird" / "train" / "train.json").write_text(json.dumps([entry] * 2), "utf-8")
    # the official train.json has no question_id: the ids are positions in the file
    assert [t.instance_id for t in load_tasks("bird-train", data_dir=tmp_path)] == ["0", "1"]
    entry["question_id"] = 0
    (tmp_path / "bird" / "train" / "train.json").write_text(json.dumps([entry]), encoding="utf-8")
    (task,) = load_tasks("bird-train", data_dir=tmp_path)
    assert task.benchmark == "bird-train" and task.difficulty is None
    assert task.features == ("functions",)


def test_dbt_check_its_matcher_does_not_take_fails_that_instance(tmp_path: Path) -> None:
    """The loader reads the checks' shape only (tasks know no scorer); the scorer refuses an
    unknown matcher for that one instance, with the reason, as every broken gold entry."""
    from querybench.evaluation.spider2.agentic.dbt import score_dbt_task

    dbt = tmp_path / "spider2" / "spider2-dbt"
    (dbt / "examples").mkdir(parents=True)
    (dbt / "examples" / "spider2-dbt.jsonl").write_text(
        '{"instance_id": "a001", "instruction": "do it", "type": "DBT"}\n', encoding="utf-8"
    )
    gold = dbt / "evaluation_suite" / "gold"
    (gold / "a001").mkdir(parents=True)
    (gold / "a001" / "a.duckdb").write_bytes(b"")
    check = {"func": "nope_match", "parameters": {"gold": "a.duckdb"}}
    line = {"instance_id": "a001", "evaluation": check}
    (gold / "spider2_eval.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    (task,) = load_tasks("spider2-dbt", data_dir=tmp_path)
    predictions = tmp_path / "predictions"
    (predictions / "a001").mkdir(parents=True)
    (predictions / "a001" / "a.duckdb").write_bytes(b"")
    result = score_dbt_task(task, predictions, gold)
    assert (result.score, result.error) == (0.0, "gold_error")
    assert result.message == "unknown Spider 2.0 eval function 'nope_match'"


@pytest.mark.parametrize("name", ["../../../../tmp/x", "a/b", "..", "a\\b", "x\x00y"])
def test_a_database_id_that_is_a_path_is_refused(tmp_path: Path, name: str) -> None:
    """A database id becomes `<folder>/<db>/<db>.sqlite` (or a server URL's database): one
    that is a path out of its folder would open any host file of that name."""
    item = {"instance_id": "local001", "db": name, "question": "q?"}
    root = _spider2_root(tmp_path, [json.dumps(item)])
    assert "spider2-lite.jsonl:1: field 'db' is not a plain name" in _error("spider2-lite", root)
    spider1 = tmp_path / "s1" / "spider1"
    spider1.mkdir(parents=True)
    question = {"db_id": name, "question": "q?", "query": "SELECT 1"}
    (spider1 / "dev.json").write_text(json.dumps([question]), encoding="utf-8")
    assert "field 'db_id' is not a plain name" in _error("spider1", tmp_path / "s1")


@pytest.mark.parametrize("benchmark", ["spider2-lite", "bird"])
def test_an_instance_id_that_is_a_path_is_refused(tmp_path: Path, benchmark: str) -> None:
    """An instance id names files (`<id>.csv`, `<id>.sql`, a trajectory, a DBT project's
    folder): `local../../x` would read or write outside the folder it names a file in."""
    if benchmark == "bird":
        folder = tmp_path / "bird"
        folder.mkdir()
        entry = {"question_id": "1/../../x", "db_id": "d", "question": "q", "SQL": "SELECT 1"}
        (folder / "dev.json").write_text(json.dumps([entry]), encoding="utf-8")
        root = tmp_path
    else:
        item = {"instance_id": "local../../../x", "db": "d", "question": "q?"}
        root = _spider2_root(tmp_path, [json.dumps(item)])
    field = "question_id" if benchmark == "bird" else "instance_id"
    assert f"field '{field}' is not a plain name" in _error(benchmark, root)


def test_an_eval_config_instance_id_that_is_a_path_is_refused(tmp_path: Path) -> None:
    """The gold's eval config names the predictions read (`<id>.csv`): an id of
    `../../secret` read a CSV outside the predictions folder as a submitted prediction."""
    from querybench.tasks.spider2_gold import GoldFolder

    gold = tmp_path / "gold"
    (gold / "exec_result").mkdir(parents=True)
    line = json.dumps({"instance_id": "../../secret", "condition_cols": [], "ignore_order": True})
    (gold / "spider2lite_eval.jsonl").write_text(line + "\n", encoding="utf-8")
    with pytest.raises(
        DataError,
        match=r"bad eval config line \(instance_id '\.\./\.\./secret' is not a plain name\)",
    ):
        GoldFolder(gold, "spider2-lite")
