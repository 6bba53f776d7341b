"""Every Spider 2.0 gold CSV, scored as the prediction of its own instance, passes both scorings."""

from __future__ import annotations

from pathlib import Path

import pytest

from querybench.evaluation.spider2.evaluate import evaluate_spider2
from querybench.evaluation.spider2.gold import Benchmark, Spider2Gold
from querybench.evaluation.spider2.instance import score_frame, strict_condition_cols, variant_of
from querybench.evaluation.spider2.result_csv import read_result_csv
from tests.conftest import require_data


@pytest.mark.slow
@pytest.mark.parametrize("benchmark", ["spider2-lite", "spider2-snow"])
def test_every_gold_file_scores_one_against_itself(benchmark: Benchmark) -> None:
    gold = Spider2Gold(require_data("spider2", benchmark, "evaluation_suite", "gold"), benchmark)
    failures = []
    checked = 0
    for iid, spec in sorted(gold.specs.items()):
        golds, single = gold.load_results(iid)
        per_alt = strict_condition_cols(spec.condition_cols, len(golds))
        for i, path in enumerate(golds.paths):
            frame = read_result_csv(path)
            verdicts = score_frame(frame, golds, single, spec, variant_of(benchmark))
            checked += 1
            if verdicts.official.passed and verdicts.strict.passed:
                continue
            # Only a gold whose own condition_cols do not fit it (an incomplete gold) may fail.
            cols = per_alt[i] or []
            if not any(c >= frame.shape[1] for c in cols):
                failures.append((path.name, verdicts))
    assert checked > 1500
    assert failures == []


@pytest.mark.slow
def test_official_sample_submissions_score_without_errors() -> None:
    for benchmark in ("spider2-lite", "spider2-snow"):
        root = require_data("spider2", benchmark, "evaluation_suite")
        results = evaluate_spider2(
            root / "example_submission_folder_csv", benchmark=benchmark, gold_dir=root / "gold"
        )  # type: ignore[arg-type]
        assert len(results) == 547
        submitted = [r for r in results if r.error != "missing_prediction"]
        assert submitted
        assert {r.error for r in submitted} <= {None, "wrong_result"}


def test_missing_prediction_folder_is_a_clear_error(tmp_path: Path) -> None:
    from querybench.errors import DataError

    with pytest.raises(DataError, match="predictions folder not found"):
        evaluate_spider2(tmp_path / "nope", benchmark="spider2-lite", gold_dir=tmp_path)


def test_difficulty_for_every_task_snow_borrowing_lite_token_counts() -> None:
    from collections import Counter

    counts = {}
    for benchmark in ("spider2-lite", "spider2-snow"):
        gold_dir = require_data("spider2", benchmark, "evaluation_suite", "gold")
        gold = Spider2Gold(gold_dir, benchmark)  # type: ignore[arg-type]
        counts[benchmark] = Counter(gold.difficulty(i) for i in gold.specs)
        assert None not in counts[benchmark]
    assert counts["spider2-lite"] == counts["spider2-snow"]
    assert set(counts["spider2-lite"]) == {"easy", "medium", "hard"}


def test_difficulty_thresholds() -> None:
    from querybench.evaluation.spider2.gold import difficulty_from_tokens

    assert [difficulty_from_tokens(t) for t in (0, 79, 80, 159, 160, None)] == [
        "easy",
        "easy",
        "medium",
        "medium",
        "hard",
        None,
    ]
