"""Every method through `querybench run` with the labelled oracle: the oracle answers every stage
with the gold SQL, and each method must still end on it (score 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.methods import METHODS
from tests.methods_fixture import make_data


@pytest.mark.parametrize("method", sorted(METHODS))
def test_oracle_scores_all_through_the_cli(
    method: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = make_data(tmp_path / "data")
    monkeypatch.setenv("QUERYBENCH_DATA", str(data))
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    args = ["run", "spider1", "--method", method, "--model", "oracle", "--out", str(out)]
    if method == "dail-sql":
        args += ["--examples", str(data / "pool.jsonl")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["n"], summary["correct"]) == (3, 3)
    config = json.loads((out / "config.json").read_text())
    assert config["examples"] == (args[-1] if method == "dail-sql" else None)
