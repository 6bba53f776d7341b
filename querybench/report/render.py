"""Sections laid out for the terminal (rich), as Markdown, and as one self-contained HTML file.

The HTML needs no network: CSS is inline, plots are matplotlib SVG inlined in the page (tables
and a note stand in without matplotlib), and each instance links to its detail further down the
same page (`details.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from rich.console import Console
from rich.markup import escape as escape_markup
from rich.table import Table

from querybench.report.compare import Section
from querybench.report.dataset_stats import covered_plots
from querybench.report.details import CSS as DETAILS_CSS
from querybench.report.details import instance_details
from querybench.report.plots import MISSING_NOTE, PALETTE, Plot, render_plots
from querybench.report.runs import RunData
from querybench.report.terminal import stacked, table_width


def print_sections(sections: Sequence[Section], console: Console) -> None:
    for section in sections:
        if not section.rows:  # no table of headers alone: say there is nothing
            note = f" ({section.note})" if section.note else ""
            console.print(f"[italic]{escape_markup(section.title)}: none{escape_markup(note)}")
            continue
        if table_width(section.columns, [section.rows]) > console.width:  # rich would cut
            text = stacked(section.title, section.columns, [section.rows], console.width)
            note = f"\n{section.note}" if section.note else ""
            console.print(
                text + note + "\n", markup=False, highlight=False, emoji=False, soft_wrap=True
            )
            continue
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
figure{margin:1em 0}figcaption{font-weight:600}svg{max-width:100%;height:auto}
"""


def _legend(runs: Sequence[str]) -> str:
    spans = "".join(
        f'<span><i style="background:{PALETTE[i % len(PALETTE)]}"></i>{escape(name)}</span>'
        for i, name in enumerate(runs)
    )
    return f'<div class="legend">{spans}</div>'


def _table(section: Section, link_first: bool = False) -> str:
    if not section.rows:
        return '<p class="note">none</p>'
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


FILTER_JS = """
document.getElementById('q').addEventListener('input',function(e){
var q=e.target.value.toLowerCase();
document.querySelectorAll('#instances details').forEach(function(d){
d.style.display=d.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});
function openHash(){var el=document.getElementById(decodeURIComponent(location.hash.slice(1)));
if(el&&el.tagName==='DETAILS'){el.open=true;el.style.display='';el.scrollIntoView();}}
window.addEventListener('hashchange',openHash);openHash();
"""


def _plots(plots: list[Plot] | None, heading: str = "plots", kind: str = "plot") -> str:
    """The plots under `heading`, each a `<figure class=kind>`; the note without matplotlib."""
    top = f'<h2 id="{kind}s">{escape(heading)}</h2>'
    if plots is None:
        return f'{top}<p class="note" id="no-{kind}s">{escape(MISSING_NOTE)}</p>'
    figures = "".join(
        f'<figure class="{kind}"><figcaption>{escape(p.title)}</figcaption>{p.svg}</figure>'
        for p in plots
    )
    return f"{top}{figures}"


def _section(section: Section) -> str:
    note = f'<p class="note">{escape(section.note)}</p>' if section.note else ""
    table = _table(section, link_first=section.title == "flips")
    return f"<h2>{escape(section.title)}</h2>{note}{table}"


def _page(title: str, body: Sequence[str], script: str = "") -> str:
    scripts = f"<script>{script}</script>" if script else ""
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title><style>{CSS}{DETAILS_CSS}</style></head><body>{''.join(body)}"
        f"{scripts}</body></html>\n"
    )


def html(sections: Sequence[Section], runs: Sequence[RunData], title: str) -> str:
    names = [run.name for run in runs]
    body = [f'<h1 id="top">{escape(title)}</h1>', _legend(names)]
    for section in sections:
        body.append(_section(section))
        if section.title == "overall":
            body.append(_plots(render_plots(runs)))
            body.append(_dataset_plots(runs))
    body.append(
        '<h2>instances</h2><p><input id="q" placeholder="filter instances (id, error, '
        'SQL...)"></p><div id="instances">' + instance_details(runs) + "</div>"
    )
    return _page(title, body, FILTER_JS)


def _dataset_plots(runs: Sequence[RunData]) -> str:
    """The dataset statistics plots of the tasks the runs cover ("" when no run's tasks could
    be loaded here, damaged metadata among the reasons: `benchmark_tasks` leaves them out)."""
    plots = covered_plots(runs)
    if plots == []:
        return ""
    return _plots(plots, "dataset statistics of the tasks the runs cover", "dataset-plot")


def tables_html(sections: Sequence[Section], plots: list[Plot] | None, title: str) -> str:
    """A page of tables and their plots alone (no runs: `tasks stats --html`)."""
    body = [f'<h1 id="top">{escape(title)}</h1>', *map(_section, sections), _plots(plots)]
    return _page(title, body)
