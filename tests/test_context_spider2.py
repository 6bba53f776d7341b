"""Context on the real Spider 2.0-lite metadata, run on a copy of the data without gold files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.context import build_context
from querybench.errors import DataError
from querybench.tasks.model import Task
from tests.conftest import require_data

_DBS = [("bigquery", "ga4"), ("sqlite", "E_commerce"), ("snowflake", "GITHUB_REPOS_DATE")]


@pytest.fixture(scope="module")
def no_gold_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Only task file, the few databases used here, documents and function docs: no gold SQL,
    no gold results, no `methods/gold-tables`."""
    lite = require_data("spider2", "spider2-lite")
    root = tmp_path_factory.mktemp("data")
    dest = root / "spider2" / "spider2-lite"
    (dest / "resource" / "syntax" / "bigquery_functions").mkdir(parents=True)
    shutil.copy(lite / "spider2-lite.jsonl", dest)
    for engine, db in _DBS:
        shutil.copytree(
            lite / "resource" / "databases" / engine / db,
            dest / "resource" / "databases" / engine / db,
        )
    shutil.copytree(lite / "resource" / "documents", dest / "resource" / "documents")
    fn = "bigquery_functions/bigquery_functions.json"
    shutil.copy(lite / "resource" / "syntax" / fn, dest / "resource" / "syntax" / fn)
    assert not (root / "spider2" / "methods").exists()
    assert not (dest / "evaluation_suite").exists()
    return root


def _task(iid: str, db: str, engine: str, question: str, doc: str | None = None) -> Task:
    return Task(iid, "spider2-lite", question, db, engine, doc)  # type: ignore[arg-type]


def test_ga4_daily_tables_are_one_family(no_gold_data: Path) -> None:
    task = _task(
        "bq011",
        "ga4",
        "bigquery",
        "distinct pseudo users with engagement time",
        "ga4_obfuscated_sample_ecommerce.events.md",
    )
    ctx = build_context(task, budget=8000, data=no_gold_data)
    assert ctx.tokens <= 8000
    assert len(ctx.families) == 1 and ctx.families[0].members == 92
    assert ctx.prompt.count("\n### bigquery-public-data.") == 1  # one entry, not 92
    assert "bigquery-public-data.ga4_obfuscated_sample_ecommerce.events_20210107" in ctx.tables
    assert "_TABLE_SUFFIX" in ctx.prompt and "event_params.value.int_value INT64" in ctx.prompt
    assert ctx.documents == ("ga4_obfuscated_sample_ecommerce.events.md",)
    assert ctx.functions


def test_multi_schema_snowflake_keeps_schema_names(no_gold_data: Path) -> None:
    task = _task("sf_x", "GITHUB_REPOS_DATE", "snowflake", "push events in 2016")
    ctx = build_context(task, budget=4000, data=no_gold_data)
    assert "GITHUB_REPOS_DATE.DAY._*" in ctx.prompt and "GITHUB_REPOS_DATE.YEAR._*" in ctx.prompt
    assert any(n.startswith("GITHUB_REPOS_DATE.MONTH.") for n in ctx.tables)
    assert ctx.tokens <= 4000


def test_missing_database_and_document_name_what_is_wrong(no_gold_data: Path) -> None:
    with pytest.raises(DataError, match="no schema metadata for database 'nowhere'"):
        build_context(_task("bq1", "nowhere", "bigquery", "q"), data=no_gold_data)
    with pytest.raises(DataError, match=r"document 'missing\.md' not found"):
        build_context(_task("bq1", "ga4", "bigquery", "q", "missing.md"), data=no_gold_data)


def test_cli_json_contract(no_gold_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYBENCH_DATA", str(no_gold_data))
    result = CliRunner().invoke(
        app, ["context", "spider2-lite", "local002", "--budget", "3000", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) >= {"prompt", "tokens", "tables", "families", "documents", "functions"}
    assert out["tokens"] <= 3000 and "orders" in out["tables"]
    bad = CliRunner().invoke(app, ["context", "spider2-lite", "nope"])
    assert bad.exit_code == 2 and "no task 'nope'" in bad.output


@pytest.mark.slow
def test_gold_tables_covered_at_8000_tokens() -> None:
    """The acceptance curve's 8k point on every lite task with metadata (gold tables are read
    here, by the test, never by the builder)."""
    root = require_data("spider2").parent
    from bench.bench_context import lite_tasks, with_metadata

    gold_file = root / "spider2" / "methods" / "gold-tables" / "spider2-lite-gold-tables.jsonl"
    gold = {
        r["instance_id"]: r["gold_tables"]
        for r in map(json.loads, gold_file.read_text(encoding="utf-8").splitlines())
    }
    tasks = [t for t in with_metadata(lite_tasks(root), root) if t.instance_id in gold]
    assert len(tasks) >= 448
    covered = 0
    for t in tasks:
        ctx = build_context(t, budget=8000, data=root)
        assert ctx.tokens <= 8000, t.instance_id
        shown = {n.lower() for n in ctx.tables}
        covered += all(g.lower() in shown for g in gold[t.instance_id])
    assert covered / len(tasks) >= 0.90
