"""The trajectory viewer: one static HTML page per agent run, every instance's steps (thought,
action, observation, timing, tokens), filterable by text and by outcome, no network needed.

Reads `RUNDIR/trajectories/<instance_id>.json` as `methods/spider_agent.write_trajectory`
writes it; an unreadable file is listed as such instead of failing the page.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from querybench import json_input
from querybench.errors import DataError
from querybench.report.runs import RunData
from querybench.tasks.input_files import read_text

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
pre{background:#f6f8fa;padding:6px;white-space:pre-wrap;margin:2px 0;max-height:24em;overflow:auto}
details.task{border:1px solid #ddd;margin:6px 0;padding:4px 8px}.pass{color:#1a7f37}
.fail{color:#b42318}.step{border-left:3px solid #4e79a7;margin:8px 0;padding-left:8px}
.meta{color:#666;font-size:12px}input,select{padding:4px;margin-right:8px}
"""

SCRIPT = """
function applyFilter(){var q=document.getElementById('q').value.toLowerCase();
var o=document.getElementById('outcome').value;var shown=0;
document.querySelectorAll('details.task').forEach(function(d){
var ok=d.textContent.toLowerCase().indexOf(q)>=0&&(o===''||d.dataset.outcome===o);
d.style.display=ok?'':'none';if(ok){shown++;}});
document.getElementById('count').textContent=shown;}
document.getElementById('q').addEventListener('input',applyFilter);
document.getElementById('outcome').addEventListener('change',applyFilter);
function openHash(){var el=document.getElementById(location.hash.slice(1));
if(el&&el.tagName==='DETAILS'){el.open=true;}}
window.addEventListener('hashchange',openHash);openHash();
"""


def _shaped(data: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The trajectory and its steps, if they have the shape the agent writes (an object, its
    steps a list of objects, its final SQL text); else a `ValueError` saying which part not:
    a run folder may come from anywhere."""
    if not isinstance(data, dict):
        raise ValueError(f"not a JSON object but {type(data).__name__}")
    steps = data.get("steps") or []
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise ValueError("its steps are not a list of objects")
    if not isinstance(data.get("final_sql") or "", str):
        raise ValueError("its final SQL is not text")
    return data, steps


def _seconds(value: Any) -> float:
    """A step's time as written, or 0 for anything but a number."""
    return float(value) if isinstance(value, int | float) else 0.0


def _step(step: dict[str, Any]) -> str:
    action = step.get("action")
    action_text = json.dumps(action, ensure_ascii=False, indent=1) if action else "(no action)"
    model_s, action_s = _seconds(step.get("model_s")), _seconds(step.get("action_s"))
    meta = (
        f"model {model_s:.2f}s · action {action_s:.2f}s"
        f" · tokens {step.get('prompt_tokens', 0)} in / {step.get('completion_tokens', 0)} out"
    )
    if step.get("dropped_steps"):
        meta += f" · {step['dropped_steps']} earlier steps dropped from the history"
    thought = str(step.get("thought") or "")
    if not thought and not action:  # unreadable reply: show what the model said
        thought = str(step.get("reply") or "")
    return (
        f'<div class="step"><b>step {escape(str(step.get("index", "?")))}</b> '
        f'<span class="meta">{escape(meta)}</span>'
        f"<div>thought</div><pre>{escape(thought)}</pre>"
        f"<div>action</div><pre>{escape(action_text)}</pre>"
        f"<div>observation</div><pre>{escape(str(step.get('observation') or ''))}</pre></div>"
    )


def _task(run: RunData, instance_id: str) -> str:
    result = next((r for r in run.results if r.instance_id == instance_id), None)
    outcome = "unscored" if result is None else "pass" if result.score == 1.0 else "fail"
    verdict = "" if result is None else f"score {result.score:g} {result.error or ''}"
    path = run.trajectory_dir / f"{instance_id}.json"
    try:
        data, steps = _shaped(json_input.loads(read_text(path, "trajectory", run.trajectory_dir)))
    except (DataError, ValueError) as exc:
        body = f"<p>unreadable trajectory: {escape(str(exc))}</p>"
        data, steps = {}, []
    else:
        body = "".join(_step(s) for s in steps)
    final = data.get("final_sql")
    head = (
        f'{escape(instance_id)} — <span class="{outcome}">{escape(outcome)}</span> · '
        f"{escape(str(data.get('status', '?')))} · {len(steps)} steps · {escape(verdict)}"
    )
    message = f"<p>{escape(result.message)}</p>" if result and result.message else ""
    final_block = f"<div>final SQL</div><pre>{escape(final)}</pre>" if final else ""
    return (
        f'<details class="task" id="t-{escape(instance_id)}" data-outcome="{outcome}">'
        f"<summary>{head}</summary>{message}{final_block}{body}</details>"
    )


def trajectory_page(run: RunData) -> str:
    ids = run.trajectory_ids()
    title = f"trajectories: {run.label}"
    controls = (
        '<p><input id="q" placeholder="search steps (SQL, error, thought...)">'
        '<select id="outcome"><option value="">all</option><option value="pass">pass</option>'
        '<option value="fail">fail</option><option value="unscored">unscored</option></select>'
        f'<span id="count">{len(ids)}</span> of {len(ids)} instances</p>'
    )
    tasks = "".join(_task(run, iid) for iid in ids)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title><style>{CSS}</style></head><body><h1>{escape(title)}</h1>{controls}"
        f"{tasks}<script>{SCRIPT}</script></body></html>\n"
    )
