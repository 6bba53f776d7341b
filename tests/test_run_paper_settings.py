"""The paper's oracle settings: --reference-plan and --oracle-functions, off by default,
recorded in config.json, labelled in the summary, and part of the run's identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from querybench.data import roots as data_module
from querybench.data.layout import reference_plan_candidates
from querybench.data.status import benchmark_status
from querybench.errors import DataError
from querybench.methods.paper_settings import gold_function_names
from querybench.runs.config import Prompt, RunConfig, Selection
from querybench.runs.runner import run
from tests.test_run_spider2_csv import TASKS
from tests.test_run_spider2_csv import data as lite_data  # noqa: F401  (the fixture)

IDS = ("local901", "local902")


@pytest.fixture
def data(lite_data: Path) -> Path:  # noqa: F811  (the imported fixture, extended)
    """The lite root with the schema metadata of its SQLite database (a task runs only with
    its metadata here)."""
    folder = lite_data / "spider2" / "spider2-lite" / "resource" / "databases" / "sqlite" / "shop"
    folder.mkdir(parents=True)
    ddl = "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL)"
    (folder / "DDL.csv").write_text(f'table_name,DDL\nitems,"{ddl}"\n')
    return lite_data


def _config(root: Path, out: Path, prompt: Prompt | None = None) -> RunConfig:
    selection = Selection(data_dir=root, ids=IDS)
    return RunConfig(
        "spider2-lite", "zero-shot", "oracle", out=out, selection=selection, prompt=prompt
    )


def _plan_file(root: Path) -> Path:
    return root / reference_plan_candidates("spider2-lite")[0]


def test_reference_plan_without_its_file_is_one_clear_line(data: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError) as info:
        run(_config(data, tmp_path / "run", prompt=Prompt(reference_plan=True)), evaluate=False)
    message = str(info.value)
    assert "\n" not in message and "evaluation_suite/gold/reference_plan.jsonl" in message
    assert str(data) in message  # where it was looked for


def test_plans_are_found_in_any_data_root_and_data_status_says_so(
    data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A `QUERYBENCH_DATA` folder holding only the plans, the tasks in the next root: the plans
    are read (the one lookup rule), and `data status` reports them."""
    monkeypatch.setattr(data_module, "shared_data_dir", lambda: data)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    plans_only = tmp_path / "plans-only"
    monkeypatch.setenv("QUERYBENCH_DATA", str(plans_only))
    before = {i.what: i.state for i in benchmark_status("spider2-lite").items}
    assert before["reference plans"] == (
        "absent (--reference-plan reads spider2/spider2-lite/evaluation_suite/gold/"
        "reference_plan.jsonl)"
    )
    plan = _plan_file(plans_only)
    plan.parent.mkdir(parents=True)
    plan.write_text(json.dumps({"instance_id": "local902", "plan": "1. count"}) + "\n")
    out = tmp_path / "run"
    outcome = run(
        RunConfig(
            "spider2-lite",
            "zero-shot",
            "oracle",
            out=out,
            selection=Selection(ids=IDS),
            prompt=Prompt(reference_plan=True),
        )
    )
    task = {t.instance_id: t for t in outcome.tasks}
    assert "Reference plan (oracle setting):\n1. count" in task["local902"].question
    assert task["local901"].extra["reference_plan"] is False
    after = {i.what: i.state for i in benchmark_status("spider2-lite").items}
    assert after["reference plans"] == f"1 of {len(TASKS)} tasks in {plan}"
    assert "reference plans" not in {i.what for i in benchmark_status("spider2-dbt").items}


def test_settings_reach_the_prompt_and_are_recorded(data: Path, tmp_path: Path) -> None:
    plan = _plan_file(data)
    plan.write_text(json.dumps({"instance_id": "local901", "plan": "1. read items"}) + "\n")
    out = tmp_path / "run"
    outcome = run(_config(data, out, prompt=Prompt(reference_plan=True, oracle_functions=True)))
    task = {t.instance_id: t for t in outcome.tasks}
    assert "Reference plan (oracle setting):\n1. read items" in task["local901"].question
    assert "Reference plan" not in task["local902"].question  # no plan for it in the file
    assert "Functions the answer uses (oracle setting):\n- COUNT" in task["local902"].question
    assert task["local902"].extra["oracle_functions"] == ["COUNT"]
    config = json.loads((out / "config.json").read_text())
    assert config["reference_plan"] is True and config["oracle_functions"] is True
    summary = json.loads((out / "summary.json").read_text())
    assert summary["oracle_settings"] == ["reference_plan", "oracle_functions"]
    assert summary["oracle_settings_applied"] == {"reference_plan": 1, "oracle_functions": 2}
    with pytest.raises(DataError, match="oracle_functions: True -> False"):
        run(_config(data, out, prompt=Prompt(reference_plan=True)), evaluate=False)


def test_off_by_default_and_an_older_config_without_them_resumes(
    data: Path,
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    outcome = run(_config(data, out))
    assert "oracle setting" not in outcome.tasks[0].question
    assert "oracle_settings" not in outcome.summary
    config = json.loads((out / "config.json").read_text())
    del config["reference_plan"], config["oracle_functions"]
    (out / "config.json").write_text(json.dumps(config))
    run(_config(data, out), evaluate=False)  # same experiment: accepted


@pytest.mark.parametrize(
    ("sql", "engine", "expected"),
    [
        ("SELECT strftime('%Y', d), COUNT(*) FROM t GROUP BY 1", "sqlite", {"STRFTIME", "COUNT"}),
        ("SELECT DATE_DIFF(a, b, DAY) FROM t, UNNEST(x)", "bigquery", {"DATE_DIFF", "UNNEST"}),
        ("SELECT f.value FROM t, LATERAL FLATTEN(input => t.v) f", "snowflake", {"FLATTEN"}),
    ],
)
def test_gold_function_names(sql: str, engine: str, expected: set[str]) -> None:
    assert expected <= gold_function_names(sql, engine)
