"""`spider2` (agentic Spider 2.0): loader, submission reading and both scorings of `eval spider2`.

The quirk cases build their own gold and submission folders; the real-data tests need
`$QUERYBENCH_DATA/spider2/spider2` (skipped with the reason when absent, failing under CI).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querybench.data.roots import data_root
from querybench.engines import connect
from querybench.engines.base import Result
from querybench.errors import QueryTimeout
from querybench.evaluation.record import InstanceResult
from querybench.evaluation.spider2.agentic.evaluate import (
    denominators,
    evaluate_spider2_agentic,
    has_gold,
)
from querybench.tasks import load_tasks
from querybench.tasks.model import GoldRef, Task
from querybench.tasks.spider2_agentic import checks
from tests.conftest import require_data

DATA = data_root()
AGENTIC = DATA / "spider2" / "spider2"


def needs_data() -> None:
    require_data("spider2", "spider2", "examples", "spider2.jsonl")


def make_task(instance_id: str, evaluation: Any, kind: str = "Local") -> Task:
    return Task(
        instance_id=instance_id,
        benchmark="spider2",
        question="q",
        db="db",
        engine="sqlite",
        gold=GoldRef(
            eval_params={"evaluation": checks(evaluation), "official_evaluation": evaluation}
        ),
        difficulty="unrated",
        extra={"type": kind},
    )


class Case:
    """A gold folder and a submission folder built in `tmp_path`."""

    def __init__(self, tmp_path: Path) -> None:
        self.gold = tmp_path / "gold"
        self.sub = tmp_path / "sub"
        self.gold.mkdir()
        self.sub.mkdir()
        self.tasks: list[Task] = []
        self.lines: list[str] = []

    def task(self, instance_id: str, evaluation: Any, **gold_files: str) -> None:
        self.tasks.append(make_task(instance_id, evaluation))
        folder = self.gold / instance_id
        folder.mkdir()
        for name, text in gold_files.items():
            (folder / name.replace("_csv", ".csv")).write_text(text)

    def submit(self, instance_id: str, kind: str, answer: Any, **files: str) -> None:
        self.lines.append(
            json.dumps({"instance_id": instance_id, "answer_type": kind, "answer_or_path": answer})
        )
        folder = self.sub / instance_id
        folder.mkdir(exist_ok=True)
        for name, text in files.items():
            (folder / name.replace("_csv", ".csv").replace("_sql", ".sql")).write_text(text)

    def score(self, **kwargs: Any) -> dict[str, InstanceResult]:
        (self.sub / "results_metadata.jsonl").write_text("".join(f"{x}\n" for x in self.lines))
        self.evaluation = evaluate_spider2_agentic(
            self.sub, tasks=self.tasks, gold_dir=self.gold, **kwargs
        )
        return {r.instance_id: r for r in self.evaluation.results}


def scores(result: InstanceResult) -> tuple[float | None, float | None]:
    return result.official_score, result.strict_score


NUMBER = [{"func": "number_match", "parameters": {"gold": "5"}}]


@pytest.mark.parametrize(
    ("params", "answer", "official", "strict"),
    [
        ({"gold": "5"}, "-5", 1.0, 0.0),  # the minus sign is not read
        ({"gold": "0.25"}, "25%", 1.0, 1.0),  # X% reads X/100
        ({"gold": 10.79, "percentage": True}, "10.79%", 0.0, 1.0),  # gold x 100, never / 100
        ({"gold": 0.1079, "percentage": True}, "10.79", 1.0, 1.0),
        ({"gold": 1106}, "1106 of 2000 rows in 3 tables", 1.0, 0.0),  # int gold: many numbers ok
        ({"gold": "1106"}, "1106 of 2000 rows", 0.0, 0.0),  # string gold: exactly one number
        ({"gold": [1106]}, "1106 of 2000 rows", 0.0, 0.0),  # one-item list: exactly one
        ({"gold": "5", "precision": True}, "5.09", 1.0, 0.0),  # a bool precision is 10 ** -1
    ],
)
def test_number_answers(
    tmp_path: Path, params: dict[str, Any], answer: str, official: float, strict: float
) -> None:
    case = Case(tmp_path)
    case.task("local1", [{"func": "number_match", "parameters": params}])
    case.submit("local1", "answer", answer)
    assert scores(case.score()["local1"]) == (official, strict)


@pytest.mark.parametrize(
    ("params", "answer", "official", "strict"),
    [
        ({"gold": ["MO"]}, "more or less", 1.0, 0.0),  # substring, case-insensitive
        ({"gold": ["Paris"], "exclude": ["Lyon"]}, "Paris, not Lyon", 0.0, 0.0),  # exclude first
        ({"gold": ["a"], "exclude": ["x"], "conj": "xor"}, "x", 0.0, 0.0),  # 0 before conj check
    ],
)
def test_string_answers(
    tmp_path: Path, params: dict[str, Any], answer: str, official: float, strict: float
) -> None:
    case = Case(tmp_path)
    case.task("local1", [{"func": "string_match", "parameters": params}])
    case.submit("local1", "answer", answer)
    result = case.score()["local1"]
    assert scores(result) == (official, strict)
    assert result.error != "scorer_error"


def test_best_of_text_checks_and_pdb_stops(tmp_path: Path) -> None:
    case = Case(tmp_path)
    both = [
        {"func": "string_match", "parameters": {"gold": ["Ronaldo"]}},
        {"func": "number_match", "parameters": {"gold": "7"}},
    ]
    case.task("local1", both)
    case.submit("local1", "answer", "Cristiano Ronaldo")
    case.task("local2", NUMBER)
    case.submit("local2", "answer", 5)  # a JSON number: `regex.findall` of a non-string
    case.task("local3", [{"func": "number_match", "parameters": {"gold": "5", "exclude": []}}])
    case.submit("local3", "answer", "5")  # a parameter the matcher does not take
    case.task("local4", [{"func": "string_match", "parameters": {"gold": ["a"], "conj": "xor"}}])
    case.submit("local4", "answer", "a")  # invalid conj raises once no exclude hit
    results = case.score()
    assert scores(results["local1"]) == (1.0, 1.0)
    for instance_id in ("local2", "local3", "local4"):
        result = results[instance_id]
        assert result.official_score == 0.0
        assert result.error == "scorer_error"
        assert "pdb" in (result.message or "")
    assert results["local3"].strict_score == 0.0


GOLD_AB = "name,value\na,1\nb,2\n"


def test_tables_and_their_quirks(tmp_path: Path) -> None:
    case = Case(tmp_path)
    one = {"func": "table_match", "parameters": {"gold": "result.csv", "ignore_order": True}}
    case.task("local1", [one], result_csv="x,y\n0,1\n")
    case.submit("local1", "file", "result.csv", result_csv="x,y\n,1\n")  # NULL is not 0 here
    case.task("local2", [one], result_csv="x\n1000000000000\n")
    case.submit("local2", "file", "result.csv", result_csv="x\n1000000000500\n")  # rel_tol 1e-9
    # Two table_match checks: the last one stands officially, either passes strictly.
    second = {"func": "table_match", "parameters": {"gold": "other.csv"}}
    case.task("local3", [one, second], result_csv=GOLD_AB, other_csv="name\nz\n")
    case.submit("local3", "file", "result.csv", result_csv=GOLD_AB)
    # Several gold tables: a list ignore_order is used for its truthiness ([false, false]).
    multi = {
        "func": "table_match",
        "parameters": {"gold": ["a.csv", "b.csv"], "ignore_order": [False, False]},
    }
    case.task("local4", [multi], a_csv=GOLD_AB, b_csv="name\nq\n")
    case.submit("local4", "file", "result.csv", result_csv="name,value\nb,2\na,1\n")
    # A text answer for a table-only gold scores 0, no error.
    case.task("local5", [one], result_csv=GOLD_AB)
    case.submit("local5", "answer", "a 1 b 2")
    results = case.score()
    assert scores(results["local1"]) == (0.0, 0.0)
    assert scores(results["local2"]) == (1.0, 1.0)
    assert scores(results["local3"]) == (0.0, 1.0)
    assert scores(results["local4"]) == (1.0, 0.0)
    assert scores(results["local5"]) == (0.0, 0.0)
    assert results["local5"].error == "wrong_result"


def test_files_answers(tmp_path: Path) -> None:
    spec = {
        "func": "tables_match",
        "parameters": {"gold": ["a.csv", "b.csv"], "condition_cols": [[], []]},
    }
    case = Case(tmp_path)
    case.task("pg1", spec, a_csv=GOLD_AB, b_csv="k\n1\n")
    case.submit("pg1", "files", ["a.csv", "b.csv"], a_csv=GOLD_AB, b_csv="k\n1\n")
    case.task("pg2", spec, a_csv=GOLD_AB, b_csv="k\n1\n")
    case.submit("pg2", "files", "ab", a_csv=GOLD_AB, b_csv="k\n1\n")  # read per character
    case.task("pg3", [spec], a_csv=GOLD_AB, b_csv="k\n1\n")  # a list-valued spec crashes
    case.submit("pg3", "files", ["a.csv", "b.csv"], a_csv=GOLD_AB, b_csv="k\n1\n")
    results = case.score()
    assert scores(results["pg1"]) == (1.0, 1.0)
    assert results["pg2"].official_score == 0.0
    assert results["pg3"].official_score == 0.0
    assert results["pg3"].error == "scorer_error"
    assert results["pg3"].strict_score == 1.0
    assert any("per character" in w for w in case.evaluation.warnings)


def test_reader_stops_at_a_bad_line_and_refuses_own_specs(tmp_path: Path) -> None:
    case = Case(tmp_path)
    for instance_id in ("local1", "local2", "local3", "local4"):
        case.task(instance_id, NUMBER)
    case.submit("local1", "answer", "5")
    case.lines.append("{not json")
    case.submit("local2", "answer", "5")  # dropped by the official reader
    always = {"func": "string_match", "parameters": {"gold": [""]}}
    case.lines.append(
        json.dumps(
            {"instance_id": "local3", "answer_type": "answer", "answer_or_path": "x"}
            | {"evaluation": always}
        )
    )
    case.submit("local4", "answer", "4")
    case.submit("local4", "answer", "5")  # the last line of an id counts
    results = case.score()
    assert scores(results["local1"]) == (1.0, 1.0)
    assert scores(results["local2"]) == (0.0, 1.0)
    assert results["local2"].error == "missing_prediction"
    assert scores(results["local3"]) == (0.0, 0.0)
    assert "own evaluation spec" in (results["local3"].message or "")
    assert results["local4"].strict_score == 1.0
    warnings = " ".join(case.evaluation.warnings)
    assert "silently drops" in warnings and "given again" in warnings
    counted = {d.name: d for d in denominators(case.evaluation.results)}
    assert counted["every task (built-in list)"].n == 4
    assert counted["official evaluate.py's own count"].n == 1  # only local1 is read


def test_paths_outside_the_submission_are_refused(tmp_path: Path) -> None:
    case = Case(tmp_path)
    spec = [{"func": "table_match", "parameters": {"gold": "result.csv"}}]
    case.task("local1", spec, result_csv=GOLD_AB)
    case.submit("local1", "file", str(case.gold / "local1" / "result.csv"))
    result = case.score()["local1"]
    assert scores(result) == (0.0, 0.0)
    assert "leaves the submission folder" in (result.message or "")


def test_sql_answers_run_on_the_task_engine(tmp_path: Path) -> None:
    database = tmp_path / "db.sqlite"
    with sqlite3.connect(database) as con:
        con.execute("CREATE TABLE t (name TEXT, value INT)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [("a", 1), ("b", 2)])

    def run(task: Task, sql: str) -> Result:
        with connect(database) as engine:
            return engine.execute(sql)

    case = Case(tmp_path)
    spec = [{"func": "table_match", "parameters": {"gold": "result.csv"}}]
    case.task("local1", spec, result_csv=GOLD_AB)
    case.submit("local1", "file", "q.sql", q_sql="SELECT name, value FROM t ORDER BY name")
    case.task("local2", spec, result_csv="name,value\n")
    case.submit("local2", "file", "q.sql", q_sql="SELECT name, value FROM t WHERE value > 5")
    results = case.score(run_sql=run)
    assert scores(results["local1"]) == (1.0, 1.0)
    # An empty result: officially no pred_result.csv is written (0); strictly an empty table.
    assert scores(results["local2"]) == (0.0, 1.0)
    assert not (case.sub / "local1" / "pred_result.csv").exists()  # the submission is untouched


def test_loader_lists_632_tasks() -> None:
    needs_data()
    tasks = load_tasks("spider2", data_dir=DATA)
    assert len(tasks) == 632
    assert Counter(t.extra["type"] for t in tasks) == {
        "Bigquery": 214,
        "Snowflake": 198,
        "Local": 135,
        "DBT": 68,
        "Postgres": 10,
        "Clickhouse": 7,
    }
    rated = [t for t in tasks if t.difficulty != "unrated"]
    assert len(rated) == 538
    assert {t.difficulty for t in rated} == {"easy", "medium", "hard"}
    assert Counter(t.extra["answer_type"] for t in tasks) == {
        "table": 281,
        "string": 271,
        "database": 80,
    }
    dbt = {t.instance_id for t in load_tasks("spider2-dbt", data_dir=DATA)}
    assert {t.instance_id for t in tasks if t.extra["type"] == "DBT"} == dbt


# Two gold entries the official code cannot score with their own gold table.
GOLD_DEFECTS = {
    "sf_bq166": "out-of-bounds",  # condition_cols index 8 in a table of fewer columns
    "sf_bq036": "exclude",  # table_match given an `exclude` parameter
}


@pytest.mark.slow
def test_gold_as_prediction_scores_one(tmp_path: Path) -> None:
    needs_data()
    gold = AGENTIC / "evaluation_suite" / "gold"
    tasks = load_tasks("spider2", data_dir=DATA)
    lines = []
    for task in tasks:
        if not has_gold(task, gold):
            continue
        folder = tmp_path / task.instance_id
        folder.mkdir()
        check = next(
            c
            for c in task.gold.eval_params["evaluation"]
            if c["func"] in ("table_match", "tables_match")
        )
        names = check["parameters"]["gold"]
        names = [names] if isinstance(names, str) else names
        for name in names:
            shutil.copyfile(gold / task.instance_id / name, folder / name)
        kind = "files" if check["func"] == "tables_match" else "file"
        answer = names if kind == "files" else names[0]
        lines.append(
            {"instance_id": task.instance_id, "answer_type": kind, "answer_or_path": answer}
        )
    (tmp_path / "results_metadata.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    evaluation = evaluate_spider2_agentic(tmp_path, tasks=tasks, gold_dir=gold)
    with_gold = [r for r in evaluation.results if r.metrics["has_gold"]]
    assert len(with_gold) == len(lines) == 559  # 632 - 68 DBT - 5 with a gold file missing
    failed = {r.instance_id: r for r in with_gold if scores(r) != (1.0, 1.0)}
    assert set(failed) == set(GOLD_DEFECTS)
    for instance_id, reason in GOLD_DEFECTS.items():
        assert failed[instance_id].error == "gold_error"
        assert reason in (failed[instance_id].message or "")


def test_cli_writes_both_scores(tmp_path: Path) -> None:
    from querybench.cli import app

    sub = tmp_path / "sub"
    (sub / "local1").mkdir(parents=True)
    (sub / "results_metadata.jsonl").write_text(
        json.dumps({"instance_id": "local1", "answer_type": "answer", "answer_or_path": "-5"})
        + "\n{bad\n"
    )
    out = tmp_path / "out.jsonl"
    runner = CliRunner()
    result = runner.invoke(
        app,
        ["eval", "spider2", "--predictions", str(sub), "--output", str(out)],
        env={"QUERYBENCH_DATA": str(DATA)} if DATA.is_dir() else {},
    )
    if not (AGENTIC / "examples" / "spider2.jsonl").is_file():
        assert result.exit_code == 2  # no tasks: a clean error
        return
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 632
    assert all("official_score" in x and "strict_score" in x for x in lines)
    assert "every task (built-in list): 0/632" in result.output


def test_a_folder_without_metadata_or_with_a_foreign_line(tmp_path: Path) -> None:
    case = Case(tmp_path)
    case.task("local1", NUMBER)
    evaluation = evaluate_spider2_agentic(case.sub, tasks=case.tasks, gold_dir=case.gold)
    assert evaluation.results[0].error == "missing_prediction"
    assert any("no results_metadata.jsonl" in w for w in evaluation.warnings)
    case.submit("local1", "answer", "5")
    case.lines.append("[1, 2]")  # JSON, but no object: the official run crashes on it
    result = case.score()["local1"]
    assert scores(result) == (0.0, 1.0)
    assert result.error == "scorer_error" and "scores nothing" in (result.message or "")


def test_a_submitted_table_that_is_a_fifo_or_a_link_out_is_refused_not_read(
    tmp_path: Path,
) -> None:
    """A submitted CSV is opened as every prediction is: a FIFO never blocks the eval, a link
    to a host file is not followed (its content is never read), each with its reason."""
    import os

    spec = [{"func": "table_match", "parameters": {"gold": "result.csv"}}]
    case = Case(tmp_path)
    secret = tmp_path / "host_secret.csv"
    secret.write_text("a\n1\n")  # the gold's own content: a followed link would score 1
    for iid in ("fifo1", "link1"):
        case.task(iid, spec, result_csv="a\n1\n")
        case.submit(iid, "file", "out.csv")
    os.mkfifo(case.sub / "fifo1" / "out.csv")
    (case.sub / "link1" / "out.csv").symlink_to(secret)
    results = case.score()
    for iid in ("fifo1", "link1"):
        assert scores(results[iid]) == (0.0, 0.0), results[iid]
        assert results[iid].error == "bad_prediction_file", results[iid]
    assert "FIFO" in (results["fifo1"].message or "").upper()
    assert "symlink" in (results["link1"].message or "")


def test_a_line_nested_past_the_json_reader_is_a_bad_line_not_a_crash(tmp_path: Path) -> None:
    """A hostile line `[[[[...]]]]` deeper than json's recursion limit: one bad line, stated."""
    case = Case(tmp_path)
    case.task("local1", NUMBER)
    case.submit("local1", "answer", "5")
    case.lines.append("[" * 100_000 + "]" * 100_000)
    result = case.score()["local1"]
    assert scores(result) == (1.0, 1.0)
    assert any(":2: not JSON" in w for w in case.evaluation.warnings)


# A single SQLite call that never reaches the engine's interrupt check: only a kill stops it.
QUADRATIC_LIKE = (
    "SELECT 1 AS x WHERE printf('%.*c', 5000000, 'a') LIKE '%' || printf('%.*c', 5000, 'a') || 'b%'"
)


def test_a_sql_answer_stops_at_its_timeout_with_verdict_timeout(tmp_path: Path) -> None:
    """A `.sql` answer runs in the killable query child, as sql mode's queries do: a call
    that no progress handler interrupts is stopped at the timeout, and both scorings say
    `timeout` (it ran in the scoring process, for minutes, before)."""
    import dataclasses
    import time

    from querybench.evaluation.spider2.agentic.instance import engine_runner

    database = tmp_path / "db.sqlite"
    with sqlite3.connect(database) as con:
        con.execute("CREATE TABLE t (x INT)")
    case = Case(tmp_path)
    case.task("local1", [{"func": "table_match", "parameters": {"gold": "result.csv"}}])
    case.tasks[-1] = dataclasses.replace(
        case.tasks[-1], extra={**case.tasks[-1].extra, "db_path": str(database)}
    )
    (case.gold / "local1" / "result.csv").write_text("x\n1\n")
    case.submit("local1", "file", "q.sql", q_sql=QUADRATIC_LIKE)
    start = time.monotonic()
    result = case.score(run_sql=engine_runner(None, timeout=1.0))["local1"]
    # the kill comes at the timeout + 0.5 s, once: both scorings take the one failure
    assert time.monotonic() - start < 1.0 + 10
    assert scores(result) == (0.0, 0.0)
    assert result.error == "timeout", result
    strict = case.evaluation.results[0]
    assert "timeout" in (strict.message or "")
    # both scorings ask for the answer: the failure is remembered, not waited for again
    runner = engine_runner(None, timeout=1.0)
    for wait in (1.0 + 10, 0.5):
        start = time.monotonic()
        with pytest.raises(QueryTimeout):
            runner(case.tasks[-1], QUADRATIC_LIKE)
        assert time.monotonic() - start < wait


def test_a_sql_answer_that_is_a_fifo_or_a_link_out_is_refused_not_read(tmp_path: Path) -> None:
    """A `.sql` answer is read as every prediction file is: a FIFO does not block the eval, a
    link to a host file is not followed (its text never reaches an engine's error message)."""
    import os

    def run(task: Task, sql: str) -> Result:
        raise AssertionError(f"no SQL should run, got {sql!r}")

    spec = [{"func": "table_match", "parameters": {"gold": "result.csv"}}]
    case = Case(tmp_path)
    secret = tmp_path / "host_secret.sql"
    secret.write_text("SELECT 'host secret'")
    for iid in ("fifo1", "link1"):
        case.task(iid, spec, result_csv="a\n1\n")
        case.submit(iid, "file", "q.sql")
    os.mkfifo(case.sub / "fifo1" / "q.sql")
    (case.sub / "link1" / "q.sql").symlink_to(secret)
    results = case.score(run_sql=run)
    for iid in ("fifo1", "link1"):
        assert scores(results[iid]) == (0.0, 0.0), results[iid]
        assert results[iid].error == "bad_prediction_file", results[iid]
    assert "FIFO" in (results["fifo1"].message or "").upper()
    assert "symlink" in (results["link1"].message or "")


def test_eval_spider2_timeout_stops_a_slow_sql_answer_on_local229(tmp_path: Path) -> None:
    """`eval spider2 --timeout 2`: the quadratic `LIKE` as local229's answer stops at about
    its timeout with `timeout`, as `eval spider2-lite --mode sql --timeout 2` stops it."""
    import time

    from querybench.cli import app

    needs_data()
    require_data("spider2-lite-local", "IPL.sqlite")
    sub = tmp_path / "sub"
    (sub / "local229").mkdir(parents=True)
    (sub / "local229" / "q.sql").write_text(QUADRATIC_LIKE)
    (sub / "results_metadata.jsonl").write_text(
        json.dumps({"instance_id": "local229", "answer_type": "file", "answer_or_path": "q.sql"})
        + "\n"
    )
    out = tmp_path / "out.jsonl"
    start = time.monotonic()
    result = CliRunner().invoke(
        app,
        ["eval", "spider2", "--predictions", str(sub), "--timeout", "2", "--output", str(out)],
        env={"QUERYBENCH_DATA": str(DATA)},
    )
    took = time.monotonic() - start
    assert result.exit_code == 0, result.output
    line = next(
        x for x in map(json.loads, out.read_text().splitlines()) if x["instance_id"] == "local229"
    )
    assert line["error"] == "timeout", line
    assert took < 2 + 20, took


TABLE = {"func": "table_match", "parameters": {"gold": "result.csv"}}
DBT_CHECK = {
    "func": "duckdb_match",
    "parameters": {"gold": "synth.duckdb", "condition_tabs": ["mrr"], "ignore_orders": [True]},
}


def _duckdb_file(path: Path) -> None:
    import duckdb

    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute("create table mrr(k varchar, v int); insert into mrr values ('a', 1), ('b', 2)")
    con.close()


def custom_gold_case(root: Path) -> tuple[Path, Path]:
    """A gold folder whose eval config names ids the built-in list lacks (a table, a number, a
    synthetic DBT database, two answers through `../shared_files/`, one not submitted), and a
    submission for them plus an id the config does not name. The official evaluate.py scores
    the 5 ids both name, 4 of them 1: `custom_shared01` has no folder of its own, so the
    system cannot resolve `custom_shared01/..` and its file is unreadable there."""
    gold, sub = root / "gold", root / "sub"
    config = {
        "custom_table01": TABLE,
        "custom_text01": {"func": "number_match", "parameters": {"gold": "5"}},
        "synth_dbt01": DBT_CHECK,
        "custom_shared01": TABLE,
        "custom_shared02": TABLE,
        "custom_missing01": TABLE,
    }
    for instance_id, check in config.items():
        (gold / instance_id).mkdir(parents=True)
        if check is TABLE:
            (gold / instance_id / "result.csv").write_text(GOLD_AB)
    lines = "".join(
        json.dumps({"instance_id": i, "evaluation": e}) + "\n" for i, e in config.items()
    )
    (gold / "spider2_eval.jsonl").write_text(lines)
    _duckdb_file(gold / "synth_dbt01" / "synth.duckdb")
    _duckdb_file(sub / "synth_dbt01" / "synth.duckdb")
    (sub / "custom_table01").mkdir()
    (sub / "custom_table01" / "out.csv").write_text(GOLD_AB)
    (sub / "shared_files").mkdir()
    (sub / "shared_files" / "s.csv").write_text(GOLD_AB)
    (sub / "custom_shared02").mkdir()  # its own folder exists: `custom_shared02/..` resolves
    shared = "../shared_files/s.csv"
    answers = [
        ("custom_table01", "file", "out.csv"),
        ("custom_text01", "answer", "5"),
        ("synth_dbt01", "file", "synth.duckdb"),
        ("custom_shared01", "file", shared),
        ("custom_shared02", "file", shared),
        ("not_in_config01", "answer", "1"),
    ]
    rows = [{"instance_id": i, "answer_type": k, "answer_or_path": a} for i, k, a in answers]
    (sub / "results_metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return gold, sub


def test_eval_with_a_gold_dir_scores_the_instances_its_config_names(tmp_path: Path) -> None:
    """`eval spider2 --gold-dir DIR`: DIR's eval config is the task set (ids the built-in list
    lacks scored by their checks), with the official verdicts, and the denominators name it."""
    from querybench.cli import app

    gold, sub = custom_gold_case(tmp_path)
    out = tmp_path / "out.jsonl"
    args = ["eval", "spider2", "--predictions", str(sub), "--gold-dir", str(gold)]
    result = CliRunner().invoke(app, [*args, "--output", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = {x["instance_id"]: x for x in map(json.loads, out.read_text().splitlines())}
    assert list(lines) == [
        "custom_table01",
        "custom_text01",
        "synth_dbt01",
        "custom_shared01",
        "custom_shared02",
        "custom_missing01",
    ]
    official = {i: x["official_score"] for i, x in lines.items()}
    assert official == {
        "custom_table01": 1.0,
        "custom_text01": 1.0,
        "synth_dbt01": 1.0,
        "custom_shared01": 0.0,  # `custom_shared01/..` does not resolve: unreadable
        "custom_shared02": 1.0,
        "custom_missing01": 0.0,
    }
    assert lines["custom_shared01"]["strict_score"] == 0.0
    assert "custom_shared01/ is no folder" in lines["custom_shared01"]["message"]
    assert lines["custom_missing01"]["error"] == "missing_prediction"
    assert lines["synth_dbt01"]["metrics"]["dbt"] == 1.0
    text = " ".join(result.output.split())
    assert f"every task ({gold / 'spider2_eval.jsonl'}): 4/6" in text
    assert "official evaluate.py's own count: 4/5 (official 0.8000" in text
    assert "not_in_config01" in text  # warned about, as officially silently ignored


def test_a_path_through_a_missing_task_folder_is_unreadable(tmp_path: Path) -> None:
    """`../shared_files/x` from a task folder that is not there: 0 in both scorings (the
    system resolves `<id>/..` only when `<id>/` exists); a `.sql` answer named that way stops
    the official run (its `open()` is outside any try)."""
    case = Case(tmp_path)
    case.task("local1", [TABLE], result_csv=GOLD_AB)
    case.task("local2", [TABLE], result_csv=GOLD_AB)
    case.task("local3", [TABLE], result_csv=GOLD_AB)
    (case.sub / "shared_files").mkdir()
    (case.sub / "shared_files" / "s.csv").write_text(GOLD_AB)
    (case.sub / "shared_files" / "q.sql").write_text("SELECT 'a' AS name, 1 AS value")
    (case.sub / "local2").mkdir()
    for instance_id, answer in (
        ("local1", "../shared_files/s.csv"),
        ("local2", "../shared_files/s.csv"),
        ("local3", "../shared_files/q.sql"),
    ):
        line = {"instance_id": instance_id, "answer_type": "file", "answer_or_path": answer}
        case.lines.append(json.dumps(line))
    results = case.score()
    assert scores(results["local1"]) == (0.0, 0.0)
    assert results["local1"].error == "bad_prediction_file"
    assert "local1/ is no folder" in (results["local1"].message or "")
    assert scores(results["local2"]) == (1.0, 1.0)
    assert results["local3"].error == "scorer_error"
    assert "official evaluate.py crashes" in (results["local3"].message or "")


def test_results_metadata_that_links_out_or_is_a_fifo_is_refused_not_read(tmp_path: Path) -> None:
    """`results_metadata.jsonl` is a prediction file too: a link to a host file is not
    followed (none of its lines reach a warning), a FIFO does not block the eval."""
    import os

    host = tmp_path / "host.jsonl"
    host.write_text('[1, "host secret"]\n')
    for how in ("link", "fifo"):
        (tmp_path / how).mkdir()
        case = Case(tmp_path / how)
        case.task("local1", NUMBER)
        metadata = case.sub / "results_metadata.jsonl"
        if how == "link":
            metadata.symlink_to(host)
        else:
            os.mkfifo(metadata)
        evaluation = evaluate_spider2_agentic(case.sub, tasks=case.tasks, gold_dir=case.gold)
        warnings = " ".join(evaluation.warnings)
        assert "host secret" not in warnings
        assert ("symlink" if how == "link" else "FIFO") in warnings, warnings
        assert evaluation.results[0].score == 0.0


def test_a_task_folder_that_links_to_the_gold_or_out_is_refused_not_read(tmp_path: Path) -> None:
    """`<id>/` itself a symlink: to the task's gold folder (its result.csv would score 1.0) or
    to a host folder. The file inside is no link, so only its real path tells: refused, the
    target never read; an honest folder beside them still scores."""
    spec = [{"func": "table_match", "parameters": {"gold": "result.csv"}}]
    case = Case(tmp_path)
    host = tmp_path / "host"
    host.mkdir()
    (host / "result.csv").write_text("a\n1\n")  # the gold's content: read, it would pass
    for iid in ("gold1", "host1", "fair1"):
        case.task(iid, spec, result_csv="a\n1\n")
    case.submit("fair1", "file", "result.csv", result_csv="a\n1\n")
    for iid, target in (("gold1", case.gold / "gold1"), ("host1", host)):
        case.lines.append(
            json.dumps({"instance_id": iid, "answer_type": "file", "answer_or_path": "result.csv"})
        )
        (case.sub / iid).symlink_to(target, target_is_directory=True)
    results = case.score()
    for iid in ("gold1", "host1"):
        assert scores(results[iid]) == (0.0, 0.0), results[iid]
        assert results[iid].error == "bad_prediction_file", results[iid]
        assert "symlink" in (results[iid].message or ""), results[iid]
    assert scores(results["fair1"]) == (1.0, 1.0)
