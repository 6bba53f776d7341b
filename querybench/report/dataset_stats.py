"""`tasks stats BENCH`: the dataset statistics of the Spider 2.0 paper (its data statistics
table, the distribution figure and the appendix's breakdowns) computed from the task files,
the database metadata and the gold here.

Each statistic is set beside the figure the paper or the official README gives, where the
public release allows a comparison; where it does not, the note says how the two differ (the
release's answer types are not the paper's split; 94 agentic tasks carry no difficulty, having
no gold-SQL token count). Gold SQL is read with sqlglot in the task's dialect: tokens are its
tokenizer's, functions the distinct `Func` nodes of the parse. Columns per database count the
metadata's columns (a STRUCT or VARIANT column once; its nested fields are counted apart).
"""

from __future__ import annotations

import statistics as stats
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from querybench.engines.registry import dialect_label, sqlglot_dialect
from querybench.report.compare import Section
from querybench.report.plots import Plot, count_bars, histogram, matplotlib_available
from querybench.report.runs import RunData
from querybench.tasks.model import Task
from querybench.tasks.spider2_metadata import DatabaseSize, database_size
from querybench.tasks.sql_functions import parsed_function_names

DIFFICULTIES = ("easy", "medium", "hard")
_LEVELS = (*DIFFICULTIES, "extra")  # Spider 1.0's hardness adds a fourth
ANSWER_TYPES = ("table", "string", "database")
FEATURES = ("nested", "partitioned", "multi_schema", "functions", "documentation", "dbt")
PAPER = "paper"
README = "official README"
# A figure of the paper read in a secondary source, not in the paper's own text.
PAPER_AS_QUOTED = "paper, as emergentmind.com quotes it"


@dataclass(frozen=True)
class Reference:
    """A published figure: its value and where it is printed."""

    value: float
    source: str


@dataclass(frozen=True)
class Statistic:
    """One line: a count (`of` its denominator, for a percentage) or a mean, the published
    figure beside it, and what makes the two differ."""

    group: str
    name: str
    value: float | None  # None: nothing here to compute it from
    of: int | None = None
    reference: Reference | None = None
    note: str = ""

    @property
    def difference(self) -> str:
        """What differs from the published figure ("" when it agrees or there is none)."""
        if self.reference is None or self.value == self.reference.value:
            return self.note
        if self.value is None:
            gap = f"nothing here to compare with the {self.reference.source}"
        else:
            gap = f"{self.value - self.reference.value:+g} against the {self.reference.source}"
        return f"{gap}; {self.note}" if self.note else gap

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"group": self.group, "name": self.name, "value": self.value}
        if self.of is not None:
            out["of"] = self.of
        if self.reference is not None:
            out["reference"] = {"value": self.reference.value, "source": self.reference.source}
        if self.difference:
            out["note"] = self.difference
        return out


@dataclass(frozen=True)
class DatasetStats:
    benchmark: str
    statistics: tuple[Statistic, ...]
    gold_tokens: tuple[int, ...]  # per gold SQL here (the length distribution)
    columns_per_database: tuple[int, ...]  # per database with metadata here
    functions: tuple[tuple[str, int], ...]  # function -> gold SQLs calling it, most used first
    levels: tuple[str, ...] = ()  # the difficulty levels, in order
    type_by_level: tuple[tuple[str, tuple[int, ...]], ...] = ()  # type -> tasks per level

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "statistics": [s.to_json() for s in self.statistics],
            "type_by_difficulty": {
                kind: dict(zip(self.levels, counts, strict=True))
                for kind, counts in self.type_by_level
            },
            "gold_tokens": list(self.gold_tokens),
            "columns_per_database": list(self.columns_per_database),
            "functions": dict(self.functions),
        }


# The published figures, by (benchmark, group, statistic): the official README's table of
# settings and databases, the paper's answer types of the agentic 632 and its columns per
# database. One line per figure, each with where it was read; a statistic without one shows none.
_README_COUNTS = {
    "spider2": {"bigquery": 214, "snowflake": 198, "sqlite": 135, "duckdb": 68}
    | {"postgres": 10, "clickhouse": 7},
    "spider2-lite": {"bigquery": 214, "snowflake": 198, "sqlite": 135},
    "spider2-snow": {"snowflake": 547},
}
PUBLISHED: dict[tuple[str, str, str], Reference] = {
    **{
        (benchmark, "tasks", "tasks"): Reference(n, README)
        for benchmark, n in (
            ("spider2", 632),
            ("spider2-lite", 547),
            ("spider2-snow", 547),
            ("spider2-dbt", 68),
        )
    },
    **{
        (benchmark, "tasks by type", engine): Reference(n, README)
        for benchmark, counts in _README_COUNTS.items()
        for engine, n in counts.items()
    },
    # Columns per database: "Target databases average 812.1 columns (vs. 27 in Spider 1.0)",
    # emergentmind.com/topics/spider-2-0 on Lei et al. (arXiv 2411.07763); the paper's Table 2,
    # Figure 4 and Appendix B.8 were not to be read here, so their other figures (difficulty
    # split, tokens, nested columns, functions) are not entered.
    ("spider2", "databases", "columns per database (mean)"): Reference(812.1, PAPER_AS_QUOTED),
    ("spider2", "answer types", "table"): Reference(392, PAPER),
    ("spider2", "answer types", "string"): Reference(162, PAPER),
    ("spider2", "answer types", "database"): Reference(78, PAPER),
}


def dataset_stats(benchmark: str, tasks: Sequence[Task]) -> DatasetStats:
    """The statistics of `tasks` (a benchmark's, as `load_tasks` gives them)."""
    tokens, functions, gold_lines = _gold_sql(tasks)
    sizes = _database_sizes(tasks)
    lines = [
        *_task_lines(benchmark, tasks),
        *gold_lines,
        *_database_lines(benchmark, tasks, sizes),
        *_answer_lines(benchmark, tasks),
        *_feature_lines(tasks),
    ]
    levels = _levels(tasks)
    by_type: dict[str, Counter[str]] = {}
    for task in tasks:
        by_type.setdefault(_type_label(str(task.engine)), Counter())[_level(task)] += 1
    return DatasetStats(
        benchmark,
        tuple(lines),
        tuple(tokens),
        tuple(size.columns for size in sizes.values()),
        tuple(functions.most_common()),
        levels,
        tuple(
            (kind, tuple(c[level] for level in levels))
            for kind, c in sorted(by_type.items(), key=lambda item: -item[1].total())
        ),
    )


def _level(task: Task) -> str:
    return task.difficulty or "unrated"


def _levels(tasks: Sequence[Task]) -> tuple[str, ...]:
    found = {_level(t) for t in tasks}
    levels = tuple(level for level in _LEVELS if level in DIFFICULTIES or level in found)
    return (*levels, *sorted(found - set(levels)))


def _type_label(engine: str) -> str:
    return dialect_label(engine) if engine in _DIALECTS else engine


def _task_lines(benchmark: str, tasks: Sequence[Task]) -> list[Statistic]:
    n = len(tasks)
    lines = [Statistic("tasks", "tasks", n, None, PUBLISHED.get((benchmark, "tasks", "tasks")))]
    engines = Counter(str(t.engine) for t in tasks)
    published = {e for b, group, e in PUBLISHED if b == benchmark and group == "tasks by type"}
    for engine in sorted({*engines, *published}, key=lambda e: -engines.get(e, 0)):
        ref = PUBLISHED.get((benchmark, "tasks by type", engine))
        label = _type_label(engine)
        lines.append(Statistic("tasks by type", label, engines.get(engine, 0), n, ref))
    levels = Counter(_level(t) for t in tasks)
    for level in _levels(tasks):
        note = ""
        if level == "unrated":
            note = "no gold-SQL token count in the release, so no difficulty (the paper rates all)"
        lines.append(Statistic("tasks by difficulty", level, levels.get(level, 0), n, note=note))
    return lines


# The longest gold SQL of the release is 6,845 characters (lite's bq031); sqlglot reads one of
# 30 MB in 165 s and 7 GB here.
MAX_GOLD_SQL_CHARS = 256 * 1024

_DIALECTS = {"bigquery", "snowflake", "sqlite", "duckdb", "postgres", "clickhouse", "mysql"}


def _gold_sql(tasks: Sequence[Task]) -> tuple[list[int], Counter[str], list[Statistic]]:
    """Tokens and functions of every gold SQL here; the official token count (`toks`) apart."""
    import sqlglot

    tokens: list[int] = []
    per_sql: list[int] = []
    used: Counter[str] = Counter()
    unparsed = too_long = 0
    with_sql = [t for t in tasks if t.gold.sql]
    for task in with_sql:
        sql = task.gold.sql or ""
        if len(sql) > MAX_GOLD_SQL_CHARS:  # sqlglot takes minutes and gigabytes past this
            too_long += 1
            continue
        try:
            tokens.append(len(sqlglot.tokenize(sql, read=sqlglot_dialect(task.engine))))
        except sqlglot.errors.SqlglotError:
            unparsed += 1
            continue
        names = parsed_function_names(sql, task.engine)
        if names is None:
            unparsed += 1
            continue
        per_sql.append(len(names))
        used.update(names)
    official = [int(t.gold.eval_params["toks"]) for t in tasks if "toks" in t.gold.eval_params]
    n = len(tasks)
    left_out = [
        f"{unparsed} gold SQL sqlglot cannot read left out" if unparsed else "",
        f"{too_long} gold SQL past {MAX_GOLD_SQL_CHARS // 1024} KiB left out" if too_long else "",
    ]
    note = "; ".join(filter(None, left_out))
    lines = [
        Statistic("gold SQL", "tasks with gold SQL here", len(with_sql), n),
        Statistic("gold SQL", "tokens per SQL (sqlglot, mean)", _mean(tokens), note=note),
        Statistic("gold SQL", "tokens per SQL (sqlglot, median)", _median(tokens)),
        Statistic("gold SQL", "tokens per SQL (sqlglot, max)", max(tokens, default=None)),
        Statistic("gold SQL", "official token count (toks, mean)", _mean(official)),
        Statistic("gold SQL", "distinct functions per SQL (mean)", _mean(per_sql), note=note),
        Statistic("gold SQL", "distinct functions in all", len(used) if with_sql else None),
    ]
    return tokens, used, lines


def _database_sizes(tasks: Iterable[Task]) -> dict[str, DatabaseSize]:
    """Each database whose metadata folder is here, by its folder."""
    out: dict[str, DatabaseSize] = {}
    for task in tasks:
        folder = task.extra.get("metadata_dir")
        if folder and str(folder) not in out and Path(str(folder)).is_dir():
            out[str(folder)] = database_size(Path(str(folder)))
    return out


def _database_lines(
    benchmark: str, tasks: Sequence[Task], sizes: dict[str, DatabaseSize]
) -> list[Statistic]:
    databases = {(str(t.engine), t.db.lower()) for t in tasks}
    tables = [s.tables for s in sizes.values()]
    columns = [s.columns for s in sizes.values()]
    nested = [s.nested_columns for s in sizes.values()]
    note = (
        f"from the metadata of {len(sizes)} of {len(databases)} databases here"
        if len(sizes) < len(databases)
        else ""
    )
    return [
        Statistic("databases", "databases", len(databases)),
        Statistic("databases", "with metadata here", len(sizes), len(databases)),
        Statistic("databases", "tables per database (mean)", _mean(tables), note=note),
        Statistic(
            "databases",
            "columns per database (mean)",
            _mean(columns),
            reference=PUBLISHED.get((benchmark, "databases", "columns per database (mean)")),
            note=note,
        ),
        Statistic("databases", "columns per database (max)", max(columns, default=None)),
        Statistic("databases", "nested columns in all", sum(nested) if sizes else None),
        Statistic("databases", "with nested columns", sum(x > 0 for x in nested), len(sizes)),
    ]


def _answer_lines(benchmark: str, tasks: Sequence[Task]) -> list[Statistic]:
    kinds = Counter(str(t.extra["answer_type"]) for t in tasks if "answer_type" in t.extra)
    if not kinds:
        return []
    refs = {kind: PUBLISHED.get((benchmark, "answer types", kind)) for kind in ANSWER_TYPES}
    note = ""
    if any(refs.values()):
        here = "/".join(str(kinds.get(k, 0)) for k in ANSWER_TYPES)
        paper = "/".join(f"{r.value:g}" if r else "-" for r in refs.values())
        note = f"the public release's gold splits them {here}, the paper {paper}"
    n = len(tasks)
    return [
        Statistic("answer types", kind, kinds.get(kind, 0), n, refs[kind], note)
        for kind in ANSWER_TYPES
    ]


def _feature_lines(tasks: Sequence[Task]) -> list[Statistic]:
    n = len(tasks)
    knowledge = sum(bool(t.external_knowledge) or "documentation" in t.features for t in tasks)
    lines = [Statistic("external knowledge", "tasks with a document", knowledge, n)]
    for tag in FEATURES:
        count = sum(tag in t.features for t in tasks)
        lines.append(Statistic("tasks by feature", tag, count, n))
    return lines


def _mean(values: Sequence[float]) -> float | None:
    return round(stats.fmean(values), 1) if values else None


def _median(values: Sequence[float]) -> float | None:
    return float(stats.median(values)) if values else None


def formatted(statistic: Statistic) -> str:
    """The value as the table prints it: `n (p%)` for a count of a denominator."""
    value = statistic.value
    if value is None:
        return "-"
    text = f"{value:g}" if isinstance(value, float) else str(value)
    if statistic.of:
        text += f" ({100 * value / statistic.of:.1f}%)"
    return text


def reference_text(statistic: Statistic) -> str:
    ref = statistic.reference
    return "" if ref is None else f"{ref.value:g} ({ref.source})"


def sections(result: DatasetStats) -> list[Section]:
    """One table per group: the value here, the published figure, what differs."""
    groups: dict[str, list[Statistic]] = {}
    for statistic in result.statistics:
        groups.setdefault(statistic.group, []).append(statistic)
    columns = ["statistic", "here", "published", "difference"]
    out = [
        Section(
            f"{result.benchmark}: {group}",
            columns,
            [[s.name, formatted(s), reference_text(s), s.difference] for s in lines],
        )
        for group, lines in groups.items()
    ]
    crossed = Section(
        f"{result.benchmark}: tasks by type and difficulty",
        ["type", *result.levels, "all"],
        [[kind, *map(str, counts), str(sum(counts))] for kind, counts in result.type_by_level],
    )
    out.insert(3, crossed)  # after the tasks by type and by difficulty
    return out


def plots(result: DatasetStats) -> list[Plot] | None:
    """Tasks by type and difficulty, the gold SQL length and database size distributions and
    the functions the gold SQL uses most; None without matplotlib."""
    if not matplotlib_available():
        return None
    out = []
    for group in ("tasks by type", "tasks by difficulty", "answer types"):
        counts = [(s.name, s.value or 0) for s in result.statistics if s.group == group]
        if counts:
            out.append(count_bars(f"{result.benchmark}: {group}", counts, "tasks"))
    if result.gold_tokens:
        title = f"{result.benchmark}: gold SQL tokens (sqlglot)"
        out.append(histogram(title, result.gold_tokens, "tokens per gold SQL"))
    if result.columns_per_database:
        title = f"{result.benchmark}: columns per database"
        out.append(histogram(title, result.columns_per_database, "columns"))
    if result.functions:
        title = f"{result.benchmark}: functions the gold SQL calls (top 20)"
        out.append(count_bars(title, result.functions[:20], "gold SQL calling it"))
    return out


def covered_plots(runs: Sequence[RunData]) -> list[Plot] | None:
    """The plots of `plots` for the tasks the runs cover, benchmark by benchmark (the tasks of
    each run's results whose task could be loaded); None without matplotlib."""
    covered: dict[str, dict[str, Task]] = {}
    for run in runs:
        if run.benchmark and run.tasks:
            mine = covered.setdefault(run.benchmark, {})
            mine |= {
                r.instance_id: run.tasks[r.instance_id]
                for r in run.results
                if r.instance_id in run.tasks
            }
    out: list[Plot] = []
    for benchmark, tasks in covered.items():
        made = plots(dataset_stats(benchmark, list(tasks.values()))) if tasks else []
        if made is None:
            return None
        out += made
    return out


__all__ = [
    "DatasetStats",
    "Reference",
    "Statistic",
    "covered_plots",
    "dataset_stats",
    "plots",
    "sections",
]
