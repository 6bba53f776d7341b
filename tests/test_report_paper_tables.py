"""The paper's tables from runs (`report`): Table 3's layout on a scripted run with known
outcomes, Table 8, answer types, with / without rows, actions per turn, steps and cost."""

from __future__ import annotations

import json
from pathlib import Path

from querybench.evaluation.record import InstanceResult
from querybench.report import paper_tables
from querybench.report.runs import RunData
from querybench.runs.store import InstanceRecord, RecordStatus
from querybench.tasks.model import Task

# (instance id, difficulty, engine, score, answer type, features)
OUTCOMES = [
    ("bq1", "easy", "bigquery", 1.0, "table", ("nested",)),
    ("bq2", "easy", "bigquery", 0.0, "string", ("nested", "documentation")),
    ("sf1", "easy", "snowflake", 1.0, "table", ()),
    ("sf2", "easy", "snowflake", 0.0, "table", ()),
    ("local1", "medium", "sqlite", 1.0, "string", ()),
    ("local2", "medium", "sqlite", 0.0, "table", ("documentation",)),
    ("local3", "hard", "sqlite", 0.0, "table", ()),
    ("dbt1", "unrated", "duckdb", 1.0, "database", ("dbt",)),
    ("dbt2", "unrated", "duckdb", 0.0, "database", ("dbt",)),
    ("pg1", "unrated", "postgres", 0.0, "database", ()),
]


def scripted_run(tmp_path: Path) -> RunData:
    results = [
        InstanceResult(i, s, None if s else "wrong_result", None, s, s, d, e)
        for i, d, e, s, _, _ in OUTCOMES
    ]
    tasks = {
        i: Task(i, "spider2", "q", "db", e, extra={"answer_type": a}, features=f)  # type: ignore[arg-type]
        for i, _, e, _, a, f in OUTCOMES
    }
    records = {
        i: InstanceRecord(i, RecordStatus.OK, prompt_tokens=1000, completion_tokens=100, cost=0.02)
        for i, *_ in OUTCOMES
    }
    folder = tmp_path / "trajectories"
    folder.mkdir()
    plans = {"bq1": ["GetTables", "ExecuteSQL", "Terminate"], "local1": ["ExecuteSQL", "Terminate"]}
    for instance_id, names in plans.items():
        steps = [{"action": {"name": n}} for n in names]
        payload = {"instance_id": instance_id, "status": "terminated", "steps": steps}
        (folder / f"{instance_id}.json").write_text(json.dumps(payload))
    return RunData(
        "scripted",
        tmp_path,
        results,
        config={"benchmark": "spider2", "method": "spider-agent", "model": "m"},
        records=records,
        features={i: t.features for i, t in tasks.items()},
        tasks=tasks,
    )


def test_table3_layout(tmp_path: Path) -> None:
    section = paper_tables.table3([scripted_run(tmp_path)])
    assert section.columns == [
        "run",
        "Easy",
        "Medium",
        "Hard",
        "Overall (rated)",
        "Unrated",
        "Overall",
    ]
    assert section.rows == [
        [
            "scripted (spider-agent, m)",
            "50.00 (n=4)",
            "50.00 (n=2)",
            "0.00 (n=1)",
            "42.86 (n=7)",
            "33.33 (n=3)",
            "40.00 (n=10)",
        ]
    ]


def test_table8_answer_types_and_both_feature_rows(tmp_path: Path) -> None:
    run = scripted_run(tmp_path)
    table8 = paper_tables.table8([run])
    assert table8.columns[1:] == ["BigQuery", "Snowflake", "Local", "DBT", "Postgres", "ClickHouse"]
    assert table8.rows[0][1:] == [
        "50.00 (n=2)",
        "50.00 (n=2)",
        "33.33 (n=3)",
        "50.00 (n=2)",
        "0.00 (n=1)",
        "",
    ]
    answers = paper_tables.by_answer_type([run])
    assert answers.rows[0][1:] == ["50.00 (n=2)", "40.00 (n=5)", "33.33 (n=3)"]
    docs = paper_tables.feature_table([run], "Table 6", "documentation", "documentation")
    assert docs.rows == [
        ["with documentation", "0.00 (n=2)"],
        ["without documentation", "50.00 (n=8)"],
    ]
    titles = [s.title for s in paper_tables.sections([run])]
    assert any(t.startswith("Table 5") for t in titles)
    assert any(t.startswith("Table 7") for t in titles)


def test_actions_steps_and_cost(tmp_path: Path) -> None:
    run = scripted_run(tmp_path)
    figure = paper_tables.actions_per_turn(run)
    assert figure is not None
    assert figure.columns == ["turn", "ExecuteSQL", "GetTables", "Terminate"]
    assert figure.rows == [["1", "1", "1", "0"], ["2", "1", "0", "1"], ["3", "0", "0", "1"]]
    steps = paper_tables.steps_per_task([run])
    assert steps is not None and steps.rows[0][1:5] == ["2", "2.50", "2.5", "3"]
    cost = paper_tables.cost_per_instance([run])
    assert cost is not None and cost.rows[0][1:] == ["10", "0.0200", "1000", "100", "0.2000"]


def test_lite_runs_get_both_feature_rows_but_no_agentic_tables(tmp_path: Path) -> None:
    run = scripted_run(tmp_path)
    lite = RunData(**{**vars(run), "config": {"benchmark": "spider2-lite"}})
    found = {s.title: s for s in paper_tables.sections([lite])}
    assert not any(t.startswith(("Table 3", "Table 8")) for t in found)
    nested = found["Table 7: nested columns: success rate (%) with / without"]
    assert nested.rows == [
        ["with nested columns", "50.00 (n=2)"],
        ["without nested columns", "37.50 (n=8)"],
    ]
