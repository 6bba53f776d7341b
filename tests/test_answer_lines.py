"""No single answer makes a run or an eval unscorable: Spider 1.0 prediction lines are split as
the official `readlines()` splits them (a line separator `str.splitlines` knows, inside an
answer, adds no line), `run` writes every answer on one line of its own, and one oversized
answer (a Spider 1.0 line, a BIRD entry) is that instance's `too_large`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from querybench.cli import app
from querybench.evaluation.bird.evaluate import evaluate_bird
from querybench.evaluation.prediction_file import MAX_ANSWER_BYTES
from querybench.evaluation.spider1.evaluate import evaluate_spider1
from querybench.models import OpenAICompatibleModel
from querybench.runs.config import RunConfig, Selection
from querybench.runs.runner import run
from querybench.tasks.input_files import text_lines
from tests.openai_server import Reply, ScriptedServer
from tests.test_bird import _official, _tiny_files, _write
from tests.test_cli import _toy_db
from tests.test_run_harness import shop_data

# Every character `str.splitlines` ends a line at that text-mode `readlines()` does not.
SPLITLINES_ONLY = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
OVERSIZED = "SELECT 1 /*" + "x" * (20 * 1024 * 1024) + "*/"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", "\n", "\r", "\t", " ", *SPLITLINES_ONLY])))
def test_lines_are_what_text_mode_readlines_reads(text: str) -> None:
    import tempfile

    with tempfile.NamedTemporaryFile("w", encoding="utf-8", newline="", delete=False) as f:
        f.write(text)  # written as given: no newline translation
    with open(f.name, encoding="utf-8") as official:  # the official's own call
        expected = [line.removesuffix("\n") for line in official.readlines()]
    Path(f.name).unlink()
    assert text_lines(text) == expected


def _spider1_files(tmp_path: Path, predictions: list[str]) -> tuple[Path, Path, Path]:
    db_dir = _toy_db(tmp_path)
    gold = tmp_path / "gold.sql"
    gold.write_text(
        "SELECT count(*) FROM t\ttoy\nSELECT x FROM t WHERE y = 'a'\ttoy\n"
        "SELECT max(x) FROM t\ttoy\nSELECT min(x) FROM t\ttoy\n"
    )
    pred = tmp_path / "pred.txt"
    pred.write_text("".join(f"{line}\n" for line in predictions), encoding="utf-8")
    return gold, pred, db_dir


@pytest.mark.parametrize("separator", SPLITLINES_ONLY, ids=[hex(ord(c)) for c in SPLITLINES_ONLY])
def test_a_splitlines_separator_inside_an_answer_adds_no_line(
    tmp_path: Path, separator: str
) -> None:
    # It used to split the line: "5 prediction lines for 4 gold queries", exit 2.
    gold, pred, db_dir = _spider1_files(
        tmp_path,
        [
            "SELECT count(*) FROM t",
            f"SELECT x FROM t WHERE y = 'a' /*{separator}*/",
            f"--{separator}SELECT max(x) FROM t",  # one line: all of it a comment, as officially
            "SELECT min(x) FROM t",
        ],
    )
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(pred)]
    out = tmp_path / "scores.jsonl"
    result = CliRunner().invoke(app, [*args, "--db-dir", str(db_dir), "--output", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["score"] for line in lines] == [1, 1, 0, 1]


def test_an_oversized_spider1_answer_is_its_own_too_large(tmp_path: Path) -> None:
    # It used to be "a line longer than 16,777,216 bytes" for the whole file, exit 2.
    gold, pred, db_dir = _spider1_files(
        tmp_path, ["SELECT count(*) FROM t", OVERSIZED, "SELECT max(x) FROM t"]
    )
    results = evaluate_spider1(pred, gold=gold, db_dir=db_dir, timeout=10, workers=1)
    assert [r.score for r in results] == [1, 0, 1, 0]
    assert [r.error for r in results][1:] == ["too_large", None, "missing_prediction"]
    assert results[1].message == (
        f"the answer is {len(OVERSIZED):,} bytes (limit {MAX_ANSWER_BYTES:,})"
    )


def test_an_oversized_bird_entry_is_its_own_too_large(tmp_path: Path) -> None:
    questions, predictions, db_dir = _tiny_files(tmp_path)
    entries = json.loads(predictions.read_text())
    first = next(iter(entries))
    entries[first] = _official(OVERSIZED)
    _write(predictions, entries)
    args = ["eval", "bird", "--questions", str(questions), "--predictions", str(predictions)]
    output = ["--db-dir", str(db_dir), "--output", str(tmp_path / "s.jsonl")]
    result = CliRunner().invoke(app, [*args, *output])
    assert result.exit_code == 0, result.output
    results = evaluate_bird(predictions, questions=questions, db_dir=db_dir, timeout=10)
    by_id = {r.instance_id: r for r in results}
    assert (by_id[first].error, by_id[first].score) == ("too_large", 0.0)
    assert "limit 16,777,216" in (by_id[first].message or "")
    assert sum(r.score for r in results) > 0  # the others are scored


# --- through `run spider1` --------------------------------------------------------------------

QUESTIONS = [
    ("How many items?", "SELECT count(*) FROM items"),
    ("Most expensive?", "SELECT name FROM items ORDER BY price DESC LIMIT 1"),
    ("Anything?", "SELECT name FROM items WHERE price < 5"),
    ("Total?", "SELECT sum(price) FROM items"),
    ("Costing 3?", "SELECT name FROM items WHERE price = 3"),
    ("Cheapest?", "SELECT min(price) FROM items"),
]
SEPARATORS = "".join(SPLITLINES_ONLY)
# What the model answers, and what each answer earns on its own (run as it stands).
ANSWERS = {
    "How many items?": "--\u2028SELECT count(*) FROM items",  # all a comment: no rows
    "Most expensive?": "",  # no answer
    "Anything?": "SELECT name FROM items WHERE price < 5",
    "Total?": f"SELECT sum(price) /*{SEPARATORS}*/ FROM items",
    "Costing 3?": "SELECT name FROM items WHERE price = 3",
    "Cheapest?": OVERSIZED,
}
EARNED = [0.0, 0.0, 1.0, 1.0, 1.0, 0.0]


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return shop_data(tmp_path / "data", QUESTIONS)


def _answering(body: dict[str, Any]) -> Reply:
    question = body["messages"][-1]["content"].rsplit("Question: ", 1)[1]
    return Reply(f"```sql\n{ANSWERS[question]}\n```")


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(default=_answering) as s:
        yield s


def test_run_spider1_scores_each_answer_as_it_earns_it(
    data: Path, server: ScriptedServer, tmp_path: Path
) -> None:
    # U+2028 after `--` used to split the answer in two, shifting every later answer onto the
    # next task's gold; a 20 MB answer made the whole run unscorable.
    selection = replace(Selection(), data_dir=data)
    config = RunConfig(
        "spider1", "zero-shot", "scripted", out=tmp_path / "run", selection=selection
    )
    outcome = run(config, model=OpenAICompatibleModel("scripted", base_url=server.url))
    results = [
        json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().split("\n") if x
    ]
    assert [r["score"] for r in results] == EARNED
    assert results[5]["error"] == "too_large"
    assert outcome.summary["correct"] == 3
    written = (tmp_path / "run" / "pred.txt").read_text(encoding="utf-8")
    assert len(text_lines(written)) == len(QUESTIONS)  # one line per answer, as officially read


def test_a_results_file_whose_text_holds_a_line_separator_reads_whole(tmp_path: Path) -> None:
    # `report` split results.jsonl with str.splitlines: a message echoing an answer with
    # U+2028 (JSON leaves it raw) broke its line in two, and the file was unreadable.
    from querybench.evaluation.record import InstanceResult
    from querybench.report.runs import read_results

    result = InstanceResult("0", 0.0, "exec_error", f"near {SEPARATORS}: syntax error")
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(result.to_json(), ensure_ascii=False) + "\n", encoding="utf-8")
    assert read_results(path) == [result]
