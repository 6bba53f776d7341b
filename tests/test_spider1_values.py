"""`eval spider1 --plug_value / --keep_distinct`: the official execution flags' meaning."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from querybench.evaluation.spider1.evaluate import evaluate_spider1
from querybench.evaluation.spider1.values import plugged_predictions, value_slots


@pytest.fixture(autouse=True)
def _private_result_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))


def test_value_slots_read_as_the_official_plugging() -> None:
    # quoted strings, decimals and integers are values; an alias's digits (T1) are not
    slots = value_slots("SELECT T1.name FROM singer AS T1 WHERE T1.age > 30 AND T1.x = 'Ann'")
    assert slots.values == {"30", "'Ann'"}
    assert slots.slots == 2
    assert slots.words[:4] == ("select", "t1", ".", "name")


def test_every_way_of_filling_the_slots_with_gold_values() -> None:
    gold = "SELECT count(*) FROM singer WHERE age > 30 AND name = 'Ann'"
    pred = "SELECT count(*) FROM singer WHERE age > 1 AND name = 'Bob'"
    plugged = list(plugged_predictions(gold, pred))
    assert len(plugged) == 4  # two gold values, two slots
    assert "select count ( * ) from singer where age > 30 and name = 'Ann'" in plugged
    assert list(plugged_predictions("SELECT name FROM singer", pred)) == []  # no gold values
    assert list(plugged_predictions(gold, "")) == []


def _files(tmp_path: Path, gold: list[str], pred: list[str]) -> tuple[Path, Path, Path]:
    db = tmp_path / "db" / "music" / "music.sqlite"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE singer (id INTEGER, name TEXT, age INTEGER)")
    rows = [(1, "Ann", 30), (2, "Bob", 25), (3, "Cid", 41), (4, "Ann", 52)]
    con.executemany("INSERT INTO singer VALUES (?, ?, ?)", rows)
    con.commit()
    con.close()
    gold_file, pred_file = tmp_path / "gold.sql", tmp_path / "pred.sql"
    gold_file.write_text("".join(f"{g}\tmusic\n" for g in gold), encoding="utf-8")
    pred_file.write_text("".join(f"{p}\n" for p in pred), encoding="utf-8")
    return gold_file, pred_file, tmp_path / "db"


def test_plug_value_passes_a_prediction_right_but_for_its_values(tmp_path: Path) -> None:
    gold, pred, db = _files(
        tmp_path,
        ["SELECT name FROM singer WHERE age > 40", "SELECT name FROM singer WHERE age > 40"],
        ["SELECT name FROM singer WHERE age > value", "SELECT name FROM singer WHERE id > 3"],
    )

    def scores(**flags: bool) -> list[float]:
        found = evaluate_spider1(pred, gold=gold, db_dir=db, timeout=10, workers=1, **flags)
        return [r.score for r in found]

    assert scores() == [0.0, 0.0]  # "value" runs as 1: every singer
    assert scores(plug_value=True) == [1.0, 0.0]  # age > 40 plugged; id > 40 is still wrong


def test_keep_distinct_keeps_it_when_executing(tmp_path: Path) -> None:
    gold, pred, db = _files(
        tmp_path, ["SELECT DISTINCT name FROM singer"], ["SELECT name FROM singer"]
    )
    (dropped,) = evaluate_spider1(pred, gold=gold, db_dir=db, timeout=10, workers=1)
    (kept,) = evaluate_spider1(
        pred, gold=gold, db_dir=db, timeout=10, workers=1, keep_distinct=True
    )
    assert (dropped.score, kept.score) == (1.0, 0.0)  # Ann twice against Ann once


def test_the_command_takes_the_official_flags(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from querybench.cli import app

    gold, pred, db = _files(
        tmp_path,
        ["SELECT name FROM singer WHERE age > 40"],
        ["SELECT name FROM singer WHERE age > 1"],
    )
    out = tmp_path / "out.jsonl"
    args = ["eval", "spider1", "--predictions", str(pred), "--gold", str(gold), "--db-dir", str(db)]
    for flags, expected in (([], 0.0), (["--plug_value", "--keep_distinct"], 1.0)):
        result = CliRunner().invoke(app, [*args, *flags, "--output", str(out)])
        assert result.exit_code == 0, result.output
        assert f'"score": {expected}' in out.read_text(encoding="utf-8")
