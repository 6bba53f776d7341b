"""A check of a Spider 2.0 gold folder: what in the gold itself can make scoring wrong.

Each finding names an instance, a kind and a detail. The kinds:

* `missing_gold`: an eval-config entry with no gold CSV at all;
* `missing_alternative`: a gap in an instance's alternative letters (`_e` without `_a`..`_d`):
  a lost file, or a letter the upstream release never used (both happen); a lost last
  alternative leaves no gap and cannot be seen here;
* `condition_cols_out_of_range`: a gold file that the condition columns, as the strict scoring
  gives them to each alternative, do not fit (that alternative can never match);
* `duplicate_alternative`: an alternative with the same parsed content as an earlier one;
* `duplicate_header`: a gold CSV naming a column twice (pandas renames the second `x.1`);
* `header_only`: a gold CSV with a header and no rows;
* `unreadable_gold`: a gold CSV the official parsing rejects (empty, not UTF-8, malformed);
* `unexpected_config_shape`: an `ignore_order` that is not a boolean, or `condition_cols` that
  is neither empty, a list of column indices nor a list of such lists;
* `gold_without_config`: a gold CSV, or a gold SQL file, whose instance has no eval-config
  entry;
* `never_passes_official`, `never_passes_strict`, `gold_sql_error`, `gold_sql_mismatch`,
  `scorer_error`: the checks that score (each alternative against itself, gold SQL re-run),
  in `audit_scoring`.

Contradictory alternatives are not a kind of their own: alternatives of one instance are
meant to differ (another reading of the question, another tie-break), so differing values are
no defect by themselves. What the gold can get wrong is covered by `duplicate_alternative` (an
alternative that adds nothing) and by `never_passes_*` (an alternative that can never win).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from querybench import json_input
from querybench.errors import DataError, ErrorCode
from querybench.evaluation.spider2.gold import (
    Benchmark,
    GoldFrames,
    Spider2Gold,
    eval_file_name,
)
from querybench.evaluation.spider2.instance import strict_condition_cols
from querybench.evaluation.spider2.large_result import ResultTable
from querybench.file_digests import open_regular, read_regular
from querybench.report.audit_scoring import (
    Finding,
    GoldSqlRun,
    GoldSqlSummary,
    gold_sql_findings,
    self_score_findings,
)
from querybench.tasks.input_files import read_text

__all__ = ["KINDS", "AuditReport", "Finding", "audit_gold"]

KINDS = (
    "missing_gold",
    "missing_alternative",
    "condition_cols_out_of_range",
    "duplicate_alternative",
    "duplicate_header",
    "header_only",
    "unreadable_gold",
    "unexpected_config_shape",
    "gold_without_config",
    "never_passes_official",
    "never_passes_strict",
    "gold_sql_error",
    "gold_sql_mismatch",
    ErrorCode.SCORER_ERROR,
)


@dataclass(frozen=True)
class AuditReport:
    findings: list[Finding]
    gold_sql: GoldSqlSummary


def audit_gold(
    gold_dir: str | Path, benchmark: Benchmark, gold_sql: GoldSqlRun | None = None
) -> AuditReport:
    """Every finding in a gold folder, by instance id then kind; `DataError` if it is unusable.

    Gold SQL runs only with `gold_sql` (where the local databases are); the summary says how
    many gold SQL files ran and why the others did not.
    """
    gold = Spider2Gold(gold_dir, benchmark)
    findings = list(_config_shapes(gold.dir / eval_file_name(benchmark)))
    used: set[str] = set()
    for iid, spec in sorted(gold.specs.items()):
        golds, _ = gold.load_results(iid)  # parsed once, for every check of the instance
        if not golds.paths:
            findings.append(Finding(iid, "missing_gold", f"no {iid}.csv nor {iid}_<letter>.csv"))
            continue
        used.update(p.name for p in golds.paths)
        gap = _letter_gap(iid, golds.paths)
        if gap:
            findings.append(Finding(iid, "missing_alternative", gap))
        findings.extend(_instance_findings(iid, golds, spec.condition_cols))
        findings.extend(self_score_findings(gold, iid, golds))
    for name in sorted(_orphans(gold, used)):
        findings.append(Finding(_instance_of(name), "gold_without_config", name))
    sql_dir = gold.dir / "sql"
    for path in sorted(sql_dir.glob("*.sql")) if sql_dir.is_dir() else []:
        if path.stem not in gold.specs:
            findings.append(Finding(path.stem, "gold_without_config", f"sql/{path.name}"))
    sql_findings, summary = gold_sql_findings(gold, gold_sql)
    findings.extend(sql_findings)
    findings.sort(key=lambda f: (f.instance_id, KINDS.index(f.kind), f.detail))
    return AuditReport(findings, summary)


def _instance_findings(iid: str, golds: GoldFrames, condition_cols: Any) -> Iterator[Finding]:
    paths = golds.paths
    tables: list[tuple[Path, ResultTable]] = []
    for i, path in enumerate(paths):
        duplicated = _duplicate_names(path)
        if duplicated:
            yield Finding(iid, "duplicate_header", f"{path.name}: {', '.join(duplicated)}")
        try:
            table = golds[i]
        except DataError as exc:
            yield Finding(iid, "unreadable_gold", str(exc).replace(str(path), path.name))
            continue
        tables.append((path, table))
        if table.shape[0] == 0:
            width = table.shape[1]
            noun = "column" if width == 1 else "columns"
            yield Finding(iid, "header_only", f"{path.name}: {width} {noun}, no rows")
    for i, cols in enumerate(strict_condition_cols(condition_cols, len(paths))):
        parsed = next((t for p, t in tables if p == paths[i]), None)
        if cols is None or parsed is None:
            continue
        width = parsed.shape[1]
        if any(not isinstance(c, int) or not 0 <= c < width for c in cols):  # as strict
            yield Finding(
                iid,
                "condition_cols_out_of_range",
                f"{paths[i].name}: condition_cols {cols} for {width} columns",
            )
    for j, (path, table) in enumerate(tables):
        for earlier, other in tables[:j]:
            if _same_content(path, table, earlier, other):
                yield Finding(
                    iid, "duplicate_alternative", f"{path.name} is identical to {earlier.name}"
                )
                break


def _letter_gap(iid: str, paths: list[Path]) -> str | None:
    """The alternative files absent before the last one present, if any."""
    letters = [p.stem.removeprefix(f"{iid}_") for p in paths]
    if letters == [iid] or not all(len(x) == 1 for x in letters):
        return None  # the single base file
    expected = [chr(c) for c in range(ord("a"), ord(max(letters)) + 1)]
    absent = [x for x in expected if x not in letters]
    if not absent:
        return None
    names = ", ".join(f"{iid}_{x}.csv" for x in absent)
    return f"no {names} (present: {', '.join(p.name for p in paths)})"


def _same_content(path: Path, table: ResultTable, other_path: Path, other: ResultTable) -> bool:
    if isinstance(table, pd.DataFrame) and isinstance(other, pd.DataFrame):
        return list(table.columns) == list(other.columns) and table.equals(other)
    # A big file read as compact columns: only a byte-identical copy is known to be the same.
    try:
        return read_regular(path) == read_regular(other_path)
    except OSError:
        return False  # no regular file: not known to be the same


def _duplicate_names(path: Path) -> list[str]:
    """Header names given twice, from the raw header (pandas would rename them)."""
    try:
        fd, _ = open_regular(path)  # a FIFO in the gold folder never holds the audit
        with os.fdopen(fd, encoding="utf-8", newline="") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []  # unreadable files are reported by the parse that follows
    seen: set[str] = set()
    out: list[str] = []
    for name in header:
        if name in seen and name not in out:
            out.append(name)
        seen.add(name)
    return out


def _config_shapes(config: Path) -> Iterator[Finding]:
    for line in read_text(config, "eval config").splitlines():
        if not line.strip():
            continue
        item = json_input.loads(line)  # Spider2Gold has already refused a bad line
        iid = str(item["instance_id"])
        if not isinstance(item.get("ignore_order"), bool):
            shown = json.dumps(item["ignore_order"]) if "ignore_order" in item else "missing"
            yield Finding(iid, "unexpected_config_shape", f"ignore_order {shown}")
        cols = item.get("condition_cols")
        if not _expected_cols(cols):
            yield Finding(iid, "unexpected_config_shape", f"condition_cols {json.dumps(cols)}")


def _expected_cols(cols: Any) -> bool:
    if cols is None:
        return True
    if not isinstance(cols, list):
        return False
    if all(_is_index(c) for c in cols):
        return True
    return all(isinstance(c, list) and all(_is_index(x) for x in c) for c in cols)


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _orphans(gold: Spider2Gold, used: set[str]) -> set[str]:
    """Gold CSVs that belong to no instance of the config (not shadowed alternatives)."""
    names = {p.name for p in (gold.dir / "exec_result").iterdir() if p.suffix == ".csv"}
    return {
        n for n in names - used if _instance_of(n) not in gold.specs and n[:-4] not in gold.specs
    }


def _instance_of(name: str) -> str:
    stem = name.removesuffix(".csv")
    base, _, letter = stem.rpartition("_")
    return base if base and len(letter) == 1 and letter.islower() else stem
