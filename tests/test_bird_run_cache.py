"""A whole BIRD run kept by its inputs (`evaluation/bird/run_cache.py`): a re-score of
unchanged inputs runs nothing and returns the same results; any changed input, option,
database or code is a miss; a run with an outcome of the moment is never kept."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from querybench import store
from querybench.engines import cache as cache_module
from querybench.engines.cache import RESULTS
from querybench.evaluation.bird import evaluate as bird_module
from querybench.evaluation.bird import run_cache as bird_run_cache
from querybench.evaluation.bird.evaluate import evaluate_bird
from querybench.evaluation.bird.metrics import BirdMetric
from querybench.evaluation.record import InstanceResult
from tests.test_bird import _official, _tiny_files, _write
from tests.test_import_graph import evaluation_modules_reached
from tests.unsettled import held_in_wal, to_wal

Files = tuple[Path, Path, Path]


@pytest.fixture
def files(tmp_path: Path) -> Files:
    """The tiny BIRD files and two questions whose verdict moves with the data."""
    questions, predictions, db_dir = _tiny_files(tmp_path)
    listed, predicted = json.loads(questions.read_text()), json.loads(predictions.read_text())
    for qid, gold, prediction in [
        (50, "SELECT name FROM item WHERE id = 1", "SELECT 'pen'"),
        (51, "SELECT count(*) FROM item", "SELECT 4"),
    ]:
        listed.append({"question_id": qid, "db_id": "shop", "SQL": gold})
        predicted[str(qid)] = _official(prediction)
    return _write(questions, listed), _write(predictions, predicted), db_dir


def _scored(
    files: Files, cache: Path, monkeypatch: pytest.MonkeyPatch, **options: Any
) -> tuple[list[InstanceResult], bool, list[str]]:
    """The results, whether the rows were looked at (a miss), and the ids `on_result` saw."""
    questions, predictions, db_dir = files
    looked: list[bool] = []
    real = bird_module.run_gold_and_predictions

    def counting(*args: Any, **kwargs: Any) -> Any:
        looked.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(bird_module, "run_gold_and_predictions", counting)
    seen: list[str] = []
    results = evaluate_bird(
        predictions,
        questions=questions,
        db_dir=db_dir,
        timeout=options.pop("timeout", 10),
        workers=2,
        cache_dir=cache,
        on_result=lambda r: seen.append(r.instance_id),
        **options,
    )
    return results, bool(looked), seen


def _uncached(files: Files, tmp_path: Path, **options: Any) -> list[InstanceResult]:
    fresh = tmp_path / f"fresh-{len(list(tmp_path.glob('fresh-*')))}"
    questions, predictions, db_dir = files
    timeout = options.pop("timeout", 10)
    return evaluate_bird(
        predictions, questions=questions, db_dir=db_dir, timeout=timeout, cache_dir=fresh, **options
    )


def test_a_rescore_of_unchanged_inputs_looks_at_no_row_and_says_the_same(
    files: Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold, looked_cold, _ = _scored(files, tmp_path / "cache", monkeypatch)
    warm, looked_warm, seen = _scored(files, tmp_path / "cache", monkeypatch)
    assert (looked_cold, looked_warm) == (True, False)
    assert warm == cold == _uncached(files, tmp_path)  # every field, the detail included
    assert [type(r.error) for r in warm] == [type(r.error) for r in cold]  # ErrorCode members
    assert [r.to_json() for r in warm] == [r.to_json() for r in cold]
    assert seen == [r.instance_id for r in cold]
    assert {r.error for r in warm} >= {"wrong_result", "exec_error", "engine_unavailable"}


def _edit_questions(files: Files, tmp_path: Path) -> None:
    text = (
        files[0].read_text().replace("SELECT max(price) FROM item", "SELECT min(price) FROM item")
    )
    files[0].write_text(text)


def _edit_predictions(files: Files, tmp_path: Path) -> None:
    files[1].write_text(files[1].read_text().replace("ORDER BY name DESC", "LIMIT 1"))


def _edit_database(files: Files, tmp_path: Path) -> None:
    """In place, the size and mtime kept: the content hash changes, the result cache's key too."""
    db = files[2] / "shop" / "shop.sqlite"
    stat = db.stat()
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE item SET name = 'zzz' WHERE id = 1")
    os.utime(db, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert db.stat().st_size == stat.st_size


def _add_missing_database(files: Files, tmp_path: Path) -> None:
    shutil.copytree(files[2] / "shop", files[2] / "gone")
    (files[2] / "gone" / "shop.sqlite").rename(files[2] / "gone" / "gone.sqlite")


def _remove_database(files: Files, tmp_path: Path) -> None:
    (files[2] / "shop" / "shop.sqlite").unlink()


def _swap_database(files: Files, tmp_path: Path) -> None:
    """Another file with another content at the same path (a new inode)."""
    db = files[2] / "shop" / "shop.sqlite"
    copy = tmp_path / "copy.sqlite"
    shutil.copy(db, copy)
    with contextlib.closing(sqlite3.connect(copy)) as conn, conn:
        conn.execute("DELETE FROM item WHERE id = 2")
    copy.replace(db)


CHANGES: dict[str, Callable[[Files, Path], None]] = {
    "questions": _edit_questions,
    "predictions": _edit_predictions,
    "database edited in place": _edit_database,
    "database replaced": _swap_database,
    "missing database appears": _add_missing_database,
    "database removed": _remove_database,
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_changed_input_or_database_is_scored_again(
    files: Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    before, _, _ = _scored(files, tmp_path / "cache", monkeypatch)
    CHANGES[change](files, tmp_path)
    after, looked, _ = _scored(files, tmp_path / "cache", monkeypatch)
    assert looked
    assert after == _uncached(files, tmp_path)
    assert after != before
    again, looked_again, _ = _scored(files, tmp_path / "cache", monkeypatch)
    assert (again, looked_again) == (after, False)  # the new run is kept in its turn


def test_a_database_edited_during_the_run_is_not_recorded_with_its_old_results(
    files: Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The rows were read before the edit; the entry must not pair them with the new content.
    real = bird_module.run_gold_and_predictions

    def edit_after(*args: Any, **kwargs: Any) -> Any:
        outcomes = real(*args, **kwargs)
        _edit_database(files, tmp_path)
        return outcomes

    monkeypatch.setattr(bird_module, "run_gold_and_predictions", edit_after)
    questions, predictions, db_dir = files
    evaluate_bird(predictions, questions=questions, db_dir=db_dir, cache_dir=tmp_path / "cache")
    monkeypatch.undo()
    after, looked, _ = _scored(files, tmp_path / "cache", monkeypatch)
    assert looked
    assert after == _uncached(files, tmp_path)


def test_rows_held_in_the_wal_are_scored_not_served(
    files: Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file's bytes, size and times stay put while the -wal holds the new rows.
    to_wal(files[2] / "shop" / "shop.sqlite")
    before, _, _ = _scored(files, tmp_path / "cache", monkeypatch)
    with held_in_wal(files[2] / "shop" / "shop.sqlite", "DELETE FROM item WHERE id = 4"):
        during, looked, _ = _scored(files, tmp_path / "cache", monkeypatch)
        assert looked
        assert during == _uncached(files, tmp_path) != before
        assert {r.instance_id: r.score for r in during}["51"] == 0.0  # count(*) is 3 now
        again, looked_again, _ = _scored(files, tmp_path / "cache", monkeypatch)
        assert (again, looked_again) == (during, True)  # not kept: the file is not its state


@pytest.mark.parametrize(
    "options",
    [
        {"metrics": (BirdMetric.EX, BirdMetric.SOFT_F1)},
        {"instance_ids": ["0", "1", "2"]},
        {"db_dir_as": "relative"},
        # a shorter --timeout may stop a query the kept run waited for (execution._in_time)
        {"timeout": 5},
    ],
)
def test_other_options_are_another_entry(
    files: Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
) -> None:
    _scored(files, tmp_path / "cache", monkeypatch)
    if options.pop("db_dir_as", None):  # the same folder named otherwise: messages name it
        monkeypatch.chdir(tmp_path)
        files = (files[0], files[1], Path(files[2].name))
    other, looked, _ = _scored(files, tmp_path / "cache", monkeypatch, **options)
    assert looked
    assert other == _uncached(files, tmp_path, **options)


def test_the_scorer_code_and_the_byte_cap_are_in_the_key(
    files: Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_dir = str(files[2])
    text = (files[0].read_text(), files[1].read_text())

    def key() -> str | None:
        bird_run_cache.scorer_identity.cache_clear()
        return bird_run_cache.run_key(
            *text, db_dir=db_dir, metrics=["ex"], instance_ids=None, timeout=10
        )

    module = tmp_path / "scorer_stand_in.py"
    module.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(bird_run_cache, "SCORER_MODULES", ("scorer_stand_in",))
    first = key()
    module.write_text("X = 2\n")  # the same size
    second = key()
    monkeypatch.setenv("QUERYBENCH_MAX_RESULT_BYTES", "1000")
    third = key()
    options = [o for o in cache_module._sqlite_compile_options() if "MATH" not in o]
    monkeypatch.setattr(cache_module, "_sqlite_compile_options", lambda: options)
    cache_module.sqlite_build.cache_clear()
    try:
        fourth = key()
    finally:
        cache_module.sqlite_build.cache_clear()
    assert None not in (first, second, third, fourth)
    assert len({first, second, third, fourth}) == 4
    monkeypatch.setattr(bird_run_cache, "SCORER_MODULES", ("no_such_scorer_module",))
    assert key() is None  # no source, no store
    bird_run_cache.scorer_identity.cache_clear()


def test_the_scorer_modules_cover_what_scoring_imports() -> None:
    """Every evaluation module BIRD's scoring reaches, the result cache and `errors`."""
    reached = evaluation_modules_reached("querybench.evaluation.bird.evaluate")
    reached |= {"querybench.errors", "querybench.engines.cache", "querybench.engines.cache_values"}
    assert reached - set(bird_run_cache.SCORER_MODULES) == set()


@pytest.mark.parametrize(
    ("gold", "prediction", "timeout"),
    [
        (
            "SELECT 1",
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
            "SELECT count(*) FROM n",
            0.3,
        ),
        ("SELECT 1", "SELECT abs(random()) % 2", 10),
        ("SELECT abs(random()) % 2", "SELECT 1", 10),
    ],
    ids=["a timeout", "a random draw", "a random gold"],
)
def test_a_run_with_an_outcome_of_the_moment_is_never_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gold: str, prediction: str, timeout: float
) -> None:
    _, _, db_dir = _tiny_files(tmp_path)
    q = _write(tmp_path / "q.json", [{"question_id": 0, "db_id": "shop", "SQL": gold}])
    p = _write(tmp_path / "p.json", {"0": _official(prediction)})
    for _ in range(2):
        _, looked, _ = _scored((q, p, db_dir), tmp_path / "cache", monkeypatch, timeout=timeout)
        assert looked


def test_r_ves_is_never_kept(files: Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options: dict[str, Any] = {"metrics": (BirdMetric.EX, BirdMetric.R_VES), "ves_repeats": 2}
    for _ in range(2):
        assert _scored(files, tmp_path / "cache", monkeypatch, **dict(options))[1]


def test_a_read_only_cache_still_serves_its_outcomes(
    files: Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shared cache nobody may write, its outcomes there and no run kept: a run is scored
    # (no query runs) and nothing is kept.
    _scored(files, tmp_path / "cache", monkeypatch)
    with contextlib.closing(sqlite3.connect(tmp_path / "cache" / RESULTS.file)) as db, db:
        db.execute("DROP TABLE runs")
    monkeypatch.setattr(store, "_stores", {})  # a new process
    real_open = store.Store._open

    def read_only(self: store.Store) -> sqlite3.Connection:
        db = real_open(self)
        db.execute("PRAGMA query_only = ON")
        return db

    monkeypatch.setattr(store.Store, "_open", read_only)
    ran: list[None] = []
    for _ in range(2):
        results, looked, _ = _scored(
            files, tmp_path / "cache", monkeypatch, _on_query=lambda: ran.append(None)
        )
        assert looked and not ran and results == _uncached(files, tmp_path)
