"""A cache folder that cannot be used (a file, read-only, full, another version's store): the
eval scores the same, and says so once, with what to do."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench import store
from querybench.cli import app
from querybench.engines import cache
from tests.test_cli import _gold, _toy_db
from tests.unsettled import held_in_wal, to_wal

runner = CliRunner()


def _eval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> list[str]:
    pred = tmp_path / "pred"
    pred.mkdir(exist_ok=True)
    (pred / "bq001.csv").write_text("a\n1\n")
    args = ["eval", "spider2-lite", "--predictions", str(pred), "--gold-dir", str(_gold(tmp_path))]
    monkeypatch.setattr(store, "_warned", set(), raising=False)  # this process warned before
    with caplog.at_level(logging.WARNING, logger="querybench"):
        result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_cache_that_is_a_file_warns_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # it used to warn once per store (verdicts, parsed predictions, parsed gold)
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("")
    monkeypatch.setenv("QUERYBENCH_CACHE", str(not_a_folder))
    monkeypatch.delenv("QUERYBENCH_VERDICT_CACHE", raising=False)
    said = _eval(tmp_path, monkeypatch, caplog)
    assert len(said) == 1, said
    assert "scoring without it" in said[0] and "set QUERYBENCH_CACHE to a writable" in said[0]


def test_another_versions_store_says_to_delete_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "cache"
    (root / "verdicts").mkdir(parents=True)
    store = root / "verdicts" / "spider2.sqlite3"
    with sqlite3.connect(store) as db:  # a layout this version does not write
        db.execute("CREATE TABLE sealed (key TEXT PRIMARY KEY, entry BLOB)")
    monkeypatch.setenv("QUERYBENCH_CACHE", str(root))
    monkeypatch.delenv("QUERYBENCH_VERDICT_CACHE", raising=False)
    said = _eval(tmp_path, monkeypatch, caplog)
    assert len(said) == 1, said
    assert f"delete {store} to start afresh" in said[0]


def _eval_spider1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> tuple[str, list[str]]:
    """A two-query Spider 1.0 eval: its output and the warnings it logged."""
    db_dir = _toy_db(tmp_path)
    gold = tmp_path / "gold.sql"
    gold.write_text("SELECT x FROM t\ttoy\nSELECT count(*) FROM t\ttoy\n")
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT x FROM t\nSELECT count(x) FROM t\n")
    monkeypatch.setattr(store, "_warned", set(), raising=False)
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(pred)]
    with caplog.at_level(logging.WARNING, logger="querybench"):
        result = runner.invoke(app, [*args, "--db-dir", str(db_dir)])
    assert result.exit_code == 0, result.output
    return result.output, [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_spider1_with_a_cache_that_is_a_file_warns_once_in_plain_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # it used to be a RuntimeWarning, shown with the source line of spider1.py that raised it
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("")
    monkeypatch.setenv("QUERYBENCH_CACHE", str(not_a_folder))
    output, said = _eval_spider1(tmp_path, monkeypatch, caplog)
    assert "RuntimeWarning" not in output
    assert len(said) == 1, said
    assert "scoring without it" in said[0] and "results" in said[0]


def test_a_damaged_store_that_cannot_be_set_aside_warns_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # a read-only cache folder: it used to say "starting a new one" once per query, and never did
    store = tmp_path / "cache" / "results" / "outcomes.sqlite3"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"not a database, not at all")

    def read_only(*args: object) -> None:
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr(cache.os, "replace", read_only)
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    _, said = _eval_spider1(tmp_path, monkeypatch, caplog)
    assert len(said) == 1, said
    assert "scoring without it" in said[0] and str(store) in said[0]


def test_another_versions_results_store_says_to_delete_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # its failed write used to read as a full or read-only folder
    store = tmp_path / "cache" / "results" / "outcomes.sqlite3"
    store.parent.mkdir(parents=True)
    with sqlite3.connect(store) as db:  # a layout this version does not write
        db.execute("CREATE TABLE sealed (key TEXT PRIMARY KEY, value BLOB, more BLOB)")
    db.close()
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    _, said = _eval_spider1(tmp_path, monkeypatch, caplog)
    assert len(said) == 1, said
    assert f"delete {store} to start afresh" in said[0]


def test_spider1_on_rows_held_in_the_wal_scores_as_cold_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    db_dir = _toy_db(tmp_path)
    database = db_dir / "toy" / "toy.sqlite"
    to_wal(database)
    gold = tmp_path / "gold.sql"
    gold.write_text("SELECT count(*) FROM t\ttoy\nSELECT max(x) FROM t\ttoy\n")
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT 3\nSELECT 3\n")
    out = tmp_path / "scores.jsonl"
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(pred)]
    args += ["--db-dir", str(db_dir), "--output", str(out)]

    def scores() -> list[float]:
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        return [json.loads(line)["score"] for line in out.read_text().splitlines()]

    assert scores() == [1, 1]
    monkeypatch.setattr(cache, "_said_unsettled", set(), raising=False)
    with held_in_wal(database, "INSERT INTO t VALUES (4, 'c'), (5, 'c')"):
        with caplog.at_level(logging.WARNING, logger="querybench"):
            assert scores() == [0, 0]  # the count is 5 now, the max 5: as a cold run says
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(said) == 1, said
        assert "toy.sqlite-wal holds changes not yet in the file" in said[0]
