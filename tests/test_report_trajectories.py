"""The trajectory viewer: one static page per agent run, written beside the HTML report."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.evaluation.record import InstanceResult
from querybench.report.runs import load_run
from querybench.report.trajectories import trajectory_page
from tests.test_report_compare import write_run

STEPS = [
    {
        "index": 0,
        "reply": "...",
        "thought": "Look at the <tables>.",
        "action": {"name": "ExecuteSQL", "sql_query": "SELECT * FROM singer"},
        "observation": "no such column: nme",
        "model_s": 0.5,
        "action_s": 0.01,
        "prompt_tokens": 600,
        "completion_tokens": 30,
    },
    {
        "index": 1,
        "reply": "garbled",
        "thought": "",
        "action": None,
        "observation": "could not parse",
        "dropped_steps": 1,
    },
]


def agent_run(tmp_path: Path) -> Path:
    results = [InstanceResult("a1", 1.0), InstanceResult("a2", 0.0, "wrong_result", "diff")]
    trajectories: dict[str, dict[str, object]] = {
        "a1": {
            "instance_id": "a1",
            "status": "terminated",
            "final_sql": "SELECT 1",
            "steps": STEPS,
        },
        "a2": {"instance_id": "a2", "status": "max_steps", "steps": STEPS[:1]},
    }
    run = write_run(tmp_path / "agent", results, method="spider-agent", trajectories=trajectories)
    (run / "trajectories" / "a3.json").write_text("{torn", encoding="utf-8")
    return run


def test_page_lists_every_instance_with_its_steps(tmp_path: Path) -> None:
    page = trajectory_page(load_run(agent_run(tmp_path), with_features=False))
    assert page.count('<details class="task"') == 3
    assert 'id="t-a1" data-outcome="pass"' in page
    assert 'id="t-a2" data-outcome="fail"' in page
    assert 'id="t-a3" data-outcome="unscored"' in page and "unreadable trajectory" in page
    assert "Look at the &lt;tables&gt;." in page  # escaped
    assert "SELECT * FROM singer" in page and "no such column: nme" in page
    assert "garbled" in page  # an unparsed reply is shown as the model said it
    assert "1 earlier steps dropped" in page
    assert "http://" not in page and "https://" not in page


def test_report_html_writes_the_viewer_and_links_to_it(tmp_path: Path) -> None:
    out = tmp_path / "out" / "report.html"
    result = CliRunner().invoke(app, ["report", str(agent_run(tmp_path)), "--html", str(out)])
    assert result.exit_code == 0, result.output
    viewer = out.parent / "agent.trajectories.html"
    assert viewer.is_file()
    assert 'href="agent.trajectories.html#t-a1"' in out.read_text(encoding="utf-8")


def _chromium(page: Path, user_data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless chromium on `page` with `args`, quiet and with a profile of its own."""
    return subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={user_data}",
            *args,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_pages_render_in_headless_chromium(tmp_path: Path) -> None:
    if shutil.which("chromium") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium not installed")
        pytest.skip("chromium not installed (apt-get install chromium)")
    out = tmp_path / "out" / "report.html"
    CliRunner().invoke(app, ["report", str(agent_run(tmp_path)), "--html", str(out)])
    for page in (out, out.parent / "agent.trajectories.html"):
        shot = tmp_path / f"{page.stem}.png"
        dom = _chromium(page, tmp_path / ("ud-" + page.stem), "--dump-dom").stdout
        assert "<details" in dom
        _chromium(
            page, tmp_path / ("ud2-" + page.stem), f"--screenshot={shot}", "--window-size=1000,800"
        )
        assert shot.stat().st_size > 1000


def test_a_trajectory_of_the_wrong_shape_is_shown_as_unreadable(tmp_path: Path) -> None:
    """A run folder comes from anywhere: a trajectory whose fields have other types than the
    agent writes (steps not objects, a number for the final SQL) is that task's "unreadable
    trajectory", with the reason; the page still lists every task."""
    results = [InstanceResult(i, 0.0, "wrong_result") for i in ("b1", "b2", "b3", "b4", "b5")]
    trajectories: dict[str, dict[str, object]] = {
        "b1": {"steps": ["a step", 5]},
        "b2": {"final_sql": 5, "steps": []},
        "b3": {"steps": {"index": 0}},
        "b5": {
            "status": "done",
            "final_sql": "SELECT 2",
            "steps": [{"index": "<b>", "model_s": "x"}],
        },
    }
    run = write_run(tmp_path / "odd", results, method="spider-agent", trajectories=trajectories)
    (run / "trajectories" / "b4.json").write_text("[1, 2]", encoding="utf-8")
    page = trajectory_page(load_run(run, with_features=False))
    assert page.count('<details class="task"') == 5
    assert page.count("unreadable trajectory") == 4
    assert "SELECT 2" in page and "&lt;b&gt;" in page and "<b><b>" not in page
