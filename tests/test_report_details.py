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
