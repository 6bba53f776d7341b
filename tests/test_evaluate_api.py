"""`querybench.evaluate`: one entry for every benchmark, the same verdicts as `querybench eval`,
`on_result` once per instance with the very results returned, options checked by name."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import querybench
import querybench.runs.evaluate
from querybench.cli import app
from querybench.errors import DataError, ErrorCode
from querybench.evaluation.bird.evaluate import BIRD_SEPARATOR
from querybench.evaluation.record import InstanceResult
from tests.conftest import require_data


def _cli_results(args: list[str], out: Path) -> list[dict[str, Any]]:
    result = CliRunner().invoke(app, [*args, "--output", str(out)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def _evaluate(benchmark: str, predictions: Path, **options: Any) -> list[InstanceResult]:
    """The API's results, checking that `on_result` saw each of them exactly once."""
    seen: list[InstanceResult] = []
    results = querybench.evaluate(benchmark, predictions, on_result=seen.append, **options)
    assert sorted(seen, key=lambda r: r.instance_id) == sorted(results, key=lambda r: r.instance_id)
    assert len({r.instance_id for r in seen}) == len(seen)
    return results


def _shop(root: Path) -> Path:
    """`root/db/shop/shop.sqlite` with three items; the folder of databases."""
    db = root / "db" / "shop" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE item (id INTEGER, name TEXT)")
        conn.executemany("INSERT INTO item VALUES (?, ?)", [(1, "a"), (2, "b"), (3, "c")])
    conn.close()
    return db.parent.parent


def test_spider2_lite_sample_folder_needs_no_other_argument(tmp_path: Path) -> None:
    suite = require_data("spider2", "spider2-lite", "evaluation_suite")
    sample = suite / "example_submission_folder_csv"
    results = _evaluate("spider2-lite", sample, workers=1)
    cli = _cli_results(["eval", "spider2-lite", "--predictions", str(sample)], tmp_path / "o.jsonl")
    assert [r.to_json() for r in results] == cli
    submitted = {p.stem for p in sample.glob("*.csv")}
    assert len(submitted) == 6 and len(results) > 500
    assert {r.instance_id for r in results if r.error != ErrorCode.MISSING_PREDICTION} == submitted


def test_agentic_submission_warnings_are_python_warnings(tmp_path: Path) -> None:
    from querybench.errors import SubmissionWarning

    suite = require_data("spider2", "spider2", "evaluation_suite")
    sample = suite / "example_submission_folder"
    with pytest.warns(SubmissionWarning) as caught:
        results = _evaluate("spider2", sample, workers=1)
    cli = CliRunner().invoke(app, ["eval", "spider2", "--predictions", str(sample)])
    assert cli.exit_code == 0, cli.output
    for warning in caught:  # the CLI prints each as `warning: ...`, as before
        assert " ".join(f"warning: {warning.message}".split()) in " ".join(cli.output.split())
    assert len(results) == 632


def test_spider1_on_a_fixture_scores_as_the_cli(tmp_path: Path) -> None:
    db_dir = _shop(tmp_path)
    gold = tmp_path / "gold.sql"
    gold.write_text("SELECT name FROM item ORDER BY id\tshop\n" * 4, encoding="utf-8")
    pred = tmp_path / "pred.sql"
    pred.write_text(
        "SELECT name FROM item ORDER BY id\nSELECT name FROM item ORDER BY id DESC\nSELEC x\n",
        encoding="utf-8",
    )
    results = _evaluate("spider1", pred, gold=gold, db_dir=db_dir, workers=1)
    assert [(r.instance_id, r.score, r.error) for r in results] == [
        ("0", 1.0, None),
        ("1", 0.0, ErrorCode.WRONG_RESULT),
        ("2", 0.0, ErrorCode.EXEC_ERROR),
        ("3", 0.0, ErrorCode.MISSING_PREDICTION),  # the prediction file ended before this gold line
    ]
    args = ["eval", "spider1", "--gold", str(gold), "--predictions", str(pred)]
    cli = _cli_results([*args, "--db-dir", str(db_dir)], tmp_path / "o.jsonl")
    assert [r.to_json() for r in results] == cli
    shard = querybench.evaluate("spider1", pred, gold=gold, db_dir=db_dir, instance_ids=["2"])
    assert shard == [results[2]]  # what a Ray shard scores: only its own lines


def test_bird_on_a_fixture_scores_as_the_cli(tmp_path: Path) -> None:
    db_dir = _shop(tmp_path)
    questions = tmp_path / "dev.json"
    entries = [
        {"question_id": i, "db_id": "shop", "SQL": "SELECT name FROM item", "difficulty": d}
        for i, d in enumerate(["simple", "moderate", "challenging"])
    ]
    questions.write_text(json.dumps(entries), encoding="utf-8")
    predictions = tmp_path / "predict.json"
    sqls = ["SELECT name FROM item ORDER BY id DESC", "SELECT id FROM item", "SELECT nope"]
    predictions.write_text(
        json.dumps({str(i): f"{sql}{BIRD_SEPARATOR}shop" for i, sql in enumerate(sqls)}),
        encoding="utf-8",
    )
    results = _evaluate("bird", predictions, questions=questions, db_dir=db_dir, workers=1)
    assert [(r.instance_id, r.score, r.error, r.difficulty) for r in results] == [
        ("0", 1.0, None, "simple"),  # set semantics: row order does not matter
        ("1", 0.0, ErrorCode.WRONG_RESULT, "moderate"),
        ("2", 0.0, ErrorCode.EXEC_ERROR, "challenging"),
    ]
    args = ["eval", "bird", "--questions", str(questions), "--predictions", str(predictions)]
    cli = _cli_results([*args, "--db-dir", str(db_dir)], tmp_path / "o.jsonl")
    assert [r.to_json() for r in results] == cli


def test_mini_dev_questions_and_databases_default_to_the_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from querybench.evaluation.bird.evaluate import load_bird_questions
    from querybench.tasks.bird import mini_dev_dir, mini_dev_file

    # a data root with questions on three databases, mini-dev's own folder holding one of them
    everything = json.loads(require_data("bird", "mini_dev_sqlite.json").read_text("utf-8"))
    entries = list({e["db_id"]: e for e in reversed(everything)}.values())[-3:]
    mini_dev = tmp_path / "data" / "bird" / "mini_dev"
    mini_dev.mkdir(parents=True)
    (mini_dev / "mini_dev_sqlite.json").write_text(json.dumps(entries), encoding="utf-8")
    listed = load_bird_questions(mini_dev / "mini_dev_sqlite.json")
    present = listed[0].db_id
    (mini_dev / "dev_databases" / present).mkdir(parents=True)
    sqlite3.connect(mini_dev / "dev_databases" / present / f"{present}.sqlite").close()
    monkeypatch.setenv("QUERYBENCH_DATA", str(tmp_path / "data"))
    assert mini_dev_file("sqlite") == mini_dev / "mini_dev_sqlite.json"
    empty = tmp_path / "predict.json"
    empty.write_text("{}", encoding="utf-8")
    ids = [q.question_id for q in listed]
    results = _evaluate("bird-mini-dev", empty, instance_ids=ids, workers=1)
    assert [(r.instance_id, r.difficulty) for r in results] == [
        (q.question_id, q.difficulty) for q in listed
    ]
    for q, r in zip(listed, results, strict=True):
        here = (mini_dev_dir() / q.db_id / f"{q.db_id}.sqlite").is_file()
        assert here == (q.db_id == present)
        assert r.error == (ErrorCode.MISSING_PREDICTION if here else ErrorCode.ENGINE_UNAVAILABLE)


def test_mini_dev_dialect_picks_its_questions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`eval bird-mini-dev --dialect mysql` hands the dialect on: the mysql questions file."""
    import querybench.runs.evaluate as api
    from querybench.tasks.bird import mini_dev_file

    seen: dict[str, Any] = {}

    def spy(
        benchmark: str, predictions: Path, options: Any, events: Any, **_: Any
    ) -> list[InstanceResult]:
        seen.update(api._resolved(benchmark, options))
        return []

    monkeypatch.setattr(api, "evaluate", spy)
    empty = tmp_path / "predict.json"
    empty.write_text("{}", encoding="utf-8")
    url = "mysql://root@127.0.0.1:3306/BIRD"
    args = ["eval", "bird-mini-dev", "--dialect", "mysql", "--db-url", url]
    result = CliRunner().invoke(app, [*args, "--predictions", str(empty)])
    assert result.exit_code == 0, result.output
    assert seen["questions"] == mini_dev_file("mysql") and seen["db_url"] == url


def test_options_and_events_are_one_typed_call(tmp_path: Path) -> None:
    """`evaluate(benchmark, predictions, options, events)`: the options as a mapping, the
    progress callbacks in one `EvalEvents` (never as options), each name given once."""
    from querybench.evaluation.record import EvalEvents

    db_dir = _shop(tmp_path)
    gold = tmp_path / "gold.sql"
    gold.write_text("SELECT name FROM item ORDER BY id\tshop\n" * 2, encoding="utf-8")
    pred = tmp_path / "pred.sql"
    pred.write_text("SELECT name FROM item ORDER BY id\nSELECT 1\n", encoding="utf-8")
    seen: dict[str, list[object]] = {"query": [], "result": []}
    events = EvalEvents(
        on_query=lambda: seen["query"].append(None), on_result=seen["result"].append
    )
    options = {"gold": gold, "db_dir": db_dir}
    results = querybench.evaluate("spider1", pred, options, events)
    assert len(seen["result"]) == len(results) and seen["query"]  # per result, per query
    assert querybench.evaluate("spider1", pred, gold=gold, db_dir=db_dir) == results
    with pytest.raises(TypeError, match=r"got gold in options and as keywords"):
        querybench.evaluate("spider1", pred, options, gold=gold)
    with pytest.raises(TypeError, match=r"unknown option\(s\) _on_query"):
        querybench.evaluate("spider1", pred, options | {"_on_query": print})
    with pytest.raises(TypeError, match=r"on_result given twice"):
        querybench.evaluate("spider1", pred, options, events, on_result=print)


def test_options_are_checked_by_name(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"unknown option\(s\) gold_file; valid options: .*gold"):
        querybench.evaluate("spider1", tmp_path / "pred.sql", gold_file=tmp_path / "gold.sql")
    with pytest.raises(DataError, match=r"no spider1 gold file in the data roots"):
        querybench.evaluate("spider1", tmp_path / "pred.sql", data_dir=tmp_path)
    with pytest.raises(TypeError, match=r"valid options: .*data_dir.*scoring"):
        querybench.evaluate("spider2-lite", tmp_path, on_query=print)
    with pytest.raises(ValueError, match=r"unknown benchmark 'spider3'.*spider2-lite"):
        querybench.evaluate("spider3", tmp_path)
    with pytest.raises(ValueError, match=r"executor must be one of local, ray, not 'dask'"):
        querybench.evaluate("spider2-lite", tmp_path, executor="dask")
    with pytest.raises(ValueError, match=r"mode must be exec_result or sql, not 'csv'"):
        querybench.evaluate("spider2-lite", tmp_path, mode="csv")
    with pytest.raises(ValueError, match=r"scoring must be official or strict, not 'lenient'"):
        querybench.evaluate("spider2", tmp_path, scoring="lenient")


def test_ray_refuses_a_benchmark_it_does_not_shard(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"executor='ray' scores .*; spider2-dbt runs locally"):
        querybench.evaluate("spider2-dbt", tmp_path, executor="ray")


@pytest.mark.parametrize("benchmark", querybench.runs.evaluate.BENCHMARKS)
def test_the_typed_options_are_the_declared_ones(benchmark: str) -> None:
    """What a user builds (the spec's declared options class) holds only options `evaluate`
    accepts, besides the command line's own and the read limits it makes one `limits` of."""
    from querybench.declared import declared_fields
    from querybench.runs.evaluate import _COMMAND_LINE, _READ_LIMITS, valid_options

    declared = querybench.benchmarks.spec(benchmark).eval_options
    assert declared is not None
    names = {f.name for f, _, _ in declared_fields(declared)}
    own = {"executor", "address"} | _COMMAND_LINE | set(_READ_LIMITS)
    assert names - own <= set(valid_options(benchmark))
    assert declared()  # every field has a default: the predictions are evaluate's argument


def test_an_options_object_scores_as_its_mapping(tmp_path: Path) -> None:
    from querybench.benchmarks.bird import BirdEvalOptions
    from querybench.benchmarks.spider1 import Spider1EvalOptions

    db_dir = _shop(tmp_path)
    gold = tmp_path / "gold.sql"
    gold.write_text("SELECT name FROM item ORDER BY id\tshop\n" * 2, encoding="utf-8")
    pred = tmp_path / "pred.sql"
    pred.write_text("SELECT name FROM item ORDER BY id\nSELECT 1\n", encoding="utf-8")
    typed = Spider1EvalOptions(gold=gold, db_dir=db_dir, workers=1, metrics="ex")
    results = querybench.evaluate("spider1", pred, typed)
    assert results == querybench.evaluate("spider1", pred, {"gold": gold, "db_dir": db_dir})
    assert querybench.evaluate("spider1", pred, typed, instance_ids=["1"]) == results[1:]
    with pytest.raises(TypeError, match=r"output is the command line's"):
        querybench.evaluate("spider1", pred, Spider1EvalOptions(output=tmp_path / "o.jsonl"))
    with pytest.raises(TypeError, match=r"takes Spider1EvalOptions, not BirdEvalOptions"):
        querybench.evaluate("spider1", pred, BirdEvalOptions())
    with pytest.raises(ValueError, match=r"executor must be one of local, ray, not 'dask'"):
        querybench.evaluate("spider1", pred, Spider1EvalOptions(executor="dask"))


def test_the_read_limits_of_an_options_object_are_one_limits(tmp_path: Path) -> None:
    from querybench.benchmarks.spider2 import Spider2EvalOptions
    from querybench.evaluation.prediction_file import ReadLimits
    from querybench.runs.evaluate import options_of

    changed, own = options_of("spider2-lite", Spider2EvalOptions(max_columns=3, executor="ray"))
    assert changed == {"limits": ReadLimits(max_columns=3)} and own == {"executor": "ray"}
    assert options_of("spider2-lite", Spider2EvalOptions()) == ({}, {})


def test_instance_ids_given_as_one_string_are_refused(tmp_path: Path) -> None:
    # a str is a Collection[str] of its characters: "bq011" scored no instance, in silence
    with pytest.raises(TypeError, match=r"instance_ids must be a collection of ids, not 'bq011'"):
        querybench.evaluate("spider2-lite", tmp_path, instance_ids="bq011")


@pytest.mark.parametrize("benchmark", ["spider2-dbt", "spider2", "spider2-lite", "spider2-snow"])
def test_progress_bars_have_a_total(
    benchmark: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bars showed `n/?`: the number of tasks is known before the first is scored."""
    from contextlib import contextmanager

    from querybench.commands import eval_common
    from querybench.report.terminal import Bar, Terminal

    require_data("spider2", benchmark)
    seen = {"total": None, "done": 0}

    class Recorded(Terminal):
        @contextmanager
        def progress(self, title: str) -> Iterator[Bar]:
            yield Bar(lambda: seen.update(done=seen["done"] + 1), lambda n: seen.update(total=n))

    monkeypatch.setattr(eval_common, "console", Recorded(stderr=True))
    predictions = tmp_path / "empty"
    predictions.mkdir()
    out = tmp_path / "o.jsonl"
    results = _cli_results(["eval", benchmark, "--predictions", str(predictions)], out)
    assert seen["total"] == len(results) == seen["done"]


@pytest.mark.parametrize("benchmark", ["spider2-dbt", "spider2"])
def test_the_drawn_progress_bar_shows_its_total(
    benchmark: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the terminal receives: the bar was drawn as `0/?` before the total was set."""
    import io
    import re

    from rich.console import Console

    from querybench.commands import eval_common

    require_data("spider2", benchmark)
    monkeypatch.setenv("FORCE_COLOR", "1")
    drawn = io.StringIO()
    monkeypatch.setattr(eval_common.console, "_rich", Console(file=drawn, force_terminal=True))
    scored = eval_common.evaluate_under_progress(f"scoring {benchmark}", benchmark, tmp_path)
    counts = set(re.findall(r"\d+/[\d?]+", drawn.getvalue()))
    assert counts and all(c.endswith(f"/{len(scored.results)}") for c in counts), counts
