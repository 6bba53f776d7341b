"""`querybench verify PATH`: an unchanged results file or run folder is reproduced exactly
(exit 0); a verdict that differs is explained by the right reason (exit 1)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from querybench.cli import app
from querybench.runs import manifest as manifest_module
from querybench.runs.manifest import manifest_path
from querybench.runs.verify import NON_DETERMINISTIC
from tests.reproduce_fixture import eval_spider1, read_json, runner, spider1_fixture
from tests.test_cli import _lite_submission


def _scored(tmp_path: Path) -> tuple[dict[str, Path], Path]:
    files = spider1_fixture(tmp_path)
    out = tmp_path / "scores.jsonl"
    assert eval_spider1(files, out).exit_code == 0
    return files, out


def _verify(path: Path) -> Result:
    return runner.invoke(app, ["verify", str(path)])


def _edit_json(path: Path, edit: Any) -> None:
    data = read_json(path)
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _edit_result(results: Path, index: int, **fields: Any) -> None:
    lines = results.read_text(encoding="utf-8").splitlines()
    lines[index] = json.dumps(json.loads(lines[index]) | fields)
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _differing(output: str) -> list[str]:
    """The instances `verify` says differ (its `<id>: recorded ..., now ...` lines)."""
    return [m.group(1) for m in re.finditer(r"^(\S+): recorded .*, now ", output, re.M)]


def test_an_unchanged_results_file_is_reproduced(tmp_path: Path) -> None:
    _files, out = _scored(tmp_path)
    result = _verify(out)
    assert result.exit_code == 0, result.output
    assert "reproduced: all 3 verdicts are the same" in result.output
    assert "differs from the manifest" not in result.output


def test_a_changed_gold_file_is_named(tmp_path: Path) -> None:
    files, out = _scored(tmp_path)
    text = files["gold"].read_text(encoding="utf-8").replace("max(age)", "min(age)")
    files["gold"].write_text(text, encoding="utf-8")
    result = _verify(out)
    assert result.exit_code == 1, result.output
    assert _differing(result.output) == ["2"]
    assert "because gold (gold) changed" in result.output


def test_a_changed_database_is_named(tmp_path: Path) -> None:
    files, out = _scored(tmp_path)
    with sqlite3.connect(files["db"]) as conn:  # every age the same: min(age) == max(age)
        conn.execute("UPDATE singer SET age = 30")
    conn.close()
    result = _verify(out)
    assert result.exit_code == 1, result.output
    assert _differing(result.output) == ["2"]
    assert "because db_dir/concert/concert.sqlite (database) changed" in result.output


def test_a_changed_prediction_is_named(tmp_path: Path) -> None:
    files, out = _scored(tmp_path)
    text = files["pred"].read_text(encoding="utf-8")
    files["pred"].write_text(text.replace("count(*)", "count(*) + 1", 1), encoding="utf-8")
    result = _verify(out)
    assert result.exit_code == 1, result.output
    assert _differing(result.output) == ["0"]
    assert "because predictions (prediction) changed" in result.output


def test_a_changed_prediction_file_of_one_instance_explains_that_instance_only(
    tmp_path: Path,
) -> None:
    pred, args = _lite_submission(tmp_path)
    (pred / "local003.csv").write_text("v\n1\n")
    out = tmp_path / "scores.jsonl"
    assert runner.invoke(app, [*args, "--output", str(out)]).exit_code == 0
    (tmp_path / "gold" / "exec_result" / "local003.csv").write_text("v\n2\n")
    result = _verify(out)
    assert result.exit_code == 1, result.output
    assert _differing(result.output) == ["local003"]
    assert "because gold_dir/exec_result/local003.csv (gold) changed" in result.output
    assert "(local003)" in result.output  # the change names the instance it belongs to


def test_a_different_pandas_is_the_reason(tmp_path: Path) -> None:
    _files, out = _scored(tmp_path)
    _edit_json(manifest_path(out), lambda m: m["libraries"].update(pandas="2.2.3"))
    _edit_result(out, 1, score=0.0, error="wrong_result")  # as that pandas scored it
    result = _verify(out)
    assert result.exit_code == 1, result.output
    assert _differing(result.output) == ["1"]
    assert "because pandas differs: recorded 2.2.3, here" in result.output
    assert NON_DETERMINISTIC not in result.output
    assert "changed" not in result.output


def test_a_different_timeout_policy_is_the_reason(tmp_path: Path) -> None:
    _files, out = _scored(tmp_path)
    _edit_json(
        manifest_path(out),
        lambda m: m["timeout_policy"].update(counts="other clock", wall_cap_s=1.0),
    )
    _edit_result(out, 0, score=0.0, error="timeout")  # as that policy decided it
    result = _verify(out)
    assert result.exit_code == 1, result.output
    assert _differing(result.output) == ["0"]
    assert "because the timeout policy differs: recorded counts other clock" in result.output


def test_a_verdict_that_differs_with_nothing_changed_is_non_deterministic(
    tmp_path: Path,
) -> None:
    _files, out = _scored(tmp_path)
    _edit_result(out, 2, score=1.0, error=None)
    result = _verify(out)
    assert result.exit_code == 1, result.output
    assert "because " + NON_DETERMINISTIC in " ".join(result.output.split())


def test_a_results_file_without_its_manifest_exits_two(tmp_path: Path) -> None:
    _files, out = _scored(tmp_path)
    manifest_path(out).unlink()
    result = _verify(out)
    assert result.exit_code == 2
    assert "manifest" in result.output


def test_a_run_folder_is_reproduced_and_a_changed_prediction_named(tmp_path: Path) -> None:
    from querybench.runs.config import RunConfig, Selection
    from querybench.runs.runner import run
    from tests.methods_fixture import make_data

    data = make_data(tmp_path / "data")
    out = tmp_path / "run"
    outcome = run(
        RunConfig("spider1", "zero-shot", "oracle", out=out, selection=Selection(data_dir=data))
    )
    assert outcome.results and (out / "manifest.json").is_file()
    manifest: dict[str, Any] = read_json(out / "manifest.json")
    assert manifest["kind"] == "run" and manifest["run"]["config"]["model"] == "oracle"
    assert len(manifest["run"]["prompts_sha256"]) == 64
    assert manifest["inputs"]["records"]["role"] == "prediction"
    result = _verify(out)
    assert result.exit_code == 0, result.output
    first = outcome.results[0].instance_id
    lines = (out / "pred.txt").read_text(encoding="utf-8").splitlines()
    lines[0] = "SELECT 12345"
    (out / "pred.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = _verify(out)
    assert result.exit_code == 1, result.output
    assert _differing(result.output) == [first]
    assert "because predictions (prediction) changed" in result.output


def test_a_hostile_manifest_is_refused_with_its_reason_never_a_traceback(tmp_path: Path) -> None:
    """A manifest is read as untrusted: a field of the wrong type, JSON nested past the
    reader, is exit 2 with `not a querybench manifest` and the field, before anything is
    hashed or scored."""
    _files, out = _scored(tmp_path)
    manifest = manifest_path(out)
    original = read_json(manifest)
    hostile: dict[str, Any] = {
        "options": "x",
        "run": "x",
        "kind": "elsewhere",
        "predictions_path": 5,
        "task_set": [],
        "scorer": 1,
        "libraries": {"pandas": 3},
    }
    for key, value in hostile.items():
        manifest.write_text(json.dumps({**original, key: value}), encoding="utf-8")
        result = _verify(out)
        assert result.exit_code == 2, (key, result.output, result.exception)
        assert "not a querybench manifest" in result.output and key in result.output, key
    manifest.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    result = _verify(out)
    assert result.exit_code == 2 and "not JSON" in result.output, result.output


def test_verify_hashes_only_the_databases_the_manifest_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A manifest whose database folder is a huge tree (`/`, a home folder): only the databases
    # the scored instances used are hashed, never every file under it.
    files, out = _scored(tmp_path)
    for n in range(50):  # unrelated databases, beside and below the one scored
        for where in (files["db_dir"] / f"other{n}", files["db_dir"] / "deep" / "er" / str(n)):
            where.mkdir(parents=True, exist_ok=True)
            (where / f"other{n}.sqlite").write_bytes(b"x")
    hashed: list[Path] = []
    digest = manifest_module._database_digest

    def recording(path: Path, cache: Any) -> str:
        hashed.append(path)
        return digest(path, cache)

    monkeypatch.setattr(manifest_module, "_database_digest", recording)
    result = _verify(out)
    assert result.exit_code == 0, result.output
    assert hashed == [files["db"]]


def test_verify_of_a_manifest_naming_the_root_as_its_database_folder_walks_nothing(
    tmp_path: Path,
) -> None:
    _files, out = _scored(tmp_path)
    _edit_json(manifest_path(out), lambda data: data["options"].update(db_dir={"$path": "/"}))
    result = _verify(out)
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output
    assert "db_dir/concert/concert.sqlite" in result.output  # named as gone, not searched for


def test_a_prediction_added_where_none_was_is_named(tmp_path: Path) -> None:
    # The manifest hashes no gold of an instance without a prediction (its verdict read none);
    # verify takes the same instances, and names the prediction that appeared since.
    pred, args = _lite_submission(tmp_path)
    out = tmp_path / "scores.jsonl"
    assert runner.invoke(app, [*args, "--output", str(out)]).exit_code == 0
    unchanged = _verify(out)
    assert unchanged.exit_code == 0, unchanged.output
    assert "reproduced: all 3 verdicts are the same" in unchanged.output
    (pred / "local003.csv").write_text("v\n1\n")
    result = _verify(out)
    assert result.exit_code == 1, result.output
    assert _differing(result.output) == ["local003"]
    assert "predictions/local003.csv (prediction) is new" in result.output


def test_a_results_file_edited_to_hide_its_predictions_still_names_the_changed_gold(
    tmp_path: Path,
) -> None:
    # The instances whose files are compared come from the re-score too, never only from the
    # results file: one edited to say `missing_prediction` everywhere hides nothing.
    _pred, args = _lite_submission(tmp_path)
    out = tmp_path / "scores.jsonl"
    assert runner.invoke(app, [*args, "--output", str(out)]).exit_code == 0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    index = next(i for i, line in enumerate(lines) if line["instance_id"] == "bq001")
    _edit_result(out, index, score=0.0, error="missing_prediction")
    (tmp_path / "gold" / "exec_result" / "bq001.csv").write_text("a,b\n1,x\n3,y\n")
    result = _verify(out)
    assert result.exit_code == 1, result.output
    assert _differing(result.output) == ["bq001"]
    assert "gold_dir/exec_result/bq001.csv (gold) changed" in result.output
