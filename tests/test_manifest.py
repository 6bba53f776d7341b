"""The score manifest: `eval --output FILE` writes FILE.manifest.json with everything its
verdicts were decided by."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from pathlib import Path
from typing import Any

from querybench.cli import app
from querybench.runs.manifest import Manifest, decode, encode, manifest_path
from tests.reproduce_fixture import eval_spider1, read_json, spider1_fixture
from tests.test_cli import _lite_submission
from tests.test_eval_output import runner


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_eval_writes_the_manifest_beside_its_output(tmp_path: Path) -> None:
    files = spider1_fixture(tmp_path)
    out = tmp_path / "scores.jsonl"
    result = eval_spider1(files, out, timeout=7.0)
    assert result.exit_code == 0, result.output
    assert manifest_path(out) == tmp_path / "scores.jsonl.manifest.json"
    data: dict[str, Any] = read_json(manifest_path(out))
    assert data["kind"] == "eval" and data["benchmark"] == "spider1"
    inputs = data["inputs"]
    assert inputs["gold"] == {"sha256": _sha(files["gold"]), "role": "gold", "instances": []}
    assert inputs["predictions"]["sha256"] == _sha(files["pred"])
    assert inputs["db_dir/concert/concert.sqlite"]["sha256"] == _sha(files["db"])
    assert inputs["db_dir/concert/concert.sqlite"]["role"] == "database"
    assert data["libraries"]["pandas"] == importlib.metadata.version("pandas")
    assert data["libraries"]["numpy"] == importlib.metadata.version("numpy")
    assert data["libraries"]["sqlite"].split()[0]
    assert len(data["scorer"]["sha256"]) == 64
    assert data["timeout_policy"]["seconds"] == 7.0
    assert data["machine"]["cores"] == os.cpu_count()
    assert len(data["machine"]["load_at_start"]) == 3
    assert data["options"]["timeout"] == 7.0
    assert data["task_set"]["instances"] == 3
    assert Manifest.read(manifest_path(out)).inputs["gold"].sha256 == _sha(files["gold"])


def test_a_spider2_manifest_ties_gold_and_prediction_files_to_their_instance(
    tmp_path: Path,
) -> None:
    pred, args = _lite_submission(tmp_path)
    (pred / "sf002.csv").write_text("n\n5\n")
    out = tmp_path / "scores.jsonl"
    result = runner.invoke(app, [*args, "--output", str(out)])
    assert result.exit_code == 0, result.output
    inputs: dict[str, Any] = read_json(manifest_path(out))["inputs"]
    assert inputs["gold_dir/exec_result/sf002_a.csv"]["instances"] == ["sf002"]
    # local003 has no prediction: its verdict read no gold, so its gold is not hashed
    assert "gold_dir/exec_result/local003.csv" not in inputs
    assert read_json(manifest_path(out))["task_set"]["instances"] == 3
    assert inputs["gold_dir/spider2lite_eval.jsonl"]["role"] == "eval_config"
    assert inputs["predictions/bq001.csv"] == {
        "sha256": _sha(pred / "bq001.csv"),
        "role": "prediction",
        "instances": ["bq001"],
    }
    assert read_json(manifest_path(out))["timeout_policy"] is None  # exec_result runs nothing
    # nor does it open a database: the data's lite databases decided nothing
    assert [k for k, v in inputs.items() if v["role"] == "database"] == []


def test_options_round_trip_through_json(tmp_path: Path) -> None:
    from querybench.evaluation.prediction_file import ReadLimits

    options = {"gold_dir": tmp_path, "db_dir": [tmp_path / "a"], "limits": ReadLimits(), "n": 2}
    assert decode(encode(options)) == options


def test_a_database_state_held_in_its_wal_is_its_own_digest(tmp_path: Path) -> None:
    # The file's bytes stay put while the -wal holds rows: the manifest names the state read.
    from querybench.runs.manifest import input_files
    from tests.test_cli import _toy_db
    from tests.unsettled import held_in_wal, to_wal

    database = _toy_db(tmp_path) / "toy" / "toy.sqlite"
    to_wal(database)

    def digest() -> str:
        return input_files({"db_dir": database.parent.parent}, [])["db_dir/toy/toy.sqlite"].sha256

    settled = digest()
    with held_in_wal(database, "INSERT INTO t VALUES (4, 'c')"):
        held = digest()
    assert held != settled
    assert digest() != settled  # checkpointed into the file now: another state again


def test_a_database_hashed_for_a_manifest_is_not_read_again_by_the_next(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # A database the eval itself did not open is hashed for the manifest once, then found in
    # the result store by the file's identity (a BIRD db folder holds gigabytes).
    from querybench.engines import cache
    from querybench.runs.manifest import input_files
    from tests.test_cli import _toy_db

    folder = _toy_db(tmp_path)
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    reads: list[str] = []
    read = cache.database_fingerprint

    def counted(path: str | Path) -> str:
        reads.append(str(path))
        return read(path)

    monkeypatch.setattr(cache, "database_fingerprint", counted)
    first = input_files({"db_dir": folder}, [])
    monkeypatch.setattr(cache, "_fingerprints", {})  # a new process: nothing remembered
    second = input_files({"db_dir": folder}, [])
    assert second == first
    assert reads == [str(folder / "toy" / "toy.sqlite")]
    assert first["db_dir/toy/toy.sqlite"].sha256 == _sha(folder / "toy" / "toy.sqlite")


def test_installed_versions_are_those_importlib_metadata_reads(tmp_path: Path) -> None:
    import sys

    from querybench.versions import installed_version

    for name in (
        "pandas",
        "numpy",
        "pyarrow",
        "sqlglot",
        "duckdb",
        "querybench",
        "typer",
        "PyYAML",
    ):
        assert installed_version(name) == importlib.metadata.version(name), name
    assert installed_version("no-such-distribution-here") is None
    # a folder on the path holding a distribution whose metadata is written unusually
    site = tmp_path / "site"
    info = site / "Odd.Name-9.9.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: Odd.Name\nVersion: 1.2.post3\n")
    plain = site / "plain_pkg-1.0.egg-info"
    plain.write_text("Metadata-Version: 1.0\nName: plain-pkg\nVERSION:  4.5\n\nVersion: 6\n")
    sys.path.insert(0, str(site))
    try:
        importlib.invalidate_caches()
        for name in ("odd-name", "Odd_Name", "plain.pkg"):
            assert installed_version(name) == importlib.metadata.version(name), name
        assert installed_version("odd-name") == "1.2.post3"
        assert installed_version("plain-pkg") == "4.5"
    finally:
        sys.path.remove(str(site))


def test_the_platform_is_platforms_own_words() -> None:
    import platform

    from querybench.runs.manifest import platform_name

    assert platform_name() == platform.platform()


def _git(*args: str, cwd: Path) -> str:
    import subprocess

    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_the_commit_is_read_from_the_checkouts_files_as_git_reads_it(tmp_path: Path) -> None:
    # A branch loose, then packed (`git pack-refs`), then a worktree's `.git` file, then a
    # detached HEAD: the files say what `git rev-parse HEAD` says, without starting git.
    import shutil

    import pytest

    from querybench.runs.manifest import head_commit

    if shutil.which("git") is None:
        pytest.skip("no git")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git("init", "-q", "-b", "main", cwd=repo)
    for n in range(2):
        (repo / "f").write_text(str(n))
        _git("add", "f", cwd=repo)
        _git("-c", "user.name=q", "-c", "user.email=q@q", "commit", "-qm", str(n), cwd=repo)
    assert head_commit(repo) == _git("rev-parse", "HEAD", cwd=repo)
    _git("pack-refs", "--all", cwd=repo)
    assert not (repo / ".git/refs/heads/main").exists()
    assert head_commit(repo) == _git("rev-parse", "HEAD", cwd=repo)
    _git("worktree", "add", "-q", "-b", "side", str(tmp_path / "side"), "HEAD~1", cwd=repo)
    assert (tmp_path / "side/.git").is_file()
    assert head_commit(tmp_path / "side") == _git("rev-parse", "HEAD~1", cwd=repo)
    _git("checkout", "-q", "--detach", "HEAD~1", cwd=repo)
    assert head_commit(repo) == _git("rev-parse", "HEAD", cwd=repo)
    (repo / ".git/HEAD").write_text("ref: refs/heads/none\n")  # unborn: git is asked
    assert head_commit(repo) is None


def test_a_folder_nested_past_the_recursion_limit_is_walked(tmp_path: Path) -> None:
    # A predictions folder is the submitter's: nesting it 1,100 deep must not end the eval in
    # a RecursionError after its scoring
    pred, args = _lite_submission(tmp_path)
    folders = [pred / ("d/" * k) for k in range(1, 1101)]
    for folder in folders:
        os.mkdir(folder)
    (folders[-1] / "bq001.csv").write_text("x\n")
    out = tmp_path / "scores.jsonl"
    try:
        result = runner.invoke(app, [*args, "--output", str(out)])
        assert result.exit_code == 0, result.output
        inputs: dict[str, Any] = read_json(manifest_path(out))["inputs"]
        assert inputs[f"predictions/{'d/' * 1100}bq001.csv"]["instances"] == ["bq001"]
    finally:  # pytest's own clean-up recurses: the tree goes here, deepest first
        (folders[-1] / "bq001.csv").unlink()
        for folder in reversed(folders):
            os.rmdir(folder)


def test_a_link_out_of_the_predictions_folder_is_not_read_for_the_manifest(
    tmp_path: Path,
) -> None:
    # Scoring refuses a prediction that links out of its folder; the manifest must not read
    # the host file behind it either (its sha256 would land in the manifest)
    secret = tmp_path / "host-secret.txt"
    secret.write_text("a host file\n")
    pred, args = _lite_submission(tmp_path)
    (pred / "sf002.csv").symlink_to(secret)
    (pred / "notes.txt").symlink_to(secret)
    out = tmp_path / "scores.jsonl"
    result = runner.invoke(app, [*args, "--output", str(out)])
    assert result.exit_code == 0, result.output
    inputs: dict[str, Any] = read_json(manifest_path(out))["inputs"]
    assert {inputs["predictions/sf002.csv"]["sha256"], inputs["predictions/notes.txt"]["sha256"]}
    assert _sha(secret) not in {v["sha256"] for v in inputs.values()}
    assert inputs["predictions/bq001.csv"]["sha256"] == _sha(pred / "bq001.csv")
    verified = runner.invoke(app, ["verify", str(out)])
    assert verified.exit_code == 0, verified.output
