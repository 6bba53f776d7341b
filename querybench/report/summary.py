"""Summaries of scored instances: overall, by difficulty, by engine, and the errors behind them.

Every task counts in "all tasks"; the tasks that could not run here (`engine_unavailable`) are
also left out of a separate, labelled "runnable here" row, and the errors are printed with
their most common message, so a failure is said in words at the end of every run and eval.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from querybench.errors import ErrorCode
from querybench.evaluation.bird.metrics import BirdMetric, level_scores, official_table
from querybench.evaluation.record import InstanceResult
from querybench.report.terminal import Column, Terminal

DIFFICULTY_ORDER = ["easy", "medium", "hard", "extra", "simple", "moderate", "challenging"]


@dataclass(frozen=True)
class Group:
    name: str
    n: int
    score: float
    official: float | None
    strict: float | None


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def group_scores(name: str, results: Sequence[InstanceResult]) -> Group:
    """The scores of one group of results (both scorings when every result has them)."""
    both = bool(results) and all(r.official_score is not None for r in results)
    return Group(
        name=name,
        n=len(results),
        score=_mean([r.score for r in results]),
        official=_mean([r.official_score or 0.0 for r in results]) if both else None,
        strict=_mean([r.strict_score or 0.0 for r in results]) if both else None,
    )


def group_order(name: str) -> tuple[int, str]:
    """Sort key for group names: difficulties in their own order first, then the rest by name."""
    rank = DIFFICULTY_ORDER.index(name) if name in DIFFICULTY_ORDER else len(DIFFICULTY_ORDER)
    return rank, name


def _grouped(
    results: Sequence[InstanceResult], key: Callable[[InstanceResult], str | None]
) -> list[Group]:
    buckets: dict[str, list[InstanceResult]] = {}
    for r in results:
        buckets.setdefault(key(r) or "unknown", []).append(r)

    return [group_scores(name, buckets[name]) for name in sorted(buckets, key=group_order)]


@dataclass(frozen=True)
class ErrorCount:
    """One error code, how often, and its most common message (`message_count` times)."""

    code: str
    count: int
    message: str
    message_count: int

    @property
    def line(self) -> str:
        """`model_error 5: connection failed at 127.0.0.1:9: ...`"""
        text = f"{self.code} {self.count}"
        if self.message:
            text += f": {self.message}"
            if self.message_count != self.count:
                text += f" ({self.message_count} of {self.count})"
        return text


@dataclass(frozen=True)
class Summary:
    overall: Group
    submitted: Group
    runnable: Group  # the tasks that could run here (not engine_unavailable)
    by_difficulty: list[Group]
    by_engine: list[Group]
    errors: list[ErrorCount]
    metrics: dict[str, float]


MESSAGE_CHARS = 160


def summarise(results: Sequence[InstanceResult]) -> Summary:
    submitted = [r for r in results if r.error != ErrorCode.MISSING_PREDICTION]
    runnable = [r for r in results if r.error != ErrorCode.ENGINE_UNAVAILABLE]
    metric_names = sorted({m for r in results for m in r.metrics})
    return Summary(
        overall=group_scores("all tasks", results),
        submitted=group_scores("submitted", submitted),
        runnable=group_scores("runnable here", runnable),
        by_difficulty=_grouped(results, lambda r: r.difficulty),
        by_engine=_grouped(results, lambda r: r.engine),
        errors=error_counts(results),
        metrics={m: _mean([r.metrics.get(m, 0.0) for r in results]) for m in metric_names},
    )


def error_counts(results: Sequence[InstanceResult]) -> list[ErrorCount]:
    """Error codes by frequency, each with its most common message (first line, cut)."""
    codes = Counter(r.error for r in results if r.error)
    messages: dict[str, Counter[str]] = {}
    for r in results:
        if r.error:
            first = _visible(_generic((r.message or "").strip().split("\n", 1)[0], r.instance_id))
            cut = first if len(first) <= MESSAGE_CHARS else first[: MESSAGE_CHARS - 1] + "…"
            messages.setdefault(r.error, Counter())[cut] += 1
    out = []
    for code, count in codes.most_common():
        message, times = messages[code].most_common(1)[0]
        out.append(ErrorCount(code, count, message, times))
    return out


def _visible(message: str) -> str:
    """`message` with its control codes escaped (`\\x1b`): an engine's error can echo a
    model's SQL, whose ESC sequences would drive the terminal the summary is printed on."""
    if message.isprintable():
        return message
    import unicodedata

    return "".join(
        repr(c)[1:-1] if c != "\t" and unicodedata.category(c)[0] == "C" else c for c in message
    )


def _generic(message: str, instance_id: str) -> str:
    """The instance's own id made generic, so one cause counts once (`no <id>.csv`); a
    numeric id (Spider 1.0, BIRD) is left alone, as it cannot be told from other numbers.

    Each occurrence not inside a longer word (`(?<![\\w.])id(?!\\w)`), found with `str.find`:
    a regex per instance id is a compilation per instance (past `re`'s cache of 512), a
    tenth of a second on a 547-task eval.
    """
    if instance_id not in message or not _LETTER.search(instance_id):
        return message
    parts, kept, at = [], 0, message.find(instance_id)
    while at >= 0:
        end = at + len(instance_id)
        before, after = message[at - 1 : at], message[end : end + 1]
        if not _word_char(before, "_.") and not _word_char(after, "_"):
            parts += [message[kept:at], "<id>"]
            kept, at = end, message.find(instance_id, end)
        else:
            at = message.find(instance_id, at + 1)
    return "".join([*parts, message[kept:]])


_LETTER = re.compile(r"[A-Za-z]")


def _word_char(char: str, also: str) -> bool:
    return bool(char) and (char.isalnum() or char in also)


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.2f}"


def print_summary(summary: Summary, console: Terminal, title: str) -> None:
    show_both = summary.overall.official is not None
    columns = [Column("group"), Column("n", "right"), Column("score %", "right")]
    if show_both:
        columns += [Column("official %", "right"), Column("strict %", "right")]
    head = [summary.overall, summary.submitted]
    if summary.runnable.n != summary.overall.n:
        head.append(summary.runnable)
    sections = [
        head,
        summary.by_difficulty if len(summary.by_difficulty) > 1 else [],
        summary.by_engine if len(summary.by_engine) > 1 else [],
    ]
    rows: list[list[list[str]]] = []
    for section in sections:
        rows.append([])
        for g in section:
            cells = [g.name, str(g.n), _pct(g.score)]
            if show_both:
                cells += [_pct(g.official), _pct(g.strict)]
            rows[-1].append(cells)
    console.table(title, columns, rows)
    if summary.metrics:
        console.print(
            "metrics: " + ", ".join(f"{k} {100 * v:.2f}%" for k, v in summary.metrics.items())
        )
    unavailable = summary.overall.n - summary.runnable.n
    if unavailable:
        console.print(
            f"{unavailable} of {summary.overall.n} tasks could not run here "
            f"(engine_unavailable, scored 0 in 'all tasks'); 'runnable here' scores the other "
            f"{summary.runnable.n}"
        )
    if summary.errors:
        console.print("errors (count: the most common message):")
        for error in summary.errors:
            console.print(f"  {error.line}", literal=True, soft_wrap=True)


def bird_tables(results: Sequence[InstanceResult], metrics: Sequence[BirdMetric]) -> str:
    """BIRD mini-dev's official by-difficulty block for each metric, in the order asked.

    EX is each result's score; Soft-F1 and R-VES its `soft_f1` / `r_ves` metric (0 where the
    result has none: a question that could not run).
    """

    def value(r: InstanceResult, metric: BirdMetric) -> float:
        return r.score if metric is BirdMetric.EX else r.metrics.get(metric.value, 0.0)

    blocks = [
        official_table(level_scores(m, [(r.difficulty, value(r, m)) for r in results]))
        for m in metrics
    ]
    return "\n\n".join(blocks)


def print_bird_tables(
    results: Sequence[InstanceResult], metrics: Sequence[BirdMetric], console: Terminal
) -> None:
    console.print(bird_tables(results, metrics), markup=False, highlight=False, soft_wrap=True)
