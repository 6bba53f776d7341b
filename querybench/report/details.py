"""Per-instance detail of the HTML report: the question, the gold SQL, and for each run its
verdict in the error taxonomy, its SQL diffed against the gold, the tables it reads against the
gold's, the first rows of its result against the gold result, and its trajectory.

Results come from the CSV files already on disk (the gold result files of the benchmark's
data, the prediction's `<instance_id>.csv` of a Spider 2.0 run folder or a scored predictions
folder); among gold alternatives the one closest to the prediction is shown: the scorer's
`closest_gold` (most columns matched) where the result has it, else the nearest by shape. Where the
benchmark keeps no result files (Spider 1.0, BIRD) the first rows of both queries are read
again from the task's local SQLite database (read-only, a few rows, a short timeout). Without
either the detail says "not available".
"""

from __future__ import annotations

import csv
import difflib
import re
from collections.abc import Sequence
from html import escape
from pathlib import Path

from querybench.data.roots import data_root
from querybench.evaluation.record import InstanceResult
from querybench.file_digests import open_regular
from querybench.report.linking import schema_linking
from querybench.report.runs import RunData
from querybench.report.taxonomy import diagnose
from querybench.tasks.model import Task

MAX_ROWS = 8
MAX_COLUMNS = 12
QUERY_TIMEOUT = 5.0  # seconds for each query read again for a result diff
Head = tuple[list[str], list[list[str]], bool]  # header, first rows, whether there are more
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")

CSS = """
del{background:#ffd7d5;text-decoration:line-through}ins{background:#ccffd8;text-decoration:none}
td.diff{background:#fff1c2}.pair{display:flex;gap:1.5em;flex-wrap:wrap}.run{border-left:3px solid
#4e79a7;padding-left:8px;margin:8px 0}.na{color:#666;font-style:italic}.instance>summary{cursor:
pointer}
"""


def sql_diff(gold: str, predicted: str) -> str:
    """Word-level diff as HTML: gold-only text in `<del>`, prediction-only text in `<ins>`."""
    a, b = _TOKEN.findall(gold), _TOKEN.findall(predicted)
    out = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append(escape("".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f"<del>{escape(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{escape(''.join(b[j1:j2]))}</ins>")
    return "".join(out)


def read_head(path: Path, rows: int = MAX_ROWS) -> Head | None:
    """Header, first `rows` rows and whether there are more; None when unreadable."""
    try:
        fd, _ = open_regular(path)  # a FIFO in a run's predictions would never answer
        with open(fd, encoding="utf-8", errors="replace", newline="") as f:
            reader = csv.reader(f)
            header = next(reader, [])
            body: list[list[str]] = []
            for row in reader:
                if len(body) == rows:
                    return header, body, True
                body.append(row)
            return header, body, False
    except (OSError, csv.Error):
        return None


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(a)))
    except ValueError:
        return False


def _grid(
    header: list[str], rows: list[list[str]], more: bool, other: list[list[str]] | None
) -> str:
    """One result as a table; with `other`, cells that differ from it by position are marked."""
    head = "".join(f"<th>{escape(c)}</th>" for c in header[:MAX_COLUMNS])
    body = []
    for i, row in enumerate(rows):
        cells = []
        for j, cell in enumerate(row[:MAX_COLUMNS]):
            theirs = (
                other[i][j] if other is not None and i < len(other) and j < len(other[i]) else None
            )
            differs = other is not None and (theirs is None or not _same(cell, theirs))
            cells.append(f'<td class="{"diff" if differs else ""}">{escape(cell)}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    tail = f'<tr><td colspan="{len(header) or 1}">…</td></tr>' if more else ""
    return f"<table><tr>{head}</tr>{''.join(body)}{tail}</table>"


def result_diff(gold: Path | None, predicted: Path | None) -> str:
    """First rows of the gold result beside the prediction's, differing cells highlighted."""
    if gold is None or predicted is None:
        missing = " and ".join(
            name for name, p in (("gold", gold), ("predicted", predicted)) if p is None
        )
        return f'<p class="na">result diff not available (no {missing} result file)</p>'
    gold_head, pred_head = read_head(gold), read_head(predicted)
    if gold_head is None or pred_head is None:
        return '<p class="na">result diff not available (unreadable result file)</p>'
    return head_diff(gold_head, pred_head, gold.name, predicted.name)


def head_diff(gold: Head, predicted: Head, gold_name: str, predicted_name: str) -> str:
    """The two heads side by side, each under `gold <name>` / `predicted <name>` (a result
    file's name, or what was run)."""
    return (
        f'<div class="pair"><div><div>gold <code>{escape(gold_name)}</code></div>'
        f"{_grid(*gold, predicted[1])}</div>"
        f"<div><div>predicted <code>{escape(predicted_name)}</code></div>"
        f"{_grid(*predicted, gold[1])}</div></div>"
    )


QUERY_RUN_HERE = "SQL, run here"  # the label of rows read again from the local database


def closest_gold(golds: Sequence[Path], predicted: Path | None) -> Path | None:
    """The gold alternative nearest the prediction: the same width first, then the nearest
    row count, then the most cells equal by position (the first alternative when there is no
    prediction to compare)."""
    readable = [(p, h) for p in golds if p.is_file() and (h := read_head(p)) is not None]
    if not readable:
        return None
    pred = read_head(predicted) if predicted is not None else None
    if pred is None:
        return readable[0][0]

    def closeness(head: Head) -> tuple[bool, int, int]:
        header, rows, more = head
        length_gap = abs(len(rows) + more - len(pred[1]) - pred[2])
        cells = sum(
            _same(a, b)
            for row, other in zip(rows, pred[1], strict=False)
            for a, b in zip(row, other, strict=False)
        )
        return len(header) == len(pred[0]), -length_gap, cells

    return max(readable, key=lambda pair: closeness(pair[1]))[0]


def query_head(database: Path, sql: str) -> Head | str:
    """The first rows of `sql` on a local database, or why they cannot be shown."""
    from querybench.engines.pool import run_one

    body = sql.strip().rstrip(";").strip()
    wrapped = f"SELECT * FROM ({body}) LIMIT {MAX_ROWS + 1}"
    outcome = run_one(database, wrapped, timeout=QUERY_TIMEOUT, max_rows=MAX_ROWS + 1)
    if outcome.result is None:
        return f"{outcome.error.code if outcome.error else 'error'}: {outcome.error}"
    rows = [["" if v is None else str(v) for v in row] for row in outcome.result.rows]
    return list(outcome.result.columns), rows[:MAX_ROWS], len(rows) > MAX_ROWS


def _computed_diff(run: RunData, task: Task, predicted_sql: str | None) -> str | None:
    """Spider 1.0 / BIRD: both queries read again on the task's SQLite database."""
    from querybench.tasks.databases import task_database

    if task.engine != "sqlite" or not task.gold.sql or not predicted_sql:
        return None
    configured = run.config.get("data_dir")
    database = task_database(task, Path(configured) if configured else data_root())
    if database is None:
        return None
    gold, pred = query_head(database, task.gold.sql), query_head(database, predicted_sql)
    if isinstance(gold, str) or isinstance(pred, str):
        why = gold if isinstance(gold, str) else pred
        return f'<p class="na">result diff not available ({escape(str(why)[:200])})</p>'
    return head_diff(gold, pred, QUERY_RUN_HERE, QUERY_RUN_HERE)


def _results_block(run: RunData, r: InstanceResult, task: Task | None, sql: str | None) -> str:
    predicted = run.predicted_csv(r.instance_id)
    golds = [Path(f) for f in task.gold.result_files] if task is not None else []
    if not golds and task is not None and predicted is None:
        computed = _computed_diff(run, task, sql)
        if computed is not None:
            return computed
    closest = r.detail.closest_gold if r.detail is not None else None
    if closest is not None and closest < len(golds):  # the scorer's choice
        return result_diff(golds[closest], predicted)
    return result_diff(closest_gold(golds, predicted), predicted)


def _columns_line(r: InstanceResult, task: Task | None) -> str:
    """Which columns (0-based) of the closest gold the prediction matched, where known."""
    detail = r.detail
    if detail is None or not (detail.matched_columns or detail.missing_columns):
        return ""
    golds = task.gold.result_files if task is not None else ()
    closest = detail.closest_gold
    which = f" {Path(golds[closest]).name}" if closest is not None and closest < len(golds) else ""

    def listed(columns: tuple[int, ...]) -> str:
        return ", ".join(str(c) for c in columns) or "none"

    return (
        f"<div>closest gold{escape(which)}: columns matched {listed(detail.matched_columns)}; "
        f"missing {listed(detail.missing_columns)}</div>"
    )


def _run_block(run: RunData, r: InstanceResult, task: Task | None) -> str:
    iid = r.instance_id
    ok = r.score == 1.0
    scores = f"{r.score:g}"
    if r.official_score is not None:
        scores += f" (official {r.official_score:g}, strict {r.strict_score or 0:g})"
    found = diagnose(r, run.records.get(iid))
    verdict = "pass" if found is None else found.label
    message = f"<div>{escape(r.message)}</div>" if r.message else ""
    columns = _columns_line(r, task)
    traj = ""
    if (run.trajectory_dir / f"{iid}.json").is_file():
        target = f"{escape(run.name)}.trajectories.html#t-{escape(iid)}"
        traj = f' · <a href="{target}">trajectory (every step)</a>'
    gold_sql = task.gold.sql if task is not None else None
    predicted = run.predicted_sql(iid)
    if predicted and gold_sql:
        sql = (
            "<div>predicted SQL against the gold (<del>gold only</del> <ins>prediction only"
            f'</ins>)</div><pre class="sqldiff">{sql_diff(gold_sql, predicted)}</pre>'
        )
    elif predicted:
        sql = f"<div>predicted SQL</div><pre>{escape(predicted)}</pre>"
    else:
        sql = '<p class="na">predicted SQL not available</p>'
    engine = task.engine if task is not None else r.engine
    linking = schema_linking(predicted, gold_sql, engine)
    tables = ""
    if linking is not None:
        tables = (
            f"<div>tables: gold {escape(', '.join(linking.gold_tables) or '-')}; predicted "
            f"{escape(', '.join(linking.predicted_tables) or '-')}"
            + (f"; missing {escape(', '.join(linking.missing))}" if linking.missing else "")
            + (f"; extra {escape(', '.join(linking.extra))}" if linking.extra else "")
            + "</div>"
        )
    results = _results_block(run, r, task, predicted)
    return (
        f'<div class="run" data-run="{escape(run.name)}"><b>{escape(run.name)}</b> · '
        f'<span class="{"pass" if ok else "fail"}">{escape(scores)}</span> · '
        f'<span class="verdict">{escape(verdict)}</span>{traj}{message}{columns}{sql}{tables}'
        f"{results}</div>"
    )


def instance_details(runs: Sequence[RunData]) -> str:
    """One `<details id="i-<instance_id>">` block per instance, in first-seen order."""
    ids: dict[str, None] = {}
    for run in runs:
        for r in run.results:
            ids.setdefault(r.instance_id, None)
    by_run = [{r.instance_id: r for r in run.results} for run in runs]
    blocks = []
    for iid in ids:
        task = next((run.tasks[iid] for run in runs if iid in run.tasks), None)
        parts, passed, labels = [], [], []
        for run, results in zip(runs, by_run, strict=True):
            found_result = results.get(iid)
            if found_result is None:
                continue
            r = found_result
            passed.append(r.score == 1.0)
            found = diagnose(r, run.records.get(iid))
            labels.append(f"{run.name}: {'pass' if found is None else found.category}")
            parts.append(_run_block(run, r, task))
        mark = "all pass" if all(passed) else "none pass" if not any(passed) else "mixed"
        question = (
            f'<p class="question">{escape(task.question)}</p>'
            if task is not None
            else '<p class="na">question not available</p>'
        )
        gold = (
            f"<div>gold SQL</div><pre>{escape(task.gold.sql)}</pre>"
            if task is not None and task.gold.sql
            else '<p class="na">gold SQL not available</p>'
        )
        blocks.append(
            f'<details class="instance" id="i-{escape(iid)}" data-id="{escape(iid)}"><summary>'
            f"{escape(iid)} — {mark} · {escape('; '.join(labels))}</summary>{question}{gold}"
            f'{"".join(parts)}<p><a class="back" href="#top">back to summary</a></p></details>'
        )
    return "".join(blocks)
