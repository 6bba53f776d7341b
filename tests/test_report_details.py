"""Per-instance detail: SQL diff, result-table diff, and "not available" where files are missing."""

from __future__ import annotations

from pathlib import Path

from querybench.report.details import read_head, result_diff, sql_diff


def test_sql_diff_marks_gold_only_and_prediction_only_words() -> None:
    diff = sql_diff("SELECT name FROM singer WHERE age > 3", "SELECT nme FROM singer")
    assert "<del>name</del><ins>nme</ins>" in diff
    assert "<del> WHERE age &gt; 3</del>" in diff  # escaped
    assert diff.startswith("SELECT ")


def _csv(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_result_diff_highlights_differing_cells(tmp_path: Path) -> None:
    gold = _csv(tmp_path / "g.csv", "name,age\nAnn,25\nBo,41.0\n")
    pred = _csv(tmp_path / "p.csv", "name,age\nAnn,26\nBo,41\nCy,33\n")
    html = result_diff(gold, pred)
    assert '<td class="diff">26</td>' in html and '<td class="diff">25</td>' in html
    assert '<td class="">41</td>' in html  # 41 and 41.0 are the same number
    assert '<td class="diff">Cy</td>' in html  # a row the gold does not have


def test_result_diff_not_available(tmp_path: Path) -> None:
    pred = _csv(tmp_path / "p.csv", "a\n1\n")
    assert "not available (no gold result file)" in result_diff(None, pred)
    assert "not available (no gold and predicted result file)" in result_diff(None, None)


def test_read_head_stops_after_the_first_rows(tmp_path: Path) -> None:
    big = _csv(tmp_path / "big.csv", "x\n" + "".join(f"{i}\n" for i in range(1000)))
    found = read_head(big, rows=3)
    assert found == (["x"], [["0"], ["1"], ["2"]], True)
    assert read_head(tmp_path / "absent.csv") is None


def test_result_diff_shows_the_gold_alternative_closest_to_the_prediction(tmp_path: Path) -> None:
    from querybench.report.details import closest_gold

    a = _csv(tmp_path / "x_a.csv", "n\n1\n2\n3\n")
    b = _csv(tmp_path / "x_b.csv", "n,m\n7,8\n")
    c = _csv(tmp_path / "x_c.csv", "n,m\n1,2\n")
    pred = _csv(tmp_path / "p.csv", "n,m\n1,2\n")
    assert closest_gold([a, b, c], pred) == c  # same shape and the same cells
    assert closest_gold([a, b], pred) == b  # the same width wins over the first listed
    assert closest_gold([a, b, c], None) == a  # nothing to compare: the first alternative
    assert closest_gold([tmp_path / "absent.csv"], pred) is None


def test_spider1_result_diff_reads_both_queries_from_the_database(tmp_path: Path) -> None:
    import sqlite3

    from querybench.report.details import query_head

    db = tmp_path / "t.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE t (x INTEGER, y TEXT)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [(i, None) for i in range(20)])
    con.close()
    head = query_head(db, "SELECT x, y FROM t ORDER BY x DESC;")
    assert head == (["x", "y"], [[str(i), ""] for i in range(19, 11, -1)], True)
    failed = query_head(db, "SELECT nope FROM t")
    assert isinstance(failed, str) and "no such column" in failed


def test_the_run_block_shows_the_scorers_closest_gold_and_columns(tmp_path: Path) -> None:
    from querybench.evaluation.detail import Shape, VerdictDetail
    from querybench.evaluation.record import InstanceResult
    from querybench.report.details import instance_details
    from querybench.report.runs import RunData
    from querybench.tasks.model import GoldRef, Task

    a = _csv(tmp_path / "x_a.csv", "n,m\n1,2\n")  # the nearest by shape and cells
    b = _csv(tmp_path / "x_b.csv", "k\n5\n6\n")
    preds = tmp_path / "preds"
    preds.mkdir()
    _csv(preds / "x.csv", "n,m\n1,2\n")
    detail = VerdictDetail(
        None, Shape(1, 2), (Shape(1, 2), Shape(2, 1)), 1, matched_columns=(), missing_columns=(0,)
    )
    result = InstanceResult("x", 0.0, "wrong_result", "no match", detail=detail)
    files = GoldRef(result_files=(str(a), str(b)))
    task = Task("x", "spider2-lite", "q?", "db", "sqlite", gold=files)
    run = RunData("r", tmp_path, [result], tasks={"x": task}, predictions=preds)
    html = instance_details([run])
    assert "gold <code>x_b.csv</code>" in html  # the scorer's choice, not the shape's
    assert "closest gold x_b.csv: columns matched none; missing 0" in html
    run = RunData("r", tmp_path, [InstanceResult("x", 0.0, "wrong_result")], tasks={"x": task},
                  predictions=preds)  # fmt: skip
    assert "gold <code>x_a.csv</code>" in instance_details([run])  # no detail: the nearest


def test_a_run_folder_whose_files_are_fifos_is_reported_without_waiting(tmp_path: Path) -> None:
    import os

    from querybench.errors import DataError
    from querybench.report.runs import RunData, read_results
    from tests.test_regular_databases import within

    (tmp_path / "trajectories").mkdir()
    (tmp_path / "predictions").mkdir()
    fifos = [
        tmp_path / "trajectories" / "x.json",
        tmp_path / "predictions" / "x.sql",
        tmp_path / "predictions" / "x.csv",
        tmp_path / "results.jsonl",
    ]
    for fifo in fifos:
        os.mkfifo(fifo)
    run = RunData("r", tmp_path, [], predictions=tmp_path / "predictions")
    assert within(lambda: run.trajectories, fifos) == []  # left out, with a warning
    assert within(lambda: run.predicted_sql("x"), fifos) is None
    assert within(lambda: read_head(fifos[2]), fifos) is None
    error = within(lambda: read_results(fifos[3]), fifos)
    assert isinstance(error, DataError) and "not a regular file" in str(error)
