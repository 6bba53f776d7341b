"""`querybench report`: run folders written here, compared in the terminal, Markdown and HTML."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.errors import EngineError, ErrorCode
from querybench.evaluation.detail import Shape, VerdictDetail
from querybench.evaluation.record import InstanceResult
from querybench.evaluation.verdict import Verdict
from querybench.report import compare, render
from querybench.report.runs import load_run
from querybench.runs.store import InstanceRecord, RecordStatus


def write_run(
    folder: Path,
    results: list[InstanceResult],
    *,
    method: str = "zero-shot",
    cost: float = 0.01,
    trajectories: dict[str, dict[str, object]] | None = None,
) -> Path:
    folder.mkdir(parents=True)
    config = {"benchmark": "fixture-bench", "method": method, "model": "m"}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "summary.json").write_text(json.dumps({"wall_s": 2.5}), encoding="utf-8")
    lines = [json.dumps(r.to_json()) for r in results]
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    records = [
        InstanceRecord(
            r.instance_id, RecordStatus.OK, sql=f"SELECT {i}", prompt_tokens=100, cost=cost
        )
        for i, r in enumerate(results)
    ]
    text = "".join(json.dumps(r.to_json()) + "\n" for r in records)
    (folder / "records.jsonl").write_text(text, encoding="utf-8")
    for iid, payload in (trajectories or {}).items():
        (folder / "trajectories").mkdir(exist_ok=True)
        (folder / "trajectories" / f"{iid}.json").write_text(json.dumps(payload), "utf-8")
    return folder


def spider2_result(iid: str, official: float, strict: float, **kw: object) -> InstanceResult:
    return InstanceResult(iid, official, official_score=official, strict_score=strict, **kw)  # type: ignore[arg-type]


def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    a = write_run(
        tmp_path / "base",
        [
            spider2_result("bq1", 1.0, 1.0, difficulty="easy", engine="bq"),
            spider2_result("bq2", 1.0, 0.0, difficulty="hard", engine="bq"),
            InstanceResult("sf1", 0.0, "missing_prediction", None, 0.0, 0.0, "easy", "sf"),
            InstanceResult(
                "local1",
                0.0,
                "exec_error",
                "no such column: x",
                0.0,
                0.0,
                "hard",
                "local",
                detail=Verdict.engine_error(EngineError("no such column: x")).detail,
            ),
        ],
    )
    b = write_run(
        tmp_path / "better",
        [
            spider2_result(
                "bq1",
                0.0,
                0.0,
                difficulty="easy",
                engine="bq",
                error="wrong_result",
                message="prediction 0 rows x 2 columns matches no gold (3 rows x 2 columns)",
                detail=VerdictDetail.of_shapes(Shape(0, 2), [Shape(3, 2)]),
            ),
            spider2_result("bq2", 1.0, 1.0, difficulty="hard", engine="bq"),
            spider2_result("sf1", 1.0, 1.0, difficulty="easy", engine="sf"),
            spider2_result("local1", 1.0, 1.0, difficulty="hard", engine="local"),
        ],
        method="dail-sql",
        cost=0.02,
    )
    return a, b


def rows(section: compare.Section) -> dict[str, list[str]]:
    return {row[0]: row[1:] for row in section.rows}


def test_overall_counts_every_task_and_the_submitted_ones(tmp_path: Path) -> None:
    runs = [load_run(p) for p in two_runs(tmp_path)]
    overall = rows(compare.overall_section(runs))
    assert overall["tasks"] == ["4", "4"]
    assert overall["submitted"] == ["3", "4"]
    assert overall["official % (all tasks)"] == ["50.0", "75.0"]
    assert overall["official % (submitted)"] == ["66.7", "75.0"]
    assert overall["strict % (all tasks)"] == ["25.0", "75.0"]


def test_groups_show_official_and_strict_per_run(tmp_path: Path) -> None:
    runs = [load_run(p) for p in two_runs(tmp_path)]
    difficulty = rows(compare.by_difficulty(runs))
    assert list(difficulty) == ["easy", "hard"]
    assert difficulty["hard"] == ["2", "50.0 / 0.0", "100.0 / 100.0"]
    assert rows(compare.by_engine(runs))["local"] == ["1", "0.0 / 0.0", "100.0 / 100.0"]


def test_features_count_a_task_under_each_tag(tmp_path: Path) -> None:
    base = load_run(two_runs(tmp_path)[0])
    tagged = type(base)(**{**vars(base), "features": {"bq1": ("nested", "documentation")}})
    features = rows(compare.by_feature([tagged]))
    assert features["nested"] == ["1", "100.0 / 100.0"]
    assert features["documentation"] == ["1", "100.0 / 100.0"]
    assert features["(no tag)"][0] == "3"


def test_errors_section_counts_taxonomy_categories(tmp_path: Path) -> None:
    runs = [load_run(p) for p in two_runs(tmp_path)]
    errors = rows(compare.errors_section(runs))
    assert errors["exec_error: no such column"] == ["1", "0"]
    assert errors["missing_prediction"] == ["1", "0"]
    assert errors["empty_result"] == ["0", "1"]  # the detail's shapes: 0 rows against 3


def test_flips_between_runs_and_between_scorings(tmp_path: Path) -> None:
    runs = [load_run(p) for p in two_runs(tmp_path)]
    found = {(f.instance_id, f.kind, f.runs) for f in compare.flips(runs)}
    assert ("bq1", "lost", "base -> better") in found
    assert ("sf1", "won", "base -> better") in found
    assert ("local1", "won", "base -> better") in found
    assert ("bq2", "official only", "base") in found
    assert len(found) == 4


def test_cost_section_totals_and_per_task(tmp_path: Path) -> None:
    runs = [load_run(p) for p in two_runs(tmp_path)]
    section = compare.cost_section(runs)
    assert section is not None
    cost = rows(section)
    assert cost["cost"] == ["$0.0400", "$0.0800"]
    assert cost["cost / task"] == ["$0.010000", "$0.020000"]
    assert cost["prompt tokens"] == ["400", "400"]
    assert cost["wall time s"] == ["2.5", "2.5"]


def test_markdown_has_one_table_per_section(tmp_path: Path) -> None:
    runs = [load_run(p) for p in two_runs(tmp_path)]
    sections = compare.sections(runs)
    text = render.markdown(sections, "title")
    assert text.count("## ") == len(sections)
    assert "| hard | 2 | 50.0 / 0.0 | 100.0 / 100.0 |" in text


def test_html_is_self_contained_with_plots_and_instance_links(tmp_path: Path) -> None:
    runs = [load_run(p) for p in two_runs(tmp_path)]
    page = render.html(compare.sections(runs), runs, "t")
    assert page.count('<figure class="plot">') == 4  # difficulty, engine, cost, errors
    assert "<style>" in page and "<?xml" not in page
    assert not re.search(r"(src|href)=\"https?://", page)  # nothing fetched at view time
    assert 'href="#i-bq1"' in page and 'id="i-bq1"' in page  # a flip links to its detail
    assert "SELECT 0" in page  # predicted SQL in the detail
    assert "question not available" in page  # fixture-bench has no tasks here


def test_linking_section_needs_gold_sql(tmp_path: Path) -> None:
    runs = [load_run(p) for p in two_runs(tmp_path)]
    assert compare.linking_section(runs) is None  # no tasks, no gold SQL


def test_cli_report_on_run_folders_and_a_results_file(tmp_path: Path) -> None:
    a, b = two_runs(tmp_path)
    out = tmp_path / "out" / "report.html"
    result = CliRunner().invoke(
        app, ["report", str(a), str(b / "results.jsonl"), "--html", str(out), "--markdown"]
    )
    assert result.exit_code == 0, result.output
    assert "## by difficulty" in result.output
    assert out.is_file()


def test_cli_report_rejects_a_folder_without_results(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2


def test_runs_over_different_task_sets_are_flagged(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", [InstanceResult("x", 1.0), InstanceResult("y", 0.0)])
    b = write_run(tmp_path / "b", [InstanceResult("x", 1.0)])
    overall = compare.overall_section([load_run(a), load_run(b)])
    assert "different task sets (a 2, b 1 tasks, 1 in common)" in overall.note
    same = compare.overall_section([load_run(a), load_run(a, name="again")])
    assert "different task sets" not in same.note


def test_no_errors_prints_no_empty_table(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    run = load_run(write_run(tmp_path / "a", [InstanceResult("x", 1.0)]))
    buffer = io.StringIO()
    render.print_sections(compare.sections([run]), Console(file=buffer, width=120))
    text = buffer.getvalue()
    assert "errors: none" in text and "┃ error" not in text
    assert '<p class="note">none</p>' in render.html(compare.sections([run]), [run], "t")


def test_flip_detail_does_not_repeat_the_error_class(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", [InstanceResult("x", 1.0)])
    lost = InstanceResult("x", 0.0, "exec_error", "no such table: singers")
    b = write_run(tmp_path / "b", [lost])
    (flip,) = compare.flips([load_run(a), load_run(b)])
    assert flip.detail == "exec_error: no such table: singers"


def test_report_on_an_unfinished_run_shows_it_labelled_partial(tmp_path: Path) -> None:
    folder = tmp_path / "stopped"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"benchmark": "fixture-bench"}))
    records = [
        InstanceRecord("a", RecordStatus.OK, sql="SELECT 1"),
        InstanceRecord(
            "b", RecordStatus.ERROR, ErrorCode.MODEL_ERROR, "connection failed", transient=True
        ),
    ]
    text = "".join(json.dumps(r.to_json()) + "\n" for r in records)
    (folder / "records.jsonl").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["report", str(folder), "--markdown"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "partial: the run stopped before scoring; 2 instances recorded" in said
    assert "| not_scored | 1 |" in said and "| model_error | 1 |" in said


def test_report_on_a_run_that_never_started_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "never"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"benchmark": "spider1"}))
    result = CliRunner().invoke(app, ["report", str(folder)])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert "the run did not start: nothing was recorded" in said
    assert "neither a run folder" not in said
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "typo")])
    assert missing.exit_code == 2 and "no such run folder" in " ".join(missing.output.split())


def test_overall_shows_the_runnable_score_labelled(tmp_path: Path) -> None:
    results = [
        InstanceResult("x", 1.0),
        InstanceResult("y", 0.0, "engine_unavailable", "database not found: y"),
    ]
    overall = rows(compare.overall_section([load_run(write_run(tmp_path / "a", results))]))
    assert overall["score % (all tasks)"] == ["50.0"]
    assert overall["runnable here"] == ["1"] and overall["score % (runnable here)"] == ["100.0"]


def test_a_narrow_terminal_gets_every_score_whole(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    results = [InstanceResult("x", 1.0, difficulty="easy"), InstanceResult("y", 0.0)]
    a = load_run(write_run(tmp_path / "zero-shot-long-name", results))
    b = load_run(write_run(tmp_path / "few-shot-long-name", results[:1]))
    buffer = io.StringIO()
    render.print_sections(compare.sections([a, b]), Console(file=buffer, width=40))
    text = buffer.getvalue()
    assert "…" not in text and "zero-shot-long-name (zero-shot, m) 50.0" in text
    assert "┃" not in text  # stacked: no table to cut


def test_an_html_path_that_cannot_be_written_is_one_line_exit_two(tmp_path: Path) -> None:
    # it used to end in a FileNotFoundError traceback
    run = write_run(tmp_path / "a", [InstanceResult("x", 1.0)])
    a_file = tmp_path / "file"
    a_file.write_text("")
    result = CliRunner().invoke(app, ["report", str(run), "--html", str(a_file / "r.html")])
    assert result.exit_code == 2, result.output
    assert f"--html {a_file / 'r.html'} cannot be written" in " ".join(result.output.split())


def test_by_difficulty_gives_each_runs_n_when_the_task_sets_differ(tmp_path: Path) -> None:
    # the n column was empty when the runs covered different task sets
    a = write_run(
        tmp_path / "a",
        [InstanceResult("1", 1.0, difficulty="easy"), InstanceResult("2", 0.0, difficulty="easy")],
    )
    b = write_run(tmp_path / "b", [InstanceResult("1", 1.0, difficulty="easy")])
    section = compare.by_difficulty([load_run(a), load_run(b)])
    [row] = [r for r in section.rows if r[0] == "easy"]
    assert row[1] == "2 / 1"
    assert row[2:] == ["50.0", "100.0"]


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("results.jsonl", "[1, 2]", "1: not a scored instance (not a JSON object): [1, 2]"),
        ("results.jsonl", '"text"', "not a scored instance (not a JSON object)"),
        ("results.jsonl", '{"instance_id": "a", "score": 1, "message": [1]}', "expected text"),
        ("records.jsonl", "[1, 2]", None),
        ("records.jsonl", '{"instance_id": "a", "status": "ok", "prompt_tokens": "x"}', None),
        ("summary.json", '{"wall_s": "x"}', None),
        ("summary.json", '{"errors": [1]}', None),
    ],
)
def test_a_run_folder_file_of_the_wrong_shape_is_a_stated_error_or_left_out(
    tmp_path: Path, name: str, text: str, said: str | None
) -> None:
    """A run folder may come from anywhere: a results line that is no scored instance is the
    report's stated error (exit 2); a records line or a summary field of the wrong type is
    left out, as a torn line is. Never a traceback."""
    run = write_run(tmp_path / "run", [InstanceResult("a", 1.0), InstanceResult("b", 0.0)])
    (run / name).write_text(text + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["report", str(run), "--no-features"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    if said is None:
        assert result.exit_code == 0, result.output
        assert "overall" in result.output
    else:
        assert result.exit_code == 2
        assert said in " ".join(result.output.split())
