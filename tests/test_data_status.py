"""`data status` on the shared data: every count checked against one computed here from the raw
files (task files, database files), not through querybench's loaders."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.data.status import benchmark_status
from tests.conftest import as_new_user, require_data


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared data as the only data with content; no user data, no credentials."""
    root = require_data("spider2", "spider2-lite", "spider2-lite.jsonl").parents[2]
    as_new_user(monkeypatch, tmp_path, root)
    return root


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_spider1_counts(shared: Path) -> None:
    dev = json.loads((shared / "spider1" / "dev.json").read_text())
    dbs = {e["db_id"] for e in dev}
    present = {d for d in dbs if (shared / "spider1" / d / f"{d}.sqlite").is_file()}
    runnable = sum(e["db_id"] in present for e in dev)
    # the data README's own subset file lists the questions whose database is here
    subset = json.loads((shared / "spider1" / "dev_subset_available_dbs.json").read_text())
    assert runnable == len(subset)
    status = benchmark_status("spider1")
    assert (status.total, status.runnable) == (len(dev), runnable)
    items = {i.what: i.state for i in status.items}
    assert items["databases"] == f"{len(present)} of {len(dbs)} (SQLite)"
    assert status.line() == (
        f"spider1: {runnable} of {len(dev)} tasks can run here; {len(dev) - runnable} of "
        f"{len(dev)} local tasks lack their database (fix: querybench data fetch spider1)"
    )


def test_spider2_lite_counts(shared: Path) -> None:
    tasks = _lines(shared / "spider2" / "spider2-lite" / "spider2-lite.jsonl")
    local = [t for t in tasks if str(t["instance_id"]).startswith("local")]
    files = {p.stem for p in (shared / "spider2-lite-local").glob("*.sqlite")}
    with_db = sum(t["db"] in files for t in local)
    metadata = shared / "spider2" / "spider2-lite" / "resource" / "databases"
    folders = {
        engine: {p.name.lower().replace("-", "_") for p in (metadata / engine).iterdir()}
        for engine in ("bigquery", "snowflake")
    }
    cloud = [t for t in tasks if t not in local]
    described = sum(
        str(t["db"]).lower().replace("-", "_")
        in folders["snowflake" if str(t["instance_id"]).startswith("sf") else "bigquery"]
        for t in cloud
    )
    status = benchmark_status("spider2-lite")
    assert (status.total, status.runnable) == (len(tasks), with_db)
    gaps = {g.reason: g.count for g in status.gaps}
    assert gaps == {
        f"of {len(local)} local tasks lack their database": len(local) - with_db,
        "BigQuery / Snowflake tasks have neither a built emulation nor credentials": described,
        "tasks have no schema metadata here": len(cloud) - described,
    }
    items = {i.what: i.state for i in status.items}
    local_dbs = {t["db"] for t in local}
    assert items["databases"] == f"{len(local_dbs & files)} of {len(local_dbs)} (SQLite)"
    cloud_dbs = {t["db"] for t in tasks if not str(t["instance_id"]).startswith("local")}
    assert items["emulation files"] == f"0 of {len(cloud_dbs)} databases"
    assert items["Snowflake credentials"].startswith("not found: only the unfilled template")
    gold = shared / "spider2" / "spider2-lite" / "evaluation_suite" / "gold"
    specs = {str(s["instance_id"]) for s in _lines(gold / "spider2lite_eval.jsonl")}
    results = {re.sub(r"_[a-z]$", "", p.stem) for p in gold.glob("exec_result/*.csv")}
    sqls = {p.stem for p in gold.glob("sql/*.sql")}
    with_gold = {str(t["instance_id"]) for t in tasks} & specs & (results | sqls)
    assert items["gold"] == f"{len(with_gold)} of {len(tasks)} tasks in {gold}"
    assert (len(tasks), len(local), with_db) == (547, 135, 29)  # the figures as of this copy


def test_snow_dbt_and_bird_counts(shared: Path) -> None:
    snow = _lines(shared / "spider2" / "spider2-snow" / "spider2-snow.jsonl")
    status = benchmark_status("spider2-snow")
    assert (status.total, status.runnable) == (len(snow), 0)
    dbt_dir = shared / "spider2" / "spider2-dbt" / "examples"
    dbt = _lines(dbt_dir / "spider2-dbt.jsonl")
    started = sum(any((dbt_dir / str(t["instance_id"])).glob("*.duckdb")) for t in dbt)
    status = benchmark_status("spider2-dbt")
    assert (status.total, status.runnable) == (len(dbt), started)
    for benchmark, name in (("bird", "dev.json"), ("bird-mini-dev", "mini_dev_sqlite.json")):
        entries = json.loads((shared / "bird" / name).read_text())
        status = benchmark_status(benchmark)
        assert (status.total, status.runnable) == (len(entries), 0)  # no BIRD database here
        dbs = Counter(e["db_id"] for e in entries)
        assert {i.what: i.state for i in status.items}["databases"] == f"0 of {len(dbs)} (SQLite)"
    assert benchmark_status("bird-train").line() == (
        "bird-train: no task file here (fix: querybench data fetch bird-train)"
    )


def test_status_command_prints_a_table_and_the_line(shared: Path) -> None:
    result = CliRunner().invoke(app, ["data", "status", "spider1"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "databases" in result.output and "19 of 20 (SQLite)" in result.output
    assert "spider1: 972 of 1034 tasks can run here" in result.output
    bad = CliRunner().invoke(app, ["data", "status", "spider9"])
    assert bad.exit_code == 2 and "no status for 'spider9'" in bad.output


def test_run_says_up_front_why_tasks_cannot_run(shared: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    dev = json.loads((shared / "spider1" / "dev.json").read_text())
    here = {p.parent.name for p in (shared / "spider1").glob("*/*.sqlite")}
    absent = next(i for i, e in enumerate(dev) if e["db_id"] not in here)
    ids = f"0,{absent}"  # the first task's database is here
    args = ["run", "spider1", "--model", "oracle", "--ids", ids, "--out", str(out)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    line = (
        "data: spider1: 1 of 2 selected tasks can run here; 1 local tasks lack their "
        "database (fix: querybench data fetch spider1); --runnable runs only the 1 that can"
    )
    assert line in result.output
    assert result.output.index(line) < result.output.index("score ")


def test_the_line_docs_data_md_quotes_is_the_one_printed(shared: Path) -> None:
    # docs/data.md quoted a line from before the cloud gap was split in two (412 tasks, one fix)
    docs = (Path(__file__).parents[1] / "docs" / "data.md").read_text(encoding="utf-8")
    quoted = re.search(r"\n    (spider2-lite: \d+ of 547 .*?)\n\n", docs, re.DOTALL)
    assert quoted is not None
    assert " ".join(quoted.group(1).split()) == benchmark_status("spider2-lite").line()


def test_a_narrow_console_gets_each_fix_command_whole(shared: Path) -> None:
    # rich cut them to `querybench data fetch spider2-l…`, a command that cannot be copied
    result = CliRunner().invoke(app, ["data", "status", "spider2-lite"], env={"COLUMNS": "40"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output and "┃" not in result.output
    assert "fix querybench data fetch spider2-lite" in result.output


def test_a_credentials_key_that_is_a_fifo_is_unreadable_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GOOGLE_APPLICATION_CREDENTIALS naming a FIFO: a plain read waits for a writer for ever
    (in `data status`, the runnable rule, every eval); it is refused as unreadable instead."""
    import threading

    from querybench.data.credentials import find_bigquery

    fifo = tmp_path / "key.json"
    os.mkfifo(fifo)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fifo))
    found: list[object] = []
    worker = threading.Thread(target=lambda: found.append(find_bigquery()), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "find_bigquery blocked on a FIFO"
    assert "not a readable JSON key" in str(getattr(found[0], "problem", ""))
