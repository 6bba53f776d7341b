"""`report --html`: the dataset statistics plots of the tasks the runs cover (the plots of
`tasks stats --html`, from `report/dataset_stats.py`), rendered in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.evaluation.record import InstanceResult
from tests.test_report_trajectories import _chromium
from tests.test_tasks_stats import SCHEMA, build_root


def _report(tmp_path: Path, covered: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """`report --html` over a results file of `covered` on the built Spider 2.0-Lite root."""
    monkeypatch.setenv("QUERYBENCH_DATA", str(build_root(tmp_path) / "spider2" / ".."))
    results = tmp_path / "lite.jsonl"
    lines = [json.dumps(InstanceResult(iid, 1.0).to_json()) for iid in covered]
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "report" / "report.html"
    args = ["report", str(results), "--benchmark", "spider2-lite", "--html", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return str(out)


def _captions(page: str, kind: str) -> list[str]:
    return re.findall(rf'<figure class="{kind}"><figcaption>([^<]*)</figcaption>', page)


def test_the_report_plots_the_statistics_of_the_tasks_its_runs_cover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = Path(_report(tmp_path, ["bq901", "local901"], monkeypatch)).read_text("utf-8")
    assert "dataset statistics of the tasks the runs cover" in page
    captions = _captions(page, "dataset-plot")
    assert "spider2-lite: tasks by type" in captions
    assert "spider2-lite: tasks by difficulty" in captions
    assert "spider2-lite: gold SQL tokens (sqlglot)" in captions
    assert "spider2-lite: columns per database" in captions
    assert "spider2-lite: functions the gold SQL calls (top 20)" in captions
    # the run's own plots stay apart, under their heading
    assert _captions(page, "plot") and 'id="no-plots"' not in page


def test_the_covered_tasks_are_the_runs_not_the_benchmarks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """local901 alone: one SQLite task, without the BigQuery database whose metadata is here,
    so no columns plot, and no functions plot (its gold SQL calls none)."""
    page = Path(_report(tmp_path, ["local901"], monkeypatch)).read_text("utf-8")
    captions = _captions(page, "dataset-plot")
    assert "spider2-lite: tasks by type" in captions
    assert "spider2-lite: gold SQL tokens (sqlglot)" in captions
    assert "spider2-lite: columns per database" not in captions
    assert "spider2-lite: functions the gold SQL calls (top 20)" not in captions


def test_the_report_with_dataset_plots_renders_in_headless_chromium(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("chromium") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium not installed")
        pytest.skip("chromium not installed (apt-get install chromium)")
    page = Path(_report(tmp_path, ["bq901", "bq902", "local901"], monkeypatch))
    dom = _chromium(page, tmp_path / "ud-dom", "--dump-dom").stdout
    assert dom.count('<figure class="dataset-plot">') >= 5
    assert re.search(r'<figure class="dataset-plot"><figcaption>[^<]*</figcaption>\s*<svg', dom)
    shot = tmp_path / "report.png"
    _chromium(page, tmp_path / "ud-shot", f"--screenshot={shot}", "--window-size=1000,3000")
    assert shot.stat().st_size > 1000


def test_damaged_metadata_leaves_the_report_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DDL.csv cut inside its quotes: the tasks cannot be loaded (the loader's feature tags
    read it), so the report has the scores without the dataset plots, and no traceback."""
    page = Path(_report_damaged(tmp_path, monkeypatch)).read_text("utf-8")
    assert '<figure class="dataset-plot">' not in page
    assert "dataset statistics of the tasks" not in page
    assert '<details class="instance"' in page and '<figure class="plot">' in page


def _report_damaged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    data = build_root(tmp_path)
    ddl = data / SCHEMA / "DDL.csv"
    ddl.write_text('table_name,ddl\nt,"CREATE TABLE t (\n  a INT64', encoding="utf-8")
    monkeypatch.setenv("QUERYBENCH_DATA", str(data))
    results = tmp_path / "lite.jsonl"
    results.write_text(json.dumps(InstanceResult("bq901", 1.0).to_json()) + "\n", "utf-8")
    out = tmp_path / "report" / "report.html"
    args = ["report", str(results), "--benchmark", "spider2-lite", "--html", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return str(out)
