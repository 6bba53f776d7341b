"""A run's summary: scores, counts, tokens, cost and time, typed; RUNDIR/summary.json is its
JSON form (keys and values as they have always been written), read back by the report.

`summary["correct"]` reads the JSON form by key, for code written against the file.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from querybench import json_input
from querybench.declared import checked_values
from querybench.errors import ErrorCode
from querybench.evaluation.record import InstanceResult
from querybench.runs.config import RunConfig
from querybench.runs.store import InstanceRecord
from querybench.tasks.input_files import read_text
from querybench.tasks.model import Task

log = logging.getLogger(__name__)

SUMMARY = "summary.json"


@dataclass(frozen=True)
class Tokens:
    prompt: int = 0
    completion: int = 0
    total: int = 0


@dataclass(frozen=True)
class RunSummary:
    """Every task of the run counts in `n`; `runnable` leaves out those that cannot run here.
    Read from a file, a count the file lacks is None (`finished`, `runnable`, `wall_s`)."""

    benchmark: str | None = None
    method: str | None = None
    model: str | None = None
    n: int = 0
    score: float = 0.0
    correct: int = 0
    finished: int | None = None
    failed: int = 0
    # tasks that could not run here (no database, no engine): counted in `n`, and why
    unavailable: int = 0
    unavailable_reasons: dict[str, int] = field(default_factory=dict)
    runnable: int | None = None
    score_runnable: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    tokens: Tokens = field(default_factory=Tokens)
    cost: float = 0.0
    requests: int = 0
    cached_replies: int = 0
    truncated: int = 0
    wall_s: float | None = None
    # written only when set:
    oracle_settings: tuple[str, ...] = ()  # labelled: these runs read gold material
    oracle_settings_applied: dict[str, int] | None = None
    official_score: float | None = None
    strict_score: float | None = None
    with_gold: dict[str, float | int] | None = None  # the DBT tasks whose gold is present
    pass_at_k: dict[str, float] | None = None
    majority_at_n: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _OPTIONAL and (value is None or value == ()):
                continue
            if isinstance(value, Tokens):
                value = {
                    "prompt": value.prompt,
                    "completion": value.completion,
                    "total": value.total,
                }
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSummary:
        """A summary.json as written (keys it lacks take their defaults; unknown ones are
        left out)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        tokens = values.get("tokens")
        values["tokens"] = Tokens(**tokens) if isinstance(tokens, dict) else Tokens()
        values["oracle_settings"] = tuple(values.get("oracle_settings") or ())
        try:
            return cls(**checked_values(cls, values))  # text for a number: an OptionError
        except TypeError as exc:
            log.warning("summary fields left at their defaults: %s", exc)
            return cls()

    @classmethod
    def read(cls, run_dir: Path) -> RunSummary | None:
        """RUNDIR/summary.json, None when there is none (raises `ValueError` for a malformed
        one, `DataError` for one that is no regular file, too large, or a link out of the run
        folder)."""
        path = run_dir / SUMMARY
        if not os.path.lexists(path):
            return None
        data = json_input.loads(read_text(path, "run summary", run_dir))
        return cls.from_json(data) if isinstance(data, dict) else None

    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.to_json()


# Fields summary.json holds only when the run has them.
_OPTIONAL = frozenset(
    {
        "oracle_settings",
        "oracle_settings_applied",
        "official_score",
        "strict_score",
        "with_gold",
        "pass_at_k",
        "majority_at_n",
    }
)


def summarise_run(
    config: RunConfig,
    tasks: list[Task],
    records: dict[str, InstanceRecord],
    results: list[InstanceResult],
    wall_s: float,
) -> RunSummary:
    """The summary of `results` (one per task) and the tasks' `records`."""
    oracle_settings = config.oracle_settings
    done = [records[t.instance_id] for t in tasks if t.instance_id in records]
    errors: dict[str, int] = {}
    for r in results:
        if r.error:
            errors[r.error] = errors.get(r.error, 0) + 1
    runnable = [r for r in results if r.error != ErrorCode.ENGINE_UNAVAILABLE]
    reasons: dict[str, int] = {}
    for r in results:
        if r.error == ErrorCode.ENGINE_UNAVAILABLE:
            reasons[r.message or ""] = reasons.get(r.message or "", 0) + 1
    scored = bool(results) and results[0].official_score is not None
    with_gold = None
    if any("has_gold" in r.metrics for r in results):
        from querybench.evaluation.spider2.agentic.dbt import with_gold_summary

        with_gold = with_gold_summary(results)
    return RunSummary(
        benchmark=config.benchmark,
        method=config.method,
        model=config.model,
        n=len(tasks),
        score=mean([r.score for r in results]),
        correct=sum(r.score == 1.0 for r in results),
        finished=len(done),
        failed=sum(not r.ok for r in done),
        unavailable=sum(reasons.values()),
        unavailable_reasons=reasons,
        runnable=len(runnable),
        score_runnable=mean([r.score for r in runnable]),
        errors=errors,
        tokens=Tokens(
            prompt=sum(r.prompt_tokens for r in done),
            completion=sum(r.completion_tokens for r in done),
            total=sum(r.prompt_tokens + r.completion_tokens for r in done),
        ),
        cost=round(sum(r.cost for r in done), 8),
        requests=sum(r.attempts for r in done),
        cached_replies=sum(r.cached for r in done),
        truncated=sum(r.truncation is not None for r in done),
        wall_s=wall_s,
        oracle_settings=tuple(oracle_settings),
        oracle_settings_applied=(
            {
                "reference_plan": sum(bool(t.extra.get("reference_plan")) for t in tasks),
                "oracle_functions": sum(t.extra.get("oracle_functions") is not None for t in tasks),
            }
            if oracle_settings
            else None
        ),
        official_score=mean([r.official_score or 0.0 for r in results]) if scored else None,
        strict_score=mean([r.strict_score or 0.0 for r in results]) if scored else None,
        with_gold=with_gold,
    )


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def write_summary(run_dir: Path, summary: RunSummary) -> None:
    tmp = run_dir / f"{SUMMARY}.tmp"
    tmp.write_text(json.dumps(summary.to_json(), indent=2) + "\n", encoding="utf-8")
    tmp.replace(run_dir / SUMMARY)
