"""Spider-Syn and Spider-DK, the registered Spider 1.0 variants: their tasks, eval (Spider 1.0
scoring, official and strict), run, report (by difficulty; Spider-DK by knowledge type too),
data status and context, on a data root built here and on the real data when it is present."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.tasks import load_tasks
from tests.conftest import require_data

_EASY = {  # the official parse of `SELECT count(*) FROM singer`: hardness easy
    "from": {"table_units": [["table_unit", 1]], "conds": []},
    "select": [False, [[3, [0, [0, 0, False], None]]]],
    "where": [],
    "groupBy": [],
    "having": [],
    "orderBy": [],
    "limit": None,
    "intersect": None,
    "union": None,
    "except": None,
}


def _database(path: Path, rows: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE singer (singer_id INTEGER, name TEXT, age INTEGER)")
        db.executemany(
            "INSERT INTO singer VALUES (?, ?, ?)", [(i, f"s{i}", 20 + i) for i in range(rows)]
        )


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Spider 1.0 dev (two items), Spider-Syn over it, Spider-DK with one modified database."""
    data = tmp_path / "data"
    _database(data / "spider1" / "database" / "concert_singer" / "concert_singer.sqlite", 3)
    _database(
        data / "spider-dk" / "database" / "new_concert_singer" / "new_concert_singer.sqlite", 5
    )
    dev = [
        {
            "db_id": "concert_singer",
            "query": "SELECT count(*) FROM singer",
            "question": "How many singers do we have?",
            "sql": _EASY,
        },
        {
            "db_id": "concert_singer",
            "query": "SELECT name FROM singer WHERE age > 21",
            "question": "Names of singers older than 21?",
        },
    ]
    (data / "spider1" / "dev.json").write_text(json.dumps(dev), encoding="utf-8")
    syn = [
        {
            "db_id": d["db_id"],
            "query": d["query"],
            "SpiderQuestion": d["question"],
            "SpiderSynQuestion": d["question"].replace("singers", "vocalists"),
        }
        for d in dev
    ]
    (data / "spider-syn").mkdir()
    (data / "spider-syn" / "dev.json").write_text(json.dumps(syn), encoding="utf-8")
    dk = [
        {
            "type": 0,
            "db_id": "new_concert_singer",
            "query": "select count(*) from singer;",
            "question": "How many singers do we have?",
        },
        {
            "type": 34,
            "db_id": "concert_singer",
            "query": "SELECT name FROM singer WHERE age >= 22",
            "question": "Names of singers past their early twenties?",
        },
        {
            "type": 1,
            "db_id": "wta_1",
            "query": "SELECT count(*) FROM players WHERE hand = 'L' GROUP BY country",
            "question": "Not here.",
        },
    ]
    (data / "spider-dk" / "Spider-DK.json").write_text(json.dumps(dk), encoding="utf-8")
    # the schema of a database that is not here (its file absent), as Spider's tables.json has it
    wta = {
        "db_id": "wta_1",
        "table_names_original": ["players"],
        "column_names_original": [[-1, "*"], [0, "player_id"], [0, "hand"], [0, "country"]],
    }
    (data / "spider-dk" / "tables.json").write_text(json.dumps([wta]), encoding="utf-8")
    monkeypatch.setenv("QUERYBENCH_DATA", str(data))
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    return data


def test_syn_tasks_read_the_substituted_question_and_dev_hardness(root: Path) -> None:
    tasks = load_tasks("spider-syn")
    assert [t.question for t in tasks] == [
        "How many vocalists do we have?",
        "Names of vocalists older than 21?",
    ]
    assert tasks[0].extra == {"SpiderQuestion": "How many singers do we have?"}
    assert [t.difficulty for t in tasks] == ["easy", None]  # dev item 1 carries no parse
    assert {t.benchmark for t in tasks} == {"spider-syn"}


def test_dk_tasks_carry_their_knowledge_type_and_official_hardness(root: Path) -> None:
    tasks = load_tasks("spider-dk")
    assert [t.extra["type"] for t in tasks] == ["none", "T3+T4", "T1"]
    # each gold query parsed on its own database's schema, as the official evaluation grades
    # it: the modified copy's file, dev's file for a rewritten query, tables.json for a
    # database not here
    assert [t.difficulty for t in tasks] == ["easy", "easy", "medium"]


def test_dk_hardness_unrated_where_the_official_parse_fails(root: Path) -> None:
    dk = [
        {"type": 2, "db_id": "wta_1", "query": "SELECT nothing FROM players", "question": "?"},
        {"type": 2, "db_id": "nowhere_1", "query": "SELECT count(*) FROM t", "question": "?"},
    ]
    (root / "spider-dk" / "Spider-DK.json").write_text(json.dumps(dk), encoding="utf-8")
    assert [t.difficulty for t in load_tasks("spider-dk")] == [None, None]


def _eval(
    benchmark: str, predictions: list[str], out: Path, *extra: str
) -> list[dict[str, object]]:
    pred = out.parent / f"{benchmark}.txt"
    pred.write_text("".join(p + "\n" for p in predictions), encoding="utf-8")
    args = ["eval", benchmark, "--predictions", str(pred), "--output", str(out), *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_eval_dk_finds_gold_and_both_database_folders_in_the_data(
    root: Path, tmp_path: Path
) -> None:
    lines = _eval(
        "spider-dk",
        ["SELECT count(*) FROM singer", "SELECT name FROM singer WHERE age > 21"],
        tmp_path / "dk.jsonl",
    )
    # 0: 5 singers in the modified copy (dev's has 3): run on the Spider-DK database
    assert [(r["instance_id"], r["score"], r["error"]) for r in lines] == [
        ("0", 1.0, None),
        ("1", 1.0, None),
        ("2", 0.0, "missing_prediction"),
    ]
    assert all(r["official_score"] == r["strict_score"] for r in lines)


def test_eval_dk_on_the_wrong_database_fails_that_instance(root: Path, tmp_path: Path) -> None:
    lines = _eval("spider-dk", ["SELECT 3"], tmp_path / "dk.jsonl")
    assert lines[0]["score"] == 0.0 and lines[0]["error"] == "wrong_result"


def test_eval_syn_scores_official_and_strict_as_spider1(root: Path, tmp_path: Path) -> None:
    # officially every "value" becomes 1 (so this runs as `SELECT count(*) FROM singer`...)
    lines = _eval(
        "spider-syn",
        ["SELECT count(*) FROM singer", "SELECT name FROM singer WHERE age > 21 -- value"],
        tmp_path / "syn.jsonl",
    )
    assert [r["score"] for r in lines] == [1.0, 1.0]
    assert lines[0]["difficulty"] == "easy"


def test_eval_variant_matches_spider1_with_a_gold_file(root: Path, tmp_path: Path) -> None:
    """The variant's gold from its tasks scores as `eval spider1` over the same lines."""
    tasks = load_tasks("spider-syn")
    gold = tmp_path / "gold.sql"
    gold.write_text("".join(f"{t.gold.sql}\t{t.db}\n" for t in tasks), encoding="utf-8")
    preds = ["SELECT count(*) FROM singer", "SELECT name FROM singer"]
    db_dir = root / "spider1" / "database"
    variant = _eval("spider-syn", preds, tmp_path / "a.jsonl")
    spider1 = _eval(
        "spider1", preds, tmp_path / "b.jsonl", "--gold", str(gold), "--db-dir", str(db_dir)
    )
    keep = ("instance_id", "score", "error", "official_score", "strict_score")
    assert [{k: r[k] for k in keep} for r in variant] == [{k: r[k] for k in keep} for r in spider1]


def test_evaluate_api_needs_no_locations(root: Path, tmp_path: Path) -> None:
    import querybench

    pred = tmp_path / "p.txt"
    pred.write_text("SELECT count(*) FROM singer\n", encoding="utf-8")
    results = querybench.evaluate("spider-dk", pred)
    assert [r.score for r in results] == [1.0, 0.0, 0.0]


def test_run_and_report_by_knowledge_type(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "spider-dk", "--method", "zero-shot", "--model", "oracle", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["score"], r["error"]) for r in lines] == [
        (1.0, None),
        (1.0, None),
        (0.0, "engine_unavailable"),
    ]
    report = CliRunner().invoke(app, ["report", str(out), "--markdown"])
    assert report.exit_code == 0, report.output
    section = report.output.split("## by knowledge type")[1].split("##")[0]
    assert "| T3+T4 | 1 | 100.0 / 100.0 |" in section and "| T1 | 1 | 0.0 / 0.0 |" in section
    assert "## by difficulty" in report.output


def test_data_status_and_context(root: Path) -> None:
    status = CliRunner().invoke(app, ["data", "status", "spider-dk"])
    assert status.exit_code == 0, status.output
    assert "spider-dk: 2 of 3 tasks can run here" in " ".join(status.output.split())
    context = CliRunner().invoke(app, ["context", "spider-dk", "0", "--format", "json"])
    assert context.exit_code == 0, context.output
    assert "new_concert_singer" in context.output and "singer" in context.output


@pytest.mark.parametrize(
    ("benchmark", "total", "runnable"), [("spider-syn", 1034, 972), ("spider-dk", 535, 473)]
)
def test_the_shared_data(benchmark: str, total: int, runnable: int) -> None:
    """On the published files: every task loads and the counts the MANIFESTs give."""
    from querybench.data.status import benchmark_status

    require_data(benchmark)
    tasks = load_tasks(benchmark)
    assert len(tasks) == total
    assert benchmark_status(benchmark).runnable == runnable


@pytest.mark.parametrize(
    "method", ["zero-shot", "dail-sql", "din-sql", "chess", "spider-agent", "tool-agent"]
)
@pytest.mark.parametrize("benchmark", ["spider-syn", "spider-dk"])
def test_every_method_runs_on_both(root: Path, tmp_path: Path, benchmark: str, method: str) -> None:
    """The labelled oracle through each method (the agents included): the variant's tasks,
    schema and scoring carry through every one."""
    out = tmp_path / "run"
    args = ["run", benchmark, "--method", method, "--model", "oracle", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    runnable = [r for r in lines if r["error"] != "engine_unavailable"]
    assert runnable and all(r["score"] == 1.0 for r in runnable), lines
