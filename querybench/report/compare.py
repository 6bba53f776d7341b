"""Runs side by side: one `Section` (a titled table of text cells) per view of the scores.

Every view is computed here once; `render.py` only lays sections out for the terminal, Markdown
or HTML. Scores are percentages over every task of the run (the honest denominator), with the
submitted-only score beside them; Spider 2.0 cells read `official / strict`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from querybench.benchmarks import lookup
from querybench.errors import ErrorCode
from querybench.evaluation.record import InstanceResult
from querybench.report.linking import schema_linking
from querybench.report.runs import RunData
from querybench.report.summary import Group, group_order
from querybench.report.summary import group_scores as _group
from querybench.report.taxonomy import diagnose

Key = Callable[[InstanceResult], Sequence[str]]


@dataclass(frozen=True)
class Section:
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    # numeric score per (row, run) for plots: row name -> one value per run (None: absent)
    values: dict[str, list[float | None]] = field(default_factory=dict)


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f}"


def _cell(group: Group | None, show_n: bool) -> str:
    if group is None or group.n == 0:
        return ""
    text = _pct(group.score)
    if group.official is not None and group.strict is not None:
        text = f"{_pct(group.official)} / {_pct(group.strict)}"
    return f"{text} (n={group.n})" if show_n else text


def _groups(results: Sequence[InstanceResult], key: Key) -> dict[str, Group]:
    buckets: dict[str, list[InstanceResult]] = {}
    for r in results:
        for name in key(r) or ("unknown",):
            buckets.setdefault(name, []).append(r)
    return {name: _group(name, rs) for name, rs in buckets.items()}


def grouped_section(
    title: str, runs: Sequence[RunData], key_of: Callable[[RunData], Key]
) -> Section:
    per_run = [_groups(run.results, key_of(run)) for run in runs]
    names = sorted({n for groups in per_run for n in groups}, key=group_order)
    sizes = {n: {g[n].n for g in per_run if n in g} for n in names}
    rows, values = [], {}
    for name in names:
        same_n = len(sizes[name]) == 1 and all(name in g for g in per_run)
        # runs over different task sets: each run's own n, in run order (the column was empty)
        counts = [str(g[name].n) if name in g else "0" for g in per_run]
        n = counts[0] if same_n else " / ".join(counts)
        rows.append([name, n, *(_cell(g.get(name), False) for g in per_run)])
        values[name] = [g[name].score if name in g else None for g in per_run]
    return Section(title, ["group", "n", *(r.name for r in runs)], rows, values=values)


def overall_section(runs: Sequence[RunData]) -> Section:
    spider2 = any(r.official_score is not None for run in runs for r in run.results)
    rows: list[list[str]] = [["tasks", *(str(len(run.results)) for run in runs)]]
    submitted = [
        [r for r in run.results if r.error != ErrorCode.MISSING_PREDICTION] for run in runs
    ]
    rows.append(["submitted", *(str(len(s)) for s in submitted)])
    rows.append(["correct", *(str(sum(r.score == 1.0 for r in run.results)) for run in runs)])
    whole = [_group("", run.results) for run in runs]
    subs = [_group("", s) for s in submitted]
    rows.append(["score % (all tasks)", *(_pct(g.score) for g in whole)])
    rows.append(["score % (submitted)", *(_pct(g.score) for g in subs)])
    runnable = [_runnable_results(run) for run in runs]
    if any(len(r) != len(run.results) for r, run in zip(runnable, runs, strict=True)):
        rows.append(["runnable here", *(str(len(r)) for r in runnable)])
        rows.append(["score % (runnable here)", *(_pct(_group("", r).score) for r in runnable)])
    if spider2:
        for pick in ("official", "strict"):
            rows.append([f"{pick} % (all tasks)", *(_pct(getattr(g, pick)) for g in whole)])
            rows.append([f"{pick} % (submitted)", *(_pct(getattr(g, pick)) for g in subs)])
    values: dict[str, list[float | None]] = {"score": [g.score for g in whole]}
    notes = [f"{run.name}: {run.partial}" for run in runs if run.partial]
    notes += [different_tasks_note(runs)] if different_tasks_note(runs) else []
    return Section(
        "overall", ["", *(run.label for run in runs)], rows, note="; ".join(notes), values=values
    )


def _runnable_results(run: RunData) -> list[InstanceResult]:
    """The results of the tasks that can run here: by the rule of `tasks/runnable.py` when the
    run's tasks are here (the number `data status`, `run` and `eval` give), else those not
    `engine_unavailable`."""
    if run.runnable is None:
        return [r for r in run.results if r.error != ErrorCode.ENGINE_UNAVAILABLE]
    return [
        r
        for r in run.results
        if r.instance_id in run.runnable and r.error != ErrorCode.ENGINE_UNAVAILABLE
    ]


def different_tasks_note(runs: Sequence[RunData]) -> str:
    """A warning when the runs do not cover the same tasks: their scores are over different
    denominators, and only the common instances compare one to one."""
    sets = [{r.instance_id for r in run.results} for run in runs]
    if len(sets) < 2 or all(s == sets[0] for s in sets):
        return ""
    common = set.intersection(*sets)
    sizes = ", ".join(f"{run.name} {len(s)}" for run, s in zip(runs, sets, strict=True))
    return (
        f"warning: the runs cover different task sets ({sizes} tasks, {len(common)} in "
        "common): each score is over its own run's tasks"
    )


def by_difficulty(runs: Sequence[RunData]) -> Section:
    return grouped_section("by difficulty", runs, lambda run: lambda r: [r.difficulty or "unknown"])


def by_engine(runs: Sequence[RunData]) -> Section:
    return grouped_section("by engine", runs, lambda run: lambda r: [r.engine or "unknown"])


def by_feature(runs: Sequence[RunData]) -> Section:
    """Tasks counted under every feature tag they carry (the paper's Tables 3-8)."""

    def key_of(run: RunData) -> Key:
        return lambda r: run.features.get(r.instance_id) or ("(no tag)",)

    section = grouped_section("by task feature", runs, key_of)
    return Section(**{**vars(section), "note": "a task counts under each of its tags"})


def declared_sections(runs: Sequence[RunData]) -> list[Section]:
    """The groupings the runs' benchmark declares (`BenchmarkSpec.report_groups`: Spider-DK by
    knowledge type), each task under its `extra` field's value."""
    found = {b for run in runs if (b := run.benchmark) is not None}
    groups = [g for name in sorted(found) if (s := lookup(name)) for g in s.report_groups]
    out = []
    for group in dict.fromkeys(groups):

        def key_of(run: RunData, field: str = group.field) -> Key:
            def key(r: InstanceResult) -> list[str]:
                task = run.tasks.get(r.instance_id)
                value = task.extra.get(field) if task is not None else None
                return [str(value) if value is not None else "unknown"]

            return key

        out.append(grouped_section(group.title, runs, key_of))
    return out


def errors_section(runs: Sequence[RunData]) -> Section:
    """Failed instances by taxonomy category (`exec_error` split by the engine's error class)."""
    counts = [Counter(error_label(run, r) for r in run.results) for run in runs]
    for counter in counts:
        counter.pop("", None)
    names = sorted(
        {c for counter in counts for c in counter}, key=lambda c: (-sum(x[c] for x in counts), c)
    )
    rows = [[name, *(str(c.get(name, 0)) for c in counts)] for name in names]
    values: dict[str, list[float | None]] = {
        name: [float(c.get(name, 0)) for c in counts] for name in names
    }
    return Section("errors", ["error", *(run.name for run in runs)], rows, values=values)


def error_label(run: RunData, result: InstanceResult) -> str:
    """The instance's taxonomy label (`exec_error: no such column`, `wrong_rows`, ...); empty
    when it passed."""
    found = diagnose(result, run.records.get(result.instance_id))
    return "" if found is None else found.label


def failure_text(run: RunData, result: InstanceResult) -> str:
    """`exec_error: no such table: t`: the label, then the message without repeating the
    engine's error class the label already ends with."""
    found = diagnose(result, run.records.get(result.instance_id))
    message = (result.message or "").strip()
    if found is None:
        return message
    if found.detail and message.lower().startswith(found.detail):
        return f"{found.category}: {message}"
    return f"{found.label}: {message}" if message else found.label


def linking_section(runs: Sequence[RunData]) -> Section | None:
    """Tables read against the gold's, over instances with both queries; None when no run has
    any."""
    cells, any_linked = [], False
    for run in runs:
        links = []
        for r in run.results:
            task = run.tasks.get(r.instance_id)
            gold = task.gold.sql if task is not None else None
            engine = task.engine if task is not None else r.engine
            found = schema_linking(run.predicted_sql(r.instance_id), gold, engine)
            if found is not None:
                links.append((found, r.score == 1.0))
        any_linked = any_linked or bool(links)
        failed = [link for link, ok in links if not ok]
        cells.append(
            [
                str(len(links)),
                str(sum(link.exact for link, _ in links)),
                str(sum(bool(link.missing) for link, _ in links)),
                str(sum(bool(link.extra) for link, _ in links)),
                str(sum(bool(link.missing) for link in failed)),
            ]
        )
    if not any_linked:
        return None
    labels = [
        "instances with gold and predicted SQL",
        "same tables as the gold",
        "a gold table missing",
        "a table the gold does not read",
        "failed, with a gold table missing",
    ]
    rows = [[label, *(c[i] for c in cells)] for i, label in enumerate(labels)]
    note = "tables read (sqlglot), compared by name with the gold query's"
    return Section("schema linking", ["", *(run.name for run in runs)], rows, note=note)


def cost_section(runs: Sequence[RunData]) -> Section | None:
    """Tokens, cost and time from the records; None when no run has records."""
    if not any(run.records for run in runs):
        return None

    def totals(run: RunData) -> list[str]:
        recs = list(run.records.values())
        n = len(run.results) or 1
        prompt = sum(r.prompt_tokens for r in recs)
        completion = sum(r.completion_tokens for r in recs)
        cost = sum(r.cost for r in recs)
        wall = run.summary.wall_s
        model_s = sum(r.model_s for r in recs)
        return [
            f"{prompt:,}",
            f"{completion:,}",
            f"{(prompt + completion) / n:,.0f}",
            f"${cost:.4f}",
            f"${cost / n:.6f}",
            f"{model_s:.1f}",
            "" if wall is None else f"{float(wall):.1f}",
            str(sum(r.attempts for r in recs)),
            str(sum(r.cached for r in recs)),
        ]

    labels = [
        "prompt tokens",
        "completion tokens",
        "tokens / task",
        "cost",
        "cost / task",
        "model time s",
        "wall time s",
        "requests",
        "cached replies",
    ]
    cells = [totals(run) for run in runs]
    rows = [[label, *(c[i] for c in cells)] for i, label in enumerate(labels)]
    return Section("tokens, cost and time", ["", *(run.name for run in runs)], rows)


def pass_at_k_section(runs: Sequence[RunData]) -> Section | None:
    curves = [run.summary.pass_at_k or {} for run in runs]
    ks = sorted({k for c in curves for k in c}, key=int)
    if not ks:
        return None
    rows = [[f"pass@{k}", *(_pct(c.get(k)) for c in curves)] for k in ks]
    values = {f"pass@{k}": [c.get(k) for c in curves] for k in ks}
    return Section("pass@k", ["k", *(run.name for run in runs)], rows, values=values)


@dataclass(frozen=True)
class Flip:
    instance_id: str
    kind: str  # won | lost | official only | strict only
    runs: str  # which runs (or which run) the flip is between
    detail: str = ""


def flips(runs: Sequence[RunData]) -> list[Flip]:
    """Instances won or lost against the first run, and within each run, instances on which
    the official and strict scorings disagree."""
    out: list[Flip] = []
    if runs:
        base = {r.instance_id: r for r in runs[0].results}
        for run in runs[1:]:
            for r in run.results:
                before = base.get(r.instance_id)
                if before is None or (before.score == 1.0) == (r.score == 1.0):
                    continue
                kind = "won" if r.score == 1.0 else "lost"
                loser = before if kind == "won" else r
                loser_run = run if kind == "lost" else runs[0]
                detail = failure_text(loser_run, loser)
                out.append(Flip(r.instance_id, kind, f"{runs[0].name} -> {run.name}", detail))
    for run in runs:
        for r in run.results:
            if r.official_score is None or r.strict_score is None:
                continue
            if (r.official_score == 1.0) != (r.strict_score == 1.0):
                kind = "official only" if r.official_score == 1.0 else "strict only"
                out.append(Flip(r.instance_id, kind, run.name))
    return out


def flips_section(runs: Sequence[RunData]) -> Section:
    found = flips(runs)
    rows = [[f.instance_id, f.kind, f.runs, f.detail[:100]] for f in found]
    kinds = Counter(f.kind for f in found)
    note = ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items())) or "no flips"
    return Section("flips", ["instance", "flip", "runs", "detail"], rows, note=note)


def sections(runs: Sequence[RunData]) -> list[Section]:
    """Every view that has something to show, in reading order."""
    out = [overall_section(runs)]
    for build in (by_difficulty, by_engine):
        section = build(runs)
        if len(section.rows) > 1 or (section.rows and section.rows[0][0] != "unknown"):
            out.append(section)
    out += declared_sections(runs)
    if any(tags for run in runs for tags in run.features.values()):
        out.append(by_feature(runs))
    out.append(errors_section(runs))
    for optional in (linking_section(runs), pass_at_k_section(runs), cost_section(runs)):
        if optional is not None:
            out.append(optional)
    if len(runs) > 1 or any(r.official_score is not None for run in runs for r in run.results):
        out.append(flips_section(runs))
    return out
