"""The fast official scorer agrees, case by case, with a plain transcription of the official one."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bench.official_baseline import score_instance
from querybench.evaluation.spider2.evaluate import evaluate_spider2
from querybench.evaluation.spider2.gold import Spider2Gold
from tests.conftest import require_data
from tests.perturb import ALL_NAMES, write_perturbed

MAX_GOLD_BYTES = 20_000  # the baseline is slow on big files; small ones cover every code path


def _agreement(benchmark: str, eval_name: str, n_instances: int, seed: int, tmp: Path) -> int:
    gold_dir = require_data("spider2", benchmark, "evaluation_suite", "gold")
    gold = Spider2Gold(gold_dir, benchmark)  # type: ignore[arg-type]
    specs = {
        json.loads(line)["instance_id"]: json.loads(line)
        for line in (gold_dir / eval_name).read_text().splitlines()
    }
    rng = random.Random(seed)
    candidates = []
    for iid in sorted(specs):
        paths, _ = gold.result_paths(iid)
        small = [p for p in paths if p.stat().st_size <= MAX_GOLD_BYTES]
        if small:
            candidates.append((iid, small))
    chosen = rng.sample(candidates, min(n_instances, len(candidates)))
    variant = "lite" if benchmark == "spider2-lite" else "snow"
    checked = 0
    for name in ALL_NAMES:
        pred_dir = tmp / name
        pred_dir.mkdir()
        for iid, paths in chosen:
            write_perturbed(rng.choice(paths), pred_dir / f"{iid}.csv", name, rng.randrange(10**6))
        ours = {
            r.instance_id: r
            for r in evaluate_spider2(pred_dir, benchmark=benchmark, gold_dir=gold_dir)
        }  # type: ignore[arg-type]
        for iid, _ in chosen:
            expected = score_instance(
                str(pred_dir / f"{iid}.csv"),
                str(gold_dir / "exec_result"),
                iid,
                specs[iid],
                variant,
            )
            assert ours[iid].official_score == expected, (name, iid, ours[iid])
            checked += 1
    return checked


@pytest.mark.slow
@pytest.mark.parametrize(
    ("benchmark", "eval_name"),
    [("spider2-lite", "spider2lite_eval.jsonl"), ("spider2-snow", "spider2snow_eval.jsonl")],
)
def test_official_agrees_with_reference_on_perturbed_golds(
    benchmark: str, eval_name: str, tmp_path: Path
) -> None:
    checked = _agreement(benchmark, eval_name, n_instances=40, seed=7, tmp=tmp_path)
    assert checked == 40 * len(ALL_NAMES)
