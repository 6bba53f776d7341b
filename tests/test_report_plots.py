"""Report plots: matplotlib SVG inlined, deterministic, and a page that still renders without
matplotlib."""

from __future__ import annotations

import builtins
import json
import re
from pathlib import Path
from typing import Any

import pytest

from querybench.report import compare, plots, render
from querybench.report.runs import load_run
from tests.test_report_compare import two_runs


def test_plots_are_inline_svg_and_deterministic(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    runs = [load_run(p) for p in two_runs(tmp_path)]
    first = plots.render_plots(runs)
    assert first is not None
    titles = [p.title for p in first]
    assert titles == ["score by difficulty", "score by engine", "cost vs score", "error breakdown"]
    assert first == plots.render_plots(runs)  # the same bytes every time
    for plot in first:
        assert plot.svg.startswith("<svg") and plot.svg.rstrip().endswith("</svg>")
        assert "<dc:date>" not in plot.svg
    ids = [i for p in first for i in re.findall(r'\bid="([^"]+)"', p.svg)]
    assert len(ids) == len(set(ids))  # several plots on one page share no id


def test_pass_at_k_curve_from_a_sampled_run(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    a, _ = two_runs(tmp_path)
    summary = {"wall_s": 1.0, "pass_at_k": {"1": 0.5, "2": 0.75, "4": 0.9}}
    (a / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    config = json.loads((a / "config.json").read_text(encoding="utf-8")) | {"n": 4}
    (a / "config.json").write_text(json.dumps(config), encoding="utf-8")
    runs = [load_run(a)]
    assert plots.pass_at_k_curves(runs) == {"base": [(1, 0.5), (2, 0.75), (4, 0.9)]}
    found = plots.render_plots(runs)
    assert found is not None and "pass@k" in [p.title for p in found]


def test_error_breakdown_counts_categories(tmp_path: Path) -> None:
    runs = [load_run(p) for p in two_runs(tmp_path)]
    base, better = plots.error_counts(runs)
    assert base == {"missing_prediction": 1, "exec_error": 1}
    assert better == {"empty_result": 1}


def test_without_matplotlib_the_page_keeps_its_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    runs = [load_run(p) for p in two_runs(tmp_path)]
    assert plots.render_plots(runs) is None
    page = render.html(compare.sections(runs), runs, "t")
    assert 'id="no-plots"' in page and "querybench[report]" in page
    assert "<svg" not in page
    assert "<h2>by difficulty</h2><table>" in page and 'id="i-bq1"' in page
