"""The Spider 2.0 paper's tables, from any runs: Table 3 (success rate by difficulty, one row per
run), Table 8 (by database type), success by answer type, Tables 5-7 (with / without DBT,
documentation, nested columns; both rows of each, for lite and snow runs too), the actions used
at each turn (Figure 22), steps per task, how the agent's episodes ended (a column per
`AgentStatus`, `action_timeout` among them) and cost per instance (Table 19).

Success rates are percentages of the run's score (the scoring the run chose, official by
default) over every task in the group; `unrated` tasks (no gold-SQL token count) are shown apart
from the rated overall, so Table 3 can be set beside the paper's on the rated part.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Sequence

from querybench.agent.status import AgentStatus
from querybench.benchmarks import Family, family, is_agentic
from querybench.evaluation.record import InstanceResult
from querybench.report.compare import Section
from querybench.report.runs import RunData

DIFFICULTIES = ("easy", "medium", "hard")
DATABASE_TYPES = {
    "bigquery": "BigQuery",
    "snowflake": "Snowflake",
    "sqlite": "Local",
    "duckdb": "DBT",
    "postgres": "Postgres",
    "clickhouse": "ClickHouse",
}
ANSWER_TYPES = {"string": "string / number", "table": "table", "database": "database"}
FEATURE_TABLES = (
    ("Table 5: DBT", "dbt", "DBT project"),
    ("Table 6: documentation", "documentation", "external documentation"),
    ("Table 7: nested columns", "nested", "nested columns"),
)


def _rate(results: Sequence[InstanceResult]) -> str:
    if not results:
        return ""
    return f"{100 * sum(r.score for r in results) / len(results):.2f}"


def _rate_n(results: Sequence[InstanceResult]) -> str:
    return f"{_rate(results)} (n={len(results)})" if results else ""


def table3(runs: Sequence[RunData]) -> Section:
    """Success rate by difficulty: easy, medium, hard, overall over the rated tasks, then the
    unrated tasks and the overall over every task."""
    columns = ["run", *(d.capitalize() for d in DIFFICULTIES), "Overall (rated)", "Unrated"]
    rows = []
    for run in runs:
        by = {d: [r for r in run.results if r.difficulty == d] for d in DIFFICULTIES}
        rated = [r for r in run.results if r.difficulty in DIFFICULTIES]
        unrated = [r for r in run.results if r.difficulty not in DIFFICULTIES]
        cells = [_rate_n(by[d]) for d in DIFFICULTIES]
        rows.append([run.label, *cells, _rate_n(rated), _rate_n(unrated), _rate_n(run.results)])
    return Section(
        "Table 3: success rate (%) by difficulty",
        [*columns, "Overall"],
        rows,
        note="easy < 80 <= medium < 160 <= hard gold-SQL tokens; Overall counts every task",
    )


def _by_key(
    title: str, runs: Sequence[RunData], names: dict[str, str], key: Callable[..., str | None]
) -> Section:
    rows = []
    for run in runs:
        groups: dict[str, list[InstanceResult]] = {}
        for r in run.results:
            groups.setdefault(key(run, r) or "unknown", []).append(r)
        rows.append([run.label, *(_rate_n(groups.get(k, [])) for k in names)])
    return Section(title, ["run", *names.values()], rows)


def table8(runs: Sequence[RunData]) -> Section:
    return _by_key(
        "Table 8: success rate (%) by database type",
        runs,
        DATABASE_TYPES,
        lambda run, r: r.engine,
    )


def by_answer_type(runs: Sequence[RunData]) -> Section:
    def key(run: RunData, r: InstanceResult) -> str | None:
        task = run.tasks.get(r.instance_id)
        return str(task.extra.get("answer_type")) if task is not None else None

    return _by_key("success rate (%) by answer type", runs, ANSWER_TYPES, key)


def feature_table(runs: Sequence[RunData], title: str, tag: str, what: str) -> Section:
    """Both rows: the tasks with the feature and the tasks without it."""
    rows = []
    for label, has in ((f"with {what}", True), (f"without {what}", False)):
        cells = []
        for run in runs:
            kept = [r for r in run.results if (tag in run.features.get(r.instance_id, ())) == has]
            cells.append(_rate_n(kept))
        rows.append([label, *cells])
    return Section(
        f"{title}: success rate (%) with / without", ["", *(r.label for r in runs)], rows
    )


def _action_names(trajectory: dict[str, object]) -> list[str]:
    steps = trajectory.get("steps")
    names = []
    for step in steps if isinstance(steps, list) else []:
        action = step.get("action") if isinstance(step, dict) else None
        names.append(str(action.get("name")) if isinstance(action, dict) else "(unreadable)")
    return names


def actions_per_turn(run: RunData) -> Section | None:
    """Figure 22: how often each action is taken at each turn."""
    per_task = [_action_names(t) for t in run.trajectories]
    if not per_task:
        return None
    kinds = sorted({name for names in per_task for name in names})
    turns = max(len(names) for names in per_task)
    rows = []
    for turn in range(turns):
        counts = Counter(names[turn] for names in per_task if len(names) > turn)
        rows.append([str(turn + 1), *(str(counts.get(k, 0)) for k in kinds)])
    return Section(f"Figure 22: actions per turn ({run.name})", ["turn", *kinds], rows)


def steps_per_task(runs: Sequence[RunData]) -> Section | None:
    rows = []
    for run in runs:
        steps = [len(_action_names(t)) for t in run.trajectories]
        if not steps:
            continue
        rows.append(
            [
                run.label,
                str(len(steps)),
                f"{statistics.mean(steps):.2f}",
                f"{statistics.median(steps):g}",
                str(max(steps)),
            ]
        )
    if not rows:
        return None
    return Section("steps per task", ["run", "tasks", "mean", "median", "max"], rows)


def endings(runs: Sequence[RunData]) -> Section | None:
    """How each run's episodes ended: every status of the loop, then any other a trajectory
    holds (a run of another version)."""
    counts = {run.label: Counter(str(t.get("status")) for t in run.trajectories) for run in runs}
    counts = {label: c for label, c in counts.items() if c}
    if not counts:
        return None
    known = [str(s) for s in AgentStatus]
    other = sorted({k for c in counts.values() for k in c} - set(known))
    columns = [*known, *other]
    rows = [[label, *(str(c.get(k, 0)) for k in columns)] for label, c in counts.items()]
    return Section("how the agent's episodes ended", ["run", *columns], rows)


def cost_per_instance(runs: Sequence[RunData]) -> Section | None:
    """Table 19: average cost and tokens per instance."""
    rows = []
    for run in runs:
        records = list(run.records.values())
        if not records:
            continue
        n = len(records)
        rows.append(
            [
                run.label,
                str(n),
                f"{sum(r.cost for r in records) / n:.4f}",
                f"{sum(r.prompt_tokens for r in records) / n:.0f}",
                f"{sum(r.completion_tokens for r in records) / n:.0f}",
                f"{sum(r.cost for r in records):.4f}",
            ]
        )
    if not rows:
        return None
    columns = ["run", "instances", "cost / instance", "prompt tok", "completion tok", "total"]
    return Section("Table 19: cost per instance (USD)", columns, rows)


def sections(runs: Sequence[RunData]) -> list[Section]:
    """The paper's tables that the runs can fill: Spider 2.0's from Spider 2.0 runs, the agent's
    (steps, how episodes ended) from any run that kept trajectories."""
    spider2 = [run for run in runs if family(run.benchmark) is Family.SPIDER2]
    out: list[Section] = []
    agentic = [run for run in spider2 if is_agentic(run.benchmark)]
    if agentic:
        out += [table3(agentic), table8(agentic)]
        if any(run.tasks for run in agentic):
            out.append(by_answer_type(agentic))
    if any(run.features for run in spider2):
        for title, tag, what in FEATURE_TABLES:
            if any(tag in tags for run in spider2 for tags in run.features.values()):
                out.append(feature_table(spider2, title, tag, what))
    for run in spider2:
        figure = actions_per_turn(run)
        if figure is not None:
            out.append(figure)
    for optional in (steps_per_task(runs), endings(runs), cost_per_instance(spider2)):
        if optional is not None:
            out.append(optional)
    return out
