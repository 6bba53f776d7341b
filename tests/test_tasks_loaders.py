"""Every benchmark loader on the shared data: counts, engines, difficulty, feature tags."""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from querybench.tasks import load_tasks as _load_tasks
from querybench.tasks import task_to_json
from querybench.tasks.model import FEATURES, Task
from tests.conftest import require_data

COUNTS = {
    "spider2-lite": ("spider2", 547),
    "spider2-snow": ("spider2", 547),
    "spider2-dbt": ("spider2", 68),
    "bird": ("bird", 1534),
    "bird-mini-dev": ("bird", 500),
    "spider1": ("spider1", 1034),
}
pytestmark = pytest.mark.data


@cache
def load_tasks(benchmark: str) -> list[Task]:
    """Each benchmark read once per test session (tasks are frozen; nobody mutates the list)."""
    return _load_tasks(benchmark)


@pytest.mark.parametrize(("benchmark", "expected"), [(b, n) for b, (_, n) in COUNTS.items()])
def test_counts_and_unique_ids(benchmark: str, expected: int) -> None:
    root = require_data(COUNTS[benchmark][0])
    tasks = _load_tasks(benchmark, data_dir=root.parent)
    assert len(tasks) == expected
    assert len({t.instance_id for t in tasks}) == expected
    assert all(t.benchmark == benchmark and t.question.strip() and t.db for t in tasks)
    assert all(set(t.features) <= set(FEATURES) for t in tasks)


@pytest.mark.parametrize(
    "benchmark", ["spider2-lite", "spider2-snow", "bird", "bird-mini-dev", "spider1"]
)
def test_every_task_has_a_difficulty(benchmark: str) -> None:
    require_data(COUNTS[benchmark][0])
    assert all(t.difficulty is not None for t in load_tasks(benchmark))


def test_difficulty_distributions_match_the_published_ones() -> None:
    require_data("bird")
    require_data("spider1")
    bird = Counter(t.difficulty for t in load_tasks("bird"))
    assert bird == {"simple": 925, "moderate": 464, "challenging": 145}
    mini = Counter(t.difficulty for t in load_tasks("bird-mini-dev"))
    assert mini == {"simple": 148, "moderate": 250, "challenging": 102}
    # Spider 1.0 dev hardness as the official evaluator reports it
    spider = Counter(t.difficulty for t in load_tasks("spider1"))
    assert spider == {"easy": 248, "medium": 446, "hard": 174, "extra": 166}


def test_spider2_engines_by_id_prefix() -> None:
    require_data("spider2", "spider2-lite")
    expected = {"bq": "bigquery", "ga": "bigquery", "sf": "snowflake", "lo": "sqlite"}
    for task in load_tasks("spider2-lite"):
        assert task.engine == expected[task.instance_id[:2]], task.instance_id
    assert {t.engine for t in load_tasks("spider2-snow")} == {"snowflake"}
    assert {t.engine for t in load_tasks("spider2-dbt")} == {"duckdb"}


def test_snow_tasks_take_their_lite_twins_difficulty() -> None:
    require_data("spider2", "spider2-snow")
    lite = {t.instance_id: t for t in load_tasks("spider2-lite")}
    for task in load_tasks("spider2-snow"):
        twin = lite.get(task.instance_id.removeprefix("sf_")) or lite[task.instance_id]
        assert twin.question == task.question
        assert task.difficulty == twin.difficulty


def test_ga4_tasks_are_nested_and_partitioned() -> None:
    require_data("spider2", "spider2-lite", "resource", "databases", "bigquery", "ga4")
    for benchmark, db in (("spider2-lite", "ga4"), ("spider2-snow", "GA4")):
        ga4 = [t for t in load_tasks(benchmark) if t.db == db]
        assert ga4, benchmark
        for task in ga4:
            assert {"nested", "partitioned", "table_answer"} <= set(task.features), task


def test_spider2_tags_follow_the_data() -> None:
    require_data("spider2", "spider2-lite")
    tasks = load_tasks("spider2-lite")
    for task in tasks:
        assert ("documentation" in task.features) == bool(task.external_knowledge)
    by_db = {t.db: set(t.features) for t in tasks}
    assert "multi_schema" in by_db["austin"]  # austin_311, austin_bikeshare, austin_crime
    assert "nested" not in by_db["chinook"] and "multi_schema" not in by_db["chinook"]
    with_functions = [t for t in tasks if "functions" in t.features]
    assert with_functions and all(t.gold.sql for t in with_functions)


def test_spider2_gold_references() -> None:
    require_data("spider2", "spider2-lite", "evaluation_suite", "gold")
    task = next(t for t in load_tasks("spider2-lite") if t.instance_id == "bq011")
    assert task.gold.result_files and task.gold.result_files[0].endswith(".csv")
    assert task.gold.eval_params["toks"] == 132 and task.difficulty == "medium"
    assert task.extra["metadata_dir"].endswith("ga4")


def test_spider2_without_gold_folders(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """What the context builder's no-gold check sees: tasks, no gold, no error."""
    src = require_data("spider2", "spider2-lite")
    lite = tmp_path / "spider2" / "spider2-lite"
    lite.mkdir(parents=True)
    (lite / "spider2-lite.jsonl").write_bytes((src / "spider2-lite.jsonl").read_bytes())
    tasks = _load_tasks("spider2-lite", data_dir=tmp_path)
    assert len(tasks) == 547
    assert all(t.gold.sql is None and not t.gold.result_files for t in tasks)
    assert len(_load_tasks("spider2-lite", with_gold=False)) == 547


def test_dbt_tasks() -> None:
    require_data("spider2", "spider2-dbt")
    tasks = {t.instance_id: t for t in load_tasks("spider2-dbt")}
    playbook = tasks["playbook001"]
    assert playbook.db == "playbook"
    assert set(playbook.features) == {"dbt", "database_answer"}
    assert playbook.gold.eval_params["evaluation"][0]["func"] == "duckdb_match"
    assert playbook.extra["project_dir"].endswith("playbook001")


def test_bird_and_spider1_fields() -> None:
    require_data("bird")
    require_data("spider1")
    first = load_tasks("bird")[0]
    assert first.instance_id == "0" and first.db == "california_schools"
    assert first.external_knowledge and "documentation" in first.features
    assert first.gold.sql and first.engine == "sqlite"
    spider = load_tasks("spider1")
    assert spider[0].instance_id == "0" and spider[0].gold.sql == "SELECT count(*) FROM singer"


def test_task_json_has_the_model_fields() -> None:
    require_data("spider2", "spider2-lite")
    data = task_to_json(load_tasks("spider2-lite")[0])
    assert set(data) >= {"instance_id", "benchmark", "question", "db", "engine", "difficulty"}
    assert set(data["gold"]) == {"sql", "result_files", "eval_params"}
