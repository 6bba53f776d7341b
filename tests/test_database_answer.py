"""Hostile DuckDB answers: a view or macro that reads the gold or a host file, a view that
computes past the deadline, a link to the gold; each refused with its reason, in the matchers,
`eval spider2-dbt` and `eval spider2`, on databases built here as the official folders lay
them out."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from querybench.evaluation.database_answer import DatabaseReader
from querybench.evaluation.spider2.agentic.dbt import evaluate_spider2_dbt
from querybench.evaluation.spider2.agentic.evaluate import evaluate_spider2_agentic
from querybench.evaluation.spider2.agentic.tables import duckdb_match, strict_duckdb_match
from querybench.tasks.model import GoldRef, Task
from querybench.tasks.spider2_agentic import checks

GOLD_TABLE = (
    "create table totals as select * from (values ('ann', 15.0), ('bo', 3.0)) t(name, total)"
)
PARAMS: dict[str, Any] = {"condition_tabs": ["totals"], "ignore_orders": [True]}


@pytest.fixture(scope="module")
def reader() -> Iterator[DatabaseReader]:
    with DatabaseReader(timeout=2.0) as shared:
        yield shared


def build(path: Path, *sqls: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(path)) as con:
        for sql in sqls:
            con.execute(sql)
    return path


def hostile_views(tmp_path: Path, gold: Path) -> dict[str, str]:
    """Each way a prediction's `totals` reaches outside its own file, by name."""
    host = tmp_path / "host.csv"
    host.write_text("name,total\nann,15.0\nbo,3.0\n")  # the gold's rows: read, it would pass
    pattern = f"{gold.parent.parent}/*/{gold.name}"
    return {
        "read_duckdb of the gold": f"create view totals as select * from read_duckdb("
        f"'{gold}', table_name='totals')",
        "a glob that binds empty": f"create view totals as select * from read_duckdb("
        f"'{pattern}', table_name='totals')",
        "a host CSV": f"create view totals as select * from read_csv('{host}')",
        "a macro over a host CSV": f"create macro rows() as table select * from read_csv('{host}');"
        "create view totals as select * from rows()",
    }


def test_a_view_or_macro_reaching_outside_its_file_is_refused(
    tmp_path: Path, reader: DatabaseReader
) -> None:
    gold = build(tmp_path / "gold" / "shop001" / "shop.duckdb", GOLD_TABLE)
    for number, (how, sql) in enumerate(hostile_views(tmp_path, gold).items()):
        pred = build(tmp_path / f"pred{number}" / "shop.duckdb", *sql.split(";"))
        for match in (duckdb_match, strict_duckdb_match):
            verdict = match(pred, gold, **PARAMS, reader=reader)
            assert verdict.score == 0.0, (how, verdict)
            assert verdict.error == "bad_prediction_file", (how, verdict)
            assert "reaches outside its database file" in (verdict.message or ""), how


def test_a_table_nested_past_what_pickle_can_hand_over_is_refused_with_the_reason(
    tmp_path: Path, reader: DatabaseReader
) -> None:
    """A column of lists nested 400 deep is DuckDB's to make, but its frame cannot be pickled
    back (`RecursionError`): the child died with a traceback on the eval's stderr and the
    answer read "the query's process ended (exit status 1)". Now the child says why, lives
    on, and the next database is read by the same child."""
    gold = build(tmp_path / "gold" / "shop001" / "shop.duckdb", GOLD_TABLE)
    nested = "[" * 400 + "1.0" + "]" * 400
    pred = build(
        tmp_path / "pred" / "shop.duckdb",
        f"create table totals as select 'ann' as name, {nested} as total",
    )
    verdict = duckdb_match(pred, gold, **PARAMS, reader=reader)
    assert verdict.error == "bad_prediction_file", verdict
    assert "cannot be handed over" in (verdict.message or ""), verdict
    honest = build(tmp_path / "honest" / "shop.duckdb", GOLD_TABLE)
    assert duckdb_match(honest, gold, **PARAMS, reader=reader).score == 1.0


def test_a_prediction_linked_to_the_gold_or_a_fifo_is_refused(
    tmp_path: Path, reader: DatabaseReader
) -> None:
    gold = build(tmp_path / "gold" / "shop001" / "shop.duckdb", GOLD_TABLE)
    linked = tmp_path / "pred" / "shop001" / "shop.duckdb"
    linked.parent.mkdir(parents=True)
    linked.symlink_to(gold)
    fifo = tmp_path / "pred" / "shop002" / "shop.duckdb"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    for pred, why in ((linked, "symlink"), (fifo, "FIFO")):
        for match in (duckdb_match, strict_duckdb_match):
            verdict = match(pred, gold, **PARAMS, reader=reader)
            assert verdict.error == "bad_prediction_file", verdict
            assert why in (verdict.message or ""), verdict


@pytest.mark.parametrize(
    "view",
    [
        # a view the interrupt stops between vectors
        "create view totals as select 'ann' as name, sum(hash(i)) * 0.0 + 15.0 as total"
        " from range(100000000000) r(i)",
        # one call no interrupt reaches: the child is killed
        "create view totals as select 'ann' as name, length(repeat('x', 2000000000 + i)) * 0.0"
        " as total from range(1) r(i)",
    ],
)
def test_a_view_that_computes_for_hours_stops_at_the_deadline(
    tmp_path: Path, reader: DatabaseReader, view: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gold = build(tmp_path / "gold" / "shop001" / "shop.duckdb", GOLD_TABLE)
    pred = build(tmp_path / "pred" / "shop001" / "shop.duckdb", view)
    start = time.monotonic()
    verdict = duckdb_match(pred, gold, **PARAMS, reader=reader)
    assert time.monotonic() - start < reader.timeout + 10
    assert verdict.error == "timeout", verdict
    # the strict scoring reads it too: the timeout is remembered, not waited for again
    opened: list[Path] = []
    read_tables = reader._read_tables

    def recording(path: Path, *args: Any, **kwargs: Any) -> Any:
        opened.append(path)
        return read_tables(path, *args, **kwargs)

    monkeypatch.setattr(reader, "_read_tables", recording)
    assert strict_duckdb_match(pred, gold, **PARAMS, reader=reader).error == "timeout"
    assert pred.resolve() not in opened and opened  # the gold is read, the answer is not
    # the reader goes on: the next answer is read in a fresh child
    honest = build(tmp_path / "pred" / "shop002" / "shop.duckdb", GOLD_TABLE)
    assert duckdb_match(honest, gold, **PARAMS, reader=reader).passed


def dbt_layout(tmp_path: Path) -> tuple[list[Task], Path, Path]:
    """Two DBT tasks laid out as the official folders: gold/<id>/shop.duckdb and the eval
    config's entry; predictions/<id>/shop.duckdb."""
    gold_dir, predictions = tmp_path / "gold", tmp_path / "predictions"
    evaluation = {"func": "duckdb_match", "parameters": {"gold": "shop.duckdb", **PARAMS}}
    tasks = []
    for iid in ("shop001", "shop002", "shop003"):
        build(gold_dir / iid / "shop.duckdb", GOLD_TABLE)
        tasks.append(
            Task(
                instance_id=iid,
                benchmark="spider2-dbt",
                question="q",
                db="shop",
                engine="duckdb",
                gold=GoldRef(eval_params={"evaluation": checks(evaluation)}),
                difficulty="unrated",
                extra={"type": "DBT"},
            )
        )
    return tasks, gold_dir, predictions


def test_eval_spider2_dbt_refuses_a_planted_view_and_a_link_to_the_gold(tmp_path: Path) -> None:
    tasks, gold_dir, predictions = dbt_layout(tmp_path)
    views = hostile_views(tmp_path, gold_dir / "shop001" / "shop.duckdb")
    build(predictions / "shop001" / "shop.duckdb", views["a glob that binds empty"])
    (predictions / "shop002").mkdir()
    (predictions / "shop002" / "shop.duckdb").symlink_to(gold_dir / "shop002" / "shop.duckdb")
    build(predictions / "shop003" / "shop.duckdb", GOLD_TABLE)  # an honest answer still passes
    results = {
        r.instance_id: r for r in evaluate_spider2_dbt(predictions, tasks=tasks, gold_dir=gold_dir)
    }
    for iid, why in (("shop001", "reaches outside"), ("shop002", "symlink")):
        result = results[iid]
        assert (result.official_score, result.strict_score) == (0.0, 0.0), result
        assert result.error == "bad_prediction_file" and why in (result.message or ""), result
    assert (results["shop003"].official_score, results["shop003"].strict_score) == (1.0, 1.0)


def test_a_dbt_task_folder_that_links_to_the_gold_is_refused_not_read(tmp_path: Path) -> None:
    """`<id>/` of the predictions a symlink to the task's gold folder: `<id>/shop.duckdb` is
    no link itself, but is the gold file; refused, as a link to the gold file is."""
    tasks, gold_dir, predictions = dbt_layout(tmp_path)
    predictions.mkdir()
    (predictions / "shop001").symlink_to(gold_dir / "shop001", target_is_directory=True)
    build(predictions / "shop003" / "shop.duckdb", GOLD_TABLE)
    results = {
        r.instance_id: r for r in evaluate_spider2_dbt(predictions, tasks=tasks, gold_dir=gold_dir)
    }
    result = results["shop001"]
    assert (result.official_score, result.strict_score) == (0.0, 0.0), result
    assert result.error == "bad_prediction_file" and "symlink" in (result.message or ""), result
    assert (results["shop003"].official_score, results["shop003"].strict_score) == (1.0, 1.0)


def test_the_reader_refuses_a_database_whose_folder_links_into_the_gold(tmp_path: Path) -> None:
    """The reader itself, handed `<id>/shop.duckdb` in its own folder: the folder is the link,
    the file no link, and its real path is the gold's; refused all the same."""
    from querybench.errors import PredictionRefused
    from querybench.evaluation.prediction_file import ReadLimits, checked_database

    gold = build(tmp_path / "gold" / "shop001" / "shop.duckdb", GOLD_TABLE)
    (tmp_path / "predictions").mkdir()
    linked = tmp_path / "predictions" / "shop001"
    linked.symlink_to(gold.parent, target_is_directory=True)
    with pytest.raises(PredictionRefused, match="reached through a symlink into the gold"):
        checked_database(linked / "shop.duckdb", linked, ReadLimits(), (gold.parent,))


def test_eval_spider2_refuses_a_planted_view_and_a_link_to_the_gold(tmp_path: Path) -> None:
    tasks, gold_dir, _ = dbt_layout(tmp_path)
    tasks = [
        Task(
            instance_id=t.instance_id,
            benchmark="spider2",
            question="q",
            db="shop",
            engine="duckdb",
            gold=GoldRef(
                eval_params={**t.gold.eval_params, "official_evaluation": t.gold.eval_params}
            ),
            difficulty="unrated",
            extra={"type": "DBT"},
        )
        for t in tasks
    ]
    sub = tmp_path / "submission"
    views = hostile_views(tmp_path, gold_dir / "shop001" / "shop.duckdb")
    build(sub / "shop001" / "shop.duckdb", views["read_duckdb of the gold"])
    (sub / "shop002").mkdir()
    (sub / "shop002" / "shop.duckdb").symlink_to(gold_dir / "shop002" / "shop.duckdb")
    build(sub / "shop003" / "shop.duckdb", GOLD_TABLE)
    lines = [
        {"instance_id": t.instance_id, "answer_type": "file", "answer_or_path": "shop.duckdb"}
        for t in tasks
    ]
    (sub / "results_metadata.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    evaluation = evaluate_spider2_agentic(sub, tasks=tasks, gold_dir=gold_dir)
    results = {r.instance_id: r for r in evaluation.results}
    for iid, why in (("shop001", "reaches outside"), ("shop002", "symlink")):
        result = results[iid]
        assert (result.official_score, result.strict_score) == (0.0, 0.0), result
        assert result.error == "bad_prediction_file" and why in (result.message or ""), result
    assert (results["shop003"].official_score, results["shop003"].strict_score) == (1.0, 1.0)


def test_a_huge_table_stops_at_the_byte_cap_before_it_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 10 GB of text behind one view: read whole before its bytes were counted, it ran the
    # child out of memory; fetched in chunks, it stops one chunk past the byte cap.
    monkeypatch.setenv("QUERYBENCH_QUERY_MEMORY_BYTES", str(1024**3))
    gold = build(tmp_path / "gold" / "shop001" / "shop.duckdb", GOLD_TABLE)
    huge = (
        "create view totals as select repeat('x', 10000) as name, 1.0 as total from range(1000000)"
    )
    pred = build(tmp_path / "pred" / "shop001" / "shop.duckdb", huge)
    with DatabaseReader(timeout=120.0) as reader:
        verdict = duckdb_match(pred, gold, **PARAMS, reader=reader)
    assert verdict.error == "too_large", verdict
    assert "holds more than 268435456 bytes (the cap" in (verdict.message or ""), verdict
