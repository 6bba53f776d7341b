"""The audit checks that score: each gold alternative against itself, and gold SQL re-run.

Both use the scorers `querybench eval` uses (`spider2.instance.score_frame`, and the sql mode of
`spider2.evaluate.evaluate_spider2` for running gold SQL); nothing here compares tables itself.

* `never_passes_official` / `never_passes_strict`: an alternative that, submitted as the
  prediction, does not score 1 under that scoring. Under the official scoring the whole loop
  counts: alternatives are tried in order and an error on an earlier one zeroes the instance, so
  an alternative can match itself alone and still never win; the detail says so.
* `gold_sql_error` / `gold_sql_mismatch`: a gold SQL file, run on its rebuilt local database,
  fails, or its result does not score 1 against the gold CSVs (the detail names the scoring).
  Only local (SQLite) instances can run here; the others are counted in `GoldSqlSummary`.
* `scorer_error`: scoring an alternative against its own gold raised instead of giving a
  verdict (a querybench bug on a gold of an unexpected shape; `querybench eval` stops there).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from querybench.benchmarks import spec
from querybench.errors import DataError, ErrorCode
from querybench.evaluation.spider2 import official
from querybench.evaluation.spider2.gold import EvalSpec, GoldFrames, Spider2Gold, engine_family
from querybench.evaluation.spider2.instance import score_frame, variant_of
from querybench.evaluation.spider2.large_result import ResultTable, read_result
from querybench.evaluation.verdict import Verdict


@dataclass(frozen=True)
class Finding:
    """One defect of the gold: its instance, its kind (`audit.KINDS`), what and where."""

    instance_id: str
    kind: str
    detail: str

    def to_json(self) -> str:
        return json.dumps(
            {"instance_id": self.instance_id, "kind": self.kind, "detail": self.detail}
        )


_NOT_RUNNABLE = {
    "bq": "BigQuery gold SQL: no BigQuery here",
    "sf": "Snowflake gold SQL: no Snowflake here",
}


def self_score_findings(
    gold: Spider2Gold, instance_id: str, golds: GoldFrames
) -> Iterator[Finding]:
    """Each readable alternative of one instance scored as the prediction, both scorings."""
    single = gold.result_paths(instance_id)[1]
    spec = gold.specs[instance_id]
    variant = variant_of(gold.benchmark)
    for i, path in enumerate(golds.paths):
        try:
            pred = golds[i]
        except DataError:
            continue  # reported as unreadable_gold
        try:
            verdicts = score_frame(pred, golds, single, spec, variant)
        except Exception as exc:  # a scorer bug, not a verdict: `eval` would stop here too
            detail = f"{path.name}: scoring raised {type(exc).__name__}: {exc}"
            yield Finding(instance_id, ErrorCode.SCORER_ERROR, detail)
            continue
        if not verdicts.official.passed:
            reason = verdicts.official.message or ""
            if not single:
                reason = _loop_reason(pred, golds, golds.paths, i, spec, variant) or reason
            yield Finding(instance_id, "never_passes_official", f"{path.name}: {reason}")
        if not verdicts.strict.passed:
            yield Finding(
                instance_id, "never_passes_strict", f"{path.name}: {verdicts.strict.message}"
            )


def _loop_reason(
    pred: ResultTable,
    golds: Sequence[ResultTable],
    paths: Sequence[Path],
    index: int,
    spec: EvalSpec,
    variant: official.Variant,
) -> str | None:
    """When an earlier alternative's error ends the official loop first, say so (else None)."""
    per_gold = official.per_gold_condition_cols(spec.condition_cols, len(golds))
    for j in range(index):
        earlier = _alone(pred, golds, per_gold, j, spec, variant)
        if earlier.error != ErrorCode.GOLD_ERROR:
            continue  # a plain mismatch: the loop goes on to the next alternative
        own = _alone(pred, golds, per_gold, index, spec, variant)
        if own.passed:
            return (
                f"matches itself alone, but the official loop fails first on {paths[j].name} "
                f"({earlier.message}), so the instance scores 0 with this answer"
            )
        return (
            f"the official loop fails first on {paths[j].name} ({earlier.message}); "
            f"alone: {own.message}"
        )
    return None


def _alone(
    pred: ResultTable,
    golds: Sequence[ResultTable],
    per_gold: Any,
    j: int,
    spec: EvalSpec,
    variant: official.Variant,
) -> Verdict:
    """The official verdict against alternative `j` alone, with the columns the loop gives it."""
    try:
        cols = per_gold[j]
        gold = golds[j]
    except (DataError, IndexError, KeyError, TypeError) as exc:
        return Verdict.fail(
            ErrorCode.GOLD_ERROR, f"official comparison failed: {type(exc).__name__}: {exc}"
        )
    return score_frame(pred, [gold], True, replace(spec, condition_cols=cols), variant).official


@dataclass(frozen=True)
class GoldSqlRun:
    """Where gold SQL runs: the rebuilt local databases and the tasks file naming each one."""

    db_dir: Path | tuple[Path, ...]  # several: searched in order (data/roots.py's roots)
    tasks_file: Path | None
    workers: int = 2
    timeout: float = 60.0


@dataclass(frozen=True)
class GoldSqlSummary:
    """What happened to the gold SQL files: how many ran, reproduced, and why others did not."""

    with_sql: int
    ran: int
    reproduced: int
    skipped: tuple[tuple[str, int], ...]

    def line(self) -> str:
        skipped = "; ".join(f"{reason}: {n}" for reason, n in self.skipped)
        return (
            f"gold SQL: {self.with_sql} instances have it, {self.ran} ran, "
            f"{self.reproduced} reproduced the gold under both scorings"
            + (f"; skipped {sum(n for _, n in self.skipped)} ({skipped})" if skipped else "")
        )


def gold_sql_findings(
    gold: Spider2Gold, run: GoldSqlRun | None
) -> tuple[list[Finding], GoldSqlSummary]:
    """Gold SQL of the local instances run through `querybench eval --mode sql`'s path."""
    sql_dir = gold.dir / "sql"
    ids = sorted(i for i in gold.specs if (sql_dir / f"{i}.sql").is_file())
    skipped: Counter[str] = Counter()
    runnable: list[str] = []
    for iid in ids:
        family = engine_family(iid)
        if spec(gold.benchmark).one_engine == "snowflake":
            family = "sf"  # every snow task runs on Snowflake, sf_local* included
        if run is None:
            skipped["not run"] += 1
        elif family != "local":
            skipped[_NOT_RUNNABLE.get(family, f"no {family} engine here")] += 1
        elif not gold.result_paths(iid)[0]:
            skipped["no gold CSV to compare with"] += 1
        else:
            runnable.append(iid)
    findings: list[Finding] = []
    ran = reproduced = 0
    if run is not None and runnable:
        with tempfile.TemporaryDirectory(prefix="querybench-audit-") as tmp:
            outcomes = _run_sql(gold, sql_dir, Path(tmp), runnable, run)
            for iid, outcome in outcomes:
                if isinstance(outcome, str):
                    skipped[outcome] += 1
                    continue
                ran += 1
                findings.extend(Finding(iid, kind, detail) for kind, detail in outcome)
                reproduced += not outcome
    summary = GoldSqlSummary(len(ids), ran, reproduced, tuple(sorted(skipped.items())))
    return findings, summary


Outcome = str | list[tuple[str, str]]


def _run_sql(
    gold: Spider2Gold, sql_dir: Path, tmp: Path, ids: list[str], run: GoldSqlRun
) -> Iterator[tuple[str, Outcome]]:
    """Per instance: a skip reason, or the findings of its run (empty: reproduced)."""
    from querybench.evaluation.spider2.evaluate import evaluate_spider2

    for iid in ids:  # a folder of just these, so nothing else is run (bq/sf emulations)
        shutil.copyfile(sql_dir / f"{iid}.sql", tmp / f"{iid}.sql")
    results = evaluate_spider2(
        tmp,
        benchmark=gold.benchmark,
        gold_dir=gold.dir,
        mode="sql",
        db_dir=run.db_dir,
        tasks_file=run.tasks_file,
        workers=run.workers,
        timeout=run.timeout,
        write_csv=True,  # the result CSV the official sql mode writes, scored below
    )
    wanted = set(ids)
    variant = variant_of(gold.benchmark)
    for result in results:
        if result.instance_id not in wanted:
            continue
        if result.error == ErrorCode.ENGINE_UNAVAILABLE:
            reason = (result.message or "").split(":")[0]
            if reason == "database not found":
                dirs = run.db_dir if isinstance(run.db_dir, tuple) else (run.db_dir,)
                reason = f"local database not in {', '.join(map(str, dirs))}"
            yield result.instance_id, reason
            continue
        csv = tmp / f"{result.instance_id}.csv"
        try:
            pred = read_result(csv) if csv.is_file() else None
        except DataError as exc:
            yield result.instance_id, [("gold_sql_error", str(exc).replace(str(tmp) + "/", ""))]
            continue
        if pred is None:
            yield result.instance_id, [("gold_sql_error", f"{result.error}: {result.message}")]
            continue
        golds, single = gold.load_results(result.instance_id)
        verdicts = score_frame(pred, golds, single, gold.specs[result.instance_id], variant)
        yield (
            result.instance_id,
            [
                ("gold_sql_mismatch", f"{name}: {verdict.message}")
                for name, verdict in (("official", verdicts.official), ("strict", verdicts.strict))
                if not verdict.passed
            ],
        )
