"""Sections laid out for the terminal (rich), as Markdown, and as one self-contained HTML file.

The HTML needs no network: CSS is inline, plots are hand-made SVG bars, and each instance links
to its detail further down the same page (scores and errors per run, the predicted SQL).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from rich.console import Console
from rich.table import Table

from querybench.report.compare import Section
from querybench.report.runs import RunData

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1"]


def print_sections(sections: Sequence[Section], console: Console) -> None:
    for section in sections:
        table = Table(title=section.title, caption=section.note or None)
        for i, column in enumerate(section.columns):
            table.add_column(column, justify="left" if i == 0 else "right")
        for row in section.rows:
            table.add_row(*row)
        console.print(table)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(sections: Sequence[Section], title: str) -> str:
    lines = [f"# {title}", ""]
    for section in sections:
        lines += [f"## {section.title}", ""]
        if section.note:
            lines += [f"_{section.note}_", ""]
        if not section.rows:
            lines += ["(none)", ""]
            continue
        lines.append("| " + " | ".join(_md_cell(c) or " " for c in section.columns) + " |")
        lines.append(
            "|" + "|".join("---" if i == 0 else "---:" for i in range(len(section.columns))) + "|"
        )
        for row in section.rows:
            lines.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
        lines.append("")
    return "\n".join(lines)


CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#666;font-style:italic}.pass{color:#1a7f37}.fail{color:#b42318}
pre{background:#f6f8fa;padding:6px;white-space:pre-wrap;margin:2px 0}
.legend span{display:inline-block;margin-right:1em}.legend i{display:inline-block;width:10px;
height:10px;margin-right:4px}details{margin:4px 0}input{padding:4px;width:20em}
"""


def svg_bars(section: Section, runs: Sequence[str], percent: bool = True) -> str:
    """Grouped horizontal bars: one group per row of the section, one bar per run."""
    items = [(name, vals) for name, vals in section.values.items()]
    if not items:
        return ""
    top = max((v for _, vals in items for v in vals if v is not None), default=0.0)
    scale = 1.0 if percent else (top or 1.0)
    bar_h, gap, left, width = 12, 8, 180, 420
    height = len(items) * (len(runs) * bar_h + gap) + gap
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 70}" '
        f'height="{height}" role="img" aria-label="{escape(section.title)}">'
    ]
    y = gap
    for name, vals in items:
        parts.append(
            f'<text x="{left - 6}" y="{y + len(runs) * bar_h / 2 + 4}" '
            f'text-anchor="end" font-size="12">{escape(name[:28])}</text>'
        )
        for i, value in enumerate(vals):
            if value is not None:
                w = width * (value / scale if scale else 0.0)
                label = f"{100 * value:.1f}%" if percent else f"{value:g}"
                parts.append(
                    f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" '
                    f'fill="{PALETTE[i % len(PALETTE)]}"><title>{escape(runs[i])}: '
                    f"{label}</title></rect>"
                )
                parts.append(
                    f'<text x="{left + w + 4:.1f}" y="{y + bar_h - 3}" '
                    f'font-size="10">{label}</text>'
                )
            y += bar_h
        y += gap
    parts.append("</svg>")
    return "".join(parts)


def _legend(runs: Sequence[str]) -> str:
    spans = "".join(
        f'<span><i style="background:{PALETTE[i % len(PALETTE)]}"></i>{escape(name)}</span>'
        for i, name in enumerate(runs)
    )
    return f'<div class="legend">{spans}</div>'


def _table(section: Section, link_first: bool = False) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in section.columns)
    body = []
    for row in section.rows:
        cells = []
        for i, cell in enumerate(row):
            text = escape(cell)
            if i == 0 and link_first:
                text = f'<a href="#i-{escape(cell)}">{text}</a>'
            cells.append(f'<td class="{"num" if i else ""}">{text}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


PLOTTED = {"by difficulty", "by engine", "by task feature", "pass@k", "errors", "overall"}


def _instances(runs: Sequence[RunData]) -> str:
    """One detail block per instance: each run's verdict and predicted SQL."""
    ids: dict[str, None] = {}
    for run in runs:
        for r in run.results:
            ids.setdefault(r.instance_id, None)
    by_run = [{r.instance_id: r for r in run.results} for run in runs]
    blocks = []
    for iid in ids:
        rows, passed = [], []
        for run, results in zip(runs, by_run, strict=True):
            found = results.get(iid)
            if found is None:
                continue
            r = found
            ok = r.score == 1.0
            passed.append(ok)
            record = run.records.get(iid)
            sql = f"<pre>{escape(record.sql)}</pre>" if record and record.sql else ""
            scores = f"{r.score:g}"
            if r.official_score is not None:
                scores += f" (official {r.official_score:g}, strict {r.strict_score or 0:g})"
            traj = ""
            if (run.trajectory_dir / f"{iid}.json").is_file():
                target = f"{escape(run.name)}.trajectories.html#t-{escape(iid)}"
                traj = f' <a href="{target}">trajectory</a>'
            rows.append(
                f'<tr><td>{escape(run.name)}</td><td class="{"pass" if ok else "fail"}">'
                f"{scores}</td><td>{escape(r.error or '')}</td><td>{escape(r.message or '')}"
                f"{traj}</td><td>{sql}</td></tr>"
            )
        mark = "all pass" if all(passed) else "none pass" if not any(passed) else "mixed"
        blocks.append(
            f'<details id="i-{escape(iid)}" data-id="{escape(iid)}"><summary>'
            f"{escape(iid)} — {mark}</summary><table><tr><th>run</th><th>score</th>"
            f"<th>error</th><th>message</th><th>predicted SQL</th></tr>{''.join(rows)}"
            '</table><a href="#top">back to summary</a></details>'
        )
    return "".join(blocks)


FILTER_JS = """
document.getElementById('q').addEventListener('input',function(e){
var q=e.target.value.toLowerCase();
document.querySelectorAll('#instances details').forEach(function(d){
d.style.display=d.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});
window.addEventListener('hashchange',function(){
var el=document.getElementById(location.hash.slice(1));
if(el&&el.tagName==='DETAILS'){el.open=true;}});
"""


def html(sections: Sequence[Section], runs: Sequence[RunData], title: str) -> str:
    names = [run.name for run in runs]
    body = [f'<h1 id="top">{escape(title)}</h1>', _legend(names)]
    for section in sections:
        body.append(f"<h2>{escape(section.title)}</h2>")
        if section.note:
            body.append(f'<p class="note">{escape(section.note)}</p>')
        body.append(_table(section, link_first=section.title == "flips"))
        if section.title in PLOTTED and section.values:
            body.append(svg_bars(section, names, percent=section.title != "errors"))
    body.append(
        '<h2>instances</h2><p><input id="q" placeholder="filter instances (id, error, '
        'SQL...)"></p><div id="instances">' + _instances(runs) + "</div>"
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title><style>{CSS}</style></head><body>{''.join(body)}"
        f"<script>{FILTER_JS}</script></body></html>\n"
    )
