"""A Spider 2.0 instance's two verdicts, official and strict, and the results line they make.

Apart from the scorers (`spider2.py`) so that a re-score answered by the verdict store
(`verdict_cache`) builds its lines without importing pandas or NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass

from querybench.evaluation.record import InstanceResult
from querybench.evaluation.verdict import Verdict
from querybench.tasks.spider2_gold import GoldFolder, engine_family


@dataclass(frozen=True)
class Verdicts:
    official: Verdict
    strict: Verdict


def instance_result(
    instance_id: str,
    verdicts: Verdicts,
    scoring: str,
    gold: GoldFolder,
) -> InstanceResult:
    chosen = verdicts.official if scoring == "official" else verdicts.strict
    return InstanceResult(
        instance_id=instance_id,
        score=chosen.score,
        error=None if chosen.passed else chosen.error,
        message=None if chosen.passed else chosen.message,
        official_score=verdicts.official.score,
        strict_score=verdicts.strict.score,
        difficulty=gold.difficulty(instance_id),
        engine=engine_family(instance_id),
        detail=None if chosen.passed else chosen.detail,
    )


def failed(instance_id: str, verdict: Verdict, gold: GoldFolder) -> InstanceResult:
    """An instance that never reached comparison (missing, unreadable, did not run)."""
    return instance_result(instance_id, Verdicts(verdict, verdict), "official", gold)
