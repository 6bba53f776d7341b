"""Spider 1.0's official result tables (`evaluation.py --etype all` / `--etype match`): counts,
execution accuracy and exact match by hardness, then partial matching accuracy, recall and F1.

The figures are aggregated as the official `evaluate` does: a component's accuracy averages the
instances whose prediction has that component, its recall those whose gold has it, and its F1
is 1 where both averages are 0; a level with no instance prints zeros. The levels are the
hardness of each gold's parse; instances with no EM (a gold that does not parse) are left out,
and the caller is told how many.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from querybench.evaluation.record import InstanceResult
from querybench.evaluation.spider1.exact import LEVELS, PARTIAL_TYPES, ExactMatch
from querybench.report.terminal import Terminal


@dataclass
class _Component:
    acc: float = 0.0
    rec: float = 0.0
    acc_count: int = 0
    rec_count: int = 0

    def add(self, acc: int, rec: int, pred_total: int, label_total: int) -> None:
        if pred_total > 0:
            self.acc += acc
            self.acc_count += 1
        if label_total > 0:
            self.rec += rec
            self.rec_count += 1

    def figures(self) -> tuple[float, float, float]:
        acc = self.acc / self.acc_count if self.acc_count else 0.0
        rec = self.rec / self.rec_count if self.rec_count else 0.0
        f1 = 1.0 if acc == 0 and rec == 0 else 2.0 * acc * rec / (acc + rec)
        return acc, rec, f1


@dataclass
class _Level:
    count: int = 0
    execution: float = 0.0
    exact: float = 0.0
    components: dict[str, _Component] = field(
        default_factory=lambda: {t: _Component() for t in PARTIAL_TYPES}
    )


def _row(name: str, values: Sequence[object], form: str) -> str:
    return ("{:20} " + " ".join([form] * len(values))).format(name, *values)


def spider1_tables(results: Sequence[InstanceResult], with_execution: bool) -> tuple[str, int]:
    """The official tables' text, and how many results were left out (no EM)."""
    levels = {name: _Level() for name in LEVELS}
    left_out = 0
    for r in results:
        em = r.exact_match
        if not isinstance(em, ExactMatch):
            left_out += 1
            continue
        for level in (levels[em.hardness], levels["all"]):
            level.count += 1
            level.execution += r.score
            level.exact += em.score
            for name, p in em.partial.items():
                level.components[name].add(p.acc, p.rec, p.pred_total, p.label_total)
    lines = [_row("", LEVELS, "{:20}")]
    lines.append(_row("count", [levels[n].count for n in LEVELS], "{:<20d}"))

    def scores(value: str) -> list[float]:
        out = []
        for n in LEVELS:
            level = levels[n]
            total = level.execution if value == "execution" else level.exact
            out.append(total / level.count if level.count else 0.0)
        return out

    if with_execution:
        lines.append("=====================   EXECUTION ACCURACY     =====================")
        lines.append(_row("execution", scores("execution"), "{:<20.3f}"))
    lines.append("\n====================== EXACT MATCHING ACCURACY =====================")
    lines.append(_row("exact match", scores("exact"), "{:<20.3f}"))
    titles = (
        "\n---------------------PARTIAL MATCHING ACCURACY----------------------",
        "---------------------- PARTIAL MATCHING RECALL ----------------------",
        "---------------------- PARTIAL MATCHING F1 --------------------------",
    )
    for k, title in enumerate(titles):
        lines.append(title)
        for name in PARTIAL_TYPES:
            values = []
            for n in LEVELS:
                level = levels[n]
                # a level with no instance keeps the official zeros, F1 included
                values.append(level.components[name].figures()[k] if level.count else 0.0)
            lines.append(_row(name, values, "{:<20.3f}"))
    return "\n".join(lines), left_out


def print_spider1_tables(
    results: Sequence[InstanceResult], with_execution: bool, console: Terminal
) -> None:
    text, left_out = spider1_tables(results, with_execution)
    console.print(text, markup=False, highlight=False, soft_wrap=True)
    if left_out:
        console.print(
            f"({left_out} instances have no exact match and are not in these tables: see their "
            "exact_match.reason)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
