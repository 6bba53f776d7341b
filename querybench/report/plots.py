"""The report's plots, drawn offline by matplotlib to SVG text inlined in the HTML page.

Score by difficulty and by engine, pass@k curves (runs with several samples per task), cost
against score (one point per run) and the error breakdown. No pyplot and no global backend:
each figure is a bare `Figure` saved as SVG with a fixed hash salt and no date, so the same
runs give the same bytes. Without matplotlib (`pip install 'querybench[report]'`),
`render_plots` returns None and the page keeps its tables.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from querybench.errors import ErrorCode
from querybench.evaluation.detail import Difference
from querybench.report.compare import by_difficulty, by_engine
from querybench.report.runs import RunData
from querybench.report.taxonomy import diagnose

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1"]
MISSING_NOTE = (
    "plots need matplotlib (pip install 'querybench[report]'); the tables hold the same numbers"
)


@dataclass(frozen=True)
class Plot:
    title: str
    svg: str


def matplotlib_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def render_plots(runs: Sequence[RunData]) -> list[Plot] | None:
    """Every plot the runs have data for, in reading order; None without matplotlib."""
    if not matplotlib_available():
        return None
    names = [run.name for run in runs]
    figures: list[tuple[str, Figure]] = []
    for title, section in (
        ("score by difficulty", by_difficulty(runs)),
        ("score by engine", by_engine(runs)),
    ):
        if section.values and set(section.values) != {"unknown"}:
            figures.append((title, _grouped_bars(section.values, names, "score %")))
    curves = pass_at_k_curves(runs)
    if curves:
        figures.append(("pass@k", _pass_at_k(curves)))
    figures.append(("cost vs score", _cost_vs_score(runs)))
    errors = error_counts(runs)
    if any(errors):
        figures.append(("error breakdown", _error_breakdown(errors, runs)))
    return [Plot(title, _svg(figure, f"plot{i}")) for i, (title, figure) in enumerate(figures)]


def pass_at_k_curves(runs: Sequence[RunData]) -> dict[str, list[tuple[int, float]]]:
    """Run name -> (k, pass@k) points, for runs that drew more than one sample per task."""
    out = {}
    for run in runs:
        curve = run.summary.pass_at_k or {}
        if len(curve) > 1 or int(run.config.get("n") or 1) > 1:
            points = sorted((int(k), float(v)) for k, v in curve.items())
            if points:
                out[run.name] = points
    return out


def error_counts(runs: Sequence[RunData]) -> list[Counter[str]]:
    """Failed instances per taxonomy category, one counter per run."""
    out = []
    for run in runs:
        counts: Counter[str] = Counter()
        for r in run.results:
            found = diagnose(r, run.records.get(r.instance_id))
            if found is not None:
                counts[found.category] += 1
        out.append(counts)
    return out


def count_bars(title: str, counts: Sequence[tuple[str, float]], label: str) -> Plot:
    """One horizontal bar per (name, value), in the order given (`tasks stats`)."""
    figure, ax = _figure(len(counts))
    names = [name for name, _ in counts]
    bars = ax.barh(range(len(counts)), [v for _, v in counts], 0.7, color=PALETTE[0])
    ax.bar_label(bars, fmt="%g", fontsize=8, padding=2)
    ax.set_yticks(range(len(counts)), names)
    ax.invert_yaxis()
    ax.set_xlabel(label)
    return Plot(title, _svg(figure, _slug(title)))


def histogram(title: str, values: Sequence[float], label: str, bins: int = 30) -> Plot:
    """The distribution of `values` (`tasks stats`: gold SQL tokens, columns per database)."""
    figure, ax = _figure(10)
    ax.hist(values, bins=bins, color=PALETTE[0])
    ax.set_xlabel(label)
    ax.set_ylabel("count")
    return Plot(title, _svg(figure, _slug(title)))


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _figure(rows: int) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.5, max(2.2, 0.5 + 0.32 * rows)), layout="constrained")
    return figure, figure.add_subplot()


def _grouped_bars(values: dict[str, list[float | None]], runs: Sequence[str], label: str) -> Figure:
    groups = list(values)
    figure, ax = _figure(len(groups) * max(1, len(runs)))
    height = 0.8 / max(1, len(runs))
    for i, run in enumerate(runs):
        ys = [g + i * height for g in range(len(groups))]
        xs = [100 * (values[name][i] or 0.0) for name in groups]
        bars = ax.barh(ys, xs, height * 0.9, color=PALETTE[i % len(PALETTE)], label=run)
        ax.bar_label(bars, fmt="%.1f", fontsize=8, padding=2)
    ax.set_yticks([g + (len(runs) - 1) * height / 2 for g in range(len(groups))], groups)
    ax.invert_yaxis()
    ax.set_xlim(0, 110)
    ax.set_xlabel(label)
    ax.legend(fontsize=8, loc="lower right")
    return figure


def _pass_at_k(curves: dict[str, list[tuple[int, float]]]) -> Figure:
    figure, ax = _figure(8)
    for i, (run, points) in enumerate(curves.items()):
        ks = [k for k, _ in points]
        ax.plot(
            ks, [100 * v for _, v in points], marker="o", color=PALETTE[i % len(PALETTE)], label=run
        )
    ax.set_xlabel("k (samples drawn)")
    ax.set_ylabel("pass@k %")
    ax.set_ylim(0, 105)
    ax.set_xticks(sorted({k for points in curves.values() for k, _ in points}))
    ax.legend(fontsize=8)
    return figure


def _cost_vs_score(runs: Sequence[RunData]) -> Figure:
    """Cost per task when any run cost money, else tokens per task (labelled runs are free)."""
    figure, ax = _figure(8)
    costs = [sum(r.cost for r in run.records.values()) / (len(run.results) or 1) for run in runs]
    tokens = [
        sum(r.prompt_tokens + r.completion_tokens for r in run.records.values())
        / (len(run.results) or 1)
        for run in runs
    ]
    use_cost = any(costs)
    xs = costs if use_cost else tokens
    for i, run in enumerate(runs):
        score = 100 * sum(r.score for r in run.results) / (len(run.results) or 1)
        ax.scatter([xs[i]], [score], color=PALETTE[i % len(PALETTE)], s=50, label=run.name)
        ax.annotate(run.name, (xs[i], score), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_xlabel("cost per task ($)" if use_cost else "tokens per task (no run cost money)")
    ax.set_ylabel("score % (all tasks)")
    ax.set_ylim(-5, 105)
    if not any(xs):
        ax.set_xlim(-1, 1)
    ax.legend(fontsize=8)
    return figure


# One colour per category, the same in every report (run colours are the PALETTE's).
CATEGORY_COLORS: dict[str, str] = {
    ErrorCode.PARSE_ERROR: "#9c755f",
    ErrorCode.EXEC_ERROR: "#e15759",
    ErrorCode.TIMEOUT: "#b07aa1",
    ErrorCode.REFUSED_WRITE: "#ff9da7",
    ErrorCode.MODEL_ERROR: "#79706e",
    Difference.EMPTY_RESULT: "#edc948",
    Difference.WRONG_COLUMNS: "#f28e2b",
    Difference.WRONG_ROWS: "#76b7b2",
    Difference.WRONG_ORDER: "#59a14f",
    Difference.WRONG_VALUES: "#4e79a7",
    ErrorCode.MISSING_PREDICTION: "#bab0ac",
}


def _error_breakdown(counts: list[Counter[str]], runs: Sequence[RunData]) -> Figure:
    """Stacked bars, one per run: each category's share of the run's tasks."""
    categories = sorted(
        {c for counter in counts for c in counter}, key=lambda c: (-sum(x[c] for x in counts), c)
    )
    figure, ax = _figure(len(runs) + 2)
    left = [0.0] * len(runs)
    for category in categories:
        widths = [
            100 * counter.get(category, 0) / (len(run.results) or 1)
            for counter, run in zip(counts, runs, strict=True)
        ]
        color = CATEGORY_COLORS.get(category, "#d4a6c8")
        ax.barh(range(len(runs)), widths, left=left, color=color, label=category)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_yticks(range(len(runs)), [run.name for run in runs])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of the run's tasks, by failure category")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return figure


_ID = re.compile(r'(\bid="|url\(#|xlink:href="#)')


def _svg(figure: Figure, prefix: str) -> str:
    """The figure as an inline `<svg>` element: deterministic, ids unique on the page."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"querybench-{prefix}", "svg.fonttype": "none"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    return _ID.sub(lambda m: f"{m.group(1)}{prefix}-", text)
