"""Acceptance: a report over real runs, opened and clicked through in headless Chromium.

Two Spider 1.0 runs made here (the labelled `oracle` and `constant` models on the first dev
questions) and an exec_result evaluation of Spider 2.0-Lite's official sample submission
folder are reported together; the HTML opens in Chromium without console errors, a click goes
from the summary to an instance's detail and back, and a screenshot is kept.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from tests.conftest import require_data

pytestmark = [pytest.mark.slow, pytest.mark.data]

CHROMIUM = "/usr/bin/chromium"
SAMPLE = ("spider2", "spider2-lite", "evaluation_suite", "example_submission_folder_csv")
LIMIT = "10"


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def report_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_data("spider1", "dev.json")
    sample = require_data(*SAMPLE)
    root = tmp_path_factory.mktemp("acceptance")
    out = root / "report" / "report.html"
    scored = root / "sample.jsonl"
    run = ["run", "spider1", "--method", "zero-shot", "--limit", LIMIT]
    constant = ["--model", "constant", "--constant-sql", "SELECT 1"]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("QUERYBENCH_CACHE", str(root / "cache"))  # no shared cache: fresh runs
        _invoke([*run, "--model", "oracle", "--out", str(root / "oracle")])
        _invoke([*run, *constant, "--out", str(root / "constant")])
        _invoke(["eval", "spider2-lite", "--predictions", str(sample), "--output", str(scored)])
        runs = [str(root / "oracle"), str(root / "constant"), str(scored)]
        options = ["--benchmark", "spider2-lite", "--predictions", str(sample)]
        _invoke(["report", *runs, *options, "--html", str(out)])
    return out


def test_report_over_two_runs_and_the_sample_submission(report_html: Path) -> None:
    page = report_html.read_text(encoding="utf-8")
    assert "oracle (zero-shot, oracle)" in page and "constant (zero-shot, constant)" in page
    # matplotlib is in the dev extra the tests install: all four plots, never the fallback note
    assert page.count('<figure class="plot">') == 4 and 'id="no-plots"' not in page
    # the dataset statistics of the tasks each benchmark's runs cover, as `tasks stats` plots them
    assert "spider1: tasks by difficulty" in page and "spider2-lite: tasks by difficulty" in page
    assert page.count('<details class="instance"') == 10 + 547  # spider1 ids differ from lite's
    assert "How many singers do we have?" in page  # the question of Spider 1.0 dev #0
    assert 'href="#i-0"' in page  # a flip links to its detail
    # the constant's SQL diffed against the gold
    assert "SELECT <del>count(*) FROM singer</del><ins>1</ins>" in page
    # the sample's result beside the gold alternative nearest it (b has its shape, a does not)
    assert "gold <code>bq003_b.csv</code>" in page
    # Spider 1.0 keeps no result files: both queries' first rows are read from the database,
    # labelled once (it said "gold gold query" and "predicted predicted query")
    assert "gold <code>SQL, run here</code>" in page
    assert "predicted <code>SQL, run here</code>" in page
    assert "gold query</code>" not in page and "predicted query</code>" not in page


def _browser_available() -> None:
    reason = ""
    if shutil.which("chromium") is None and not Path(CHROMIUM).exists():
        reason = "chromium not installed (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "playwright not installed (pip install -e '.[dev]')"
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def test_click_from_the_summary_to_an_instance_and_back(report_html: Path, tmp_path: Path) -> None:
    _browser_available()
    from playwright.sync_api import expect, sync_playwright

    errors: list[str] = []
    shot = tmp_path / "report.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=shutil.which("chromium") or CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu"],
        )
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(report_html.as_uri())
            expect(page.locator("h1#top")).to_be_in_viewport()
            assert page.locator("figure.plot svg").count() == 4

            # summary (the flips table) -> the detail of instance 0
            page.locator('table a[href="#i-0"]').first.click()
            detail = page.locator("details#i-0")
            expect(detail).to_have_attribute("open", "")
            expect(detail).to_be_in_viewport()
            expect(detail.locator(".question")).to_have_text("How many singers do we have?")
            expect(detail.locator('.run[data-run="constant"] .verdict')).to_have_text(
                "wrong_values"
            )
            expect(detail.locator('.run[data-run="constant"] del').first).to_be_visible()
            page.screenshot(path=str(shot))

            # ... and back to the summary
            detail.locator("a.back").click()
            expect(page.locator("h1#top")).to_be_in_viewport()
            expect(detail.locator(".question")).not_to_be_in_viewport()

            # the filter finds a Spider 2.0 instance, whose result sits beside the gold's
            page.fill("#q", "bq003")
            sample = page.locator("details#i-bq003")
            sample.locator("summary").click()
            expect(sample.locator("td.diff").first).to_be_visible()
            expect(page.locator("details#i-bq001")).to_be_hidden()
        finally:
            browser.close()
    assert errors == []
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000
