"""One scored instance, as written to the output JSONL and summarised in the terminal."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from querybench.errors import DataError, ErrorCode
from querybench.evaluation.detail import VerdictDetail

if TYPE_CHECKING:
    from querybench.evaluation.spider1.exact import ExactMatch, ExactMatchFailure


@dataclass(frozen=True)
class InstanceResult:
    instance_id: str
    score: float
    error: ErrorCode | None = None
    message: str | None = None
    # Spider 2.0 reports both scorings; other benchmarks leave these None.
    official_score: float | None = None
    strict_score: float | None = None
    difficulty: str | None = None
    engine: str | None = None
    # Extra per-instance metrics (BIRD's `trivial`, `gold_error`, `soft_f1`, ...), each a value
    # whose mean over the instances is the metric (0/1 flags, or BIRD's Soft-F1 and R-VES).
    metrics: dict[str, float] = field(default_factory=dict)
    # Why it failed, typed (the report reads this, never `message`). None on a pass, and in a
    # results file written before details existed: there a report has the code alone.
    detail: VerdictDetail | None = None
    # Spider 1.0 exact match with its partial scores (`--metrics ex,em`), `metrics["em"]` its
    # score; None when not asked for.
    exact_match: ExactMatch | ExactMatchFailure | None = None

    def to_json(self) -> dict[str, Any]:
        # The fields as they are (all plain values) rather than `asdict`'s deep copy, which is
        # most of the cost of writing a large output file. The detail is an extra key, last.
        out = {**vars(self), "metrics": dict(self.metrics)}
        for key in ("official_score", "strict_score"):
            if out[key] is None:
                del out[key]
        if not out["metrics"]:
            del out["metrics"]
        if self.detail is None:
            del out["detail"]
        else:
            out["detail"] = self.detail.to_json()
        if self.exact_match is None:
            del out["exact_match"]
        else:
            out["exact_match"] = self.exact_match.to_json()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> InstanceResult:
        """The inverse of `to_json`; `DataError` when `data` is not one (an error that is no
        `ErrorCode` value included)."""
        if not isinstance(data, dict):
            raise DataError(f"not a scored instance (not a JSON object): {str(data)[:120]}")
        try:
            error = data.get("error")
            return cls(
                instance_id=str(data["instance_id"]),
                score=float(data["score"]),
                error=None if error is None else ErrorCode(error),
                message=_text_or_none(data.get("message")),
                official_score=_float_or_none(data.get("official_score")),
                strict_score=_float_or_none(data.get("strict_score")),
                difficulty=_text_or_none(data.get("difficulty")),
                engine=_text_or_none(data.get("engine")),
                metrics={str(k): float(v) for k, v in (data.get("metrics") or {}).items()},
                detail=VerdictDetail.from_json(data["detail"]) if "detail" in data else None,
                exact_match=_exact_match(data.get("exact_match")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"not a scored instance ({exc}): {str(data)[:120]}") from exc


def _exact_match(data: Any) -> ExactMatch | ExactMatchFailure | None:
    if data is None:
        return None
    from querybench.evaluation.spider1.exact import exact_match_from_json

    return exact_match_from_json(data)


def _text_or_none(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"expected text, got {type(value).__name__}")


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


# What every evaluator calls once per scored instance (progress, streaming to a file).
OnResult = Callable[[InstanceResult], None]


@dataclass(frozen=True)
class EvalEvents:
    """What `evaluate` tells its caller while it scores, each optional: `on_total(n)` once,
    when the number of instances is known before the first is scored (Spider 2.0's
    evaluators); `on_query()` after each query run (Spider 1.0, BIRD); `on_result(result)` once
    per scored instance. An evaluator that cannot know one of them never calls it."""

    on_total: Callable[[int], None] | None = None
    on_query: Callable[[], None] | None = None
    on_result: OnResult | None = None
