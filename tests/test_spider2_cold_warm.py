"""Cold and warm agree: a corpus scored with empty caches, again warm (the verdict store
answering), and a new submission scored cold and warm from another's caches, give results
files identical byte for byte."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import require_data

# Instances whose parse depends most on the reader: 24-digit integers (sf_bq093), 19-digit
# floats in shuffled rows (sf_bq058), several gold files, text with gaps; and the first of the
# rest, so that every kind of cell is there.
PICKED = ("sf_bq058", "sf_bq093", "bq011", "local002", "sf_bq001")
QUERYBENCH = str(Path(sys.executable).parent / "querybench")


def _submission(gold: Path, into: Path, change: str) -> None:
    """Each picked instance's gold files (and 40 more instances'), each with `change` appended
    to its first data line's last cell, so that submissions differ in bytes."""
    into.mkdir()
    names = sorted(p.name for p in (gold / "exec_result").glob("*.csv"))
    chosen = [n for n in names if n.startswith(PICKED)] + names[:40]
    for name in dict.fromkeys(chosen):
        iid = name.removesuffix(".csv")
        iid = iid[:-2] if iid[-2:-1] == "_" and iid[-1].isalpha() else iid
        target = into / f"{iid}.csv"
        if target.exists():
            continue
        lines = (gold / "exec_result" / name).read_text().split("\n")
        if len(lines) > 1 and lines[1]:
            lines[1] += change
        target.write_text("\n".join(lines))


def _score(predictions: Path, gold: Path, cache: Path, output: Path) -> bytes:
    env = {**os.environ, "QUERYBENCH_CACHE": str(cache)}
    cmd = [QUERYBENCH, "eval", "spider2-lite", "--predictions", str(predictions)]
    cmd += ["--gold-dir", str(gold), "--output", str(output)]
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    return output.read_bytes()


def test_cold_and_warm_results_are_identical(tmp_path: Path) -> None:
    gold = require_data("spider2", "spider2-lite", "evaluation_suite", "gold")
    first, second = tmp_path / "first", tmp_path / "second"
    _submission(gold, first, "")
    _submission(gold, second, "0")
    warm = tmp_path / "warm"
    cold_first = _score(first, gold, warm, tmp_path / "a.jsonl")
    assert b'"instance_id": "sf_bq093"' in cold_first
    assert _score(first, gold, warm, tmp_path / "b.jsonl") == cold_first  # a re-score
    # a new submission, warm from another's caches, against the same scored with none
    warm_second = _score(second, gold, warm, tmp_path / "c.jsonl")
    assert _score(second, gold, tmp_path / "cold", tmp_path / "d.jsonl") == warm_second
    shutil.rmtree(warm)
    assert _score(first, gold, warm, tmp_path / "e.jsonl") == cold_first
