"""`querybench run` end to end on a tiny Spider 1.0-shaped fixture, through a scripted server:
documented prompts, parsed replies, retries and accounting, interruption and resumption."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from querybench.methods.zero_shot import ZeroShot
from querybench.models import (
    OpenAICompatibleModel,
    Price,
    PriceTable,
    RequestBudget,
    RetryPolicy,
)
from querybench.runs.config import Execution, RunConfig, Sampling, Selection
from querybench.runs.runner import run
from querybench.runs.store import InstanceRecord, RecordStatus, RecordStore
from querybench.tasks import load_tasks
from tests.openai_server import Fault, Reply, ScriptedServer

GOLDEN = Path(__file__).parent / "golden" / "run_zero_shot_prompt.txt"
QUESTIONS = [
    ("How many items are there?", "SELECT count(*) FROM items"),
    ("What is the most expensive item?", "SELECT name FROM items ORDER BY price DESC LIMIT 1"),
    ("List the names of cheap items.", "SELECT name FROM items WHERE price < 5"),
    ("What is the total price of all items?", "SELECT sum(price) FROM items"),
    ("Which items cost exactly 3?", "SELECT name FROM items WHERE price = 3"),
    ("How many shops are there?", "SELECT count(*) FROM shops"),
]
PRICES = PriceTable({"scripted": Price(prompt=3.0, completion=15.0)})
FAST = RetryPolicy(max_retries=4, base=0.01, max_delay=0.05)


@pytest.fixture()
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data root holding spider1/dev.json and spider1/shop/shop.sqlite."""
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    root = shop_data(tmp_path / "data", QUESTIONS)
    entries = json.loads((root / "spider1" / "dev.json").read_text(encoding="utf-8"))
    entries.append({"db_id": "absent", "query": "SELECT 1", "question": "No database?"})
    (root / "spider1" / "dev.json").write_text(json.dumps(entries), encoding="utf-8")
    return root


def shop_data(root: Path, questions: list[tuple[str, str]]) -> Path:
    """`root` holding spider1/shop/shop.sqlite and spider1/dev.json of (question, SQL) pairs."""
    db = root / "spider1" / "shop" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL);"
        "INSERT INTO items VALUES (1, 'pen', 3), (2, 'book', 12.5), (3, 'cup', 4);"
        "CREATE TABLE shops (id INTEGER PRIMARY KEY, city TEXT);"
        "INSERT INTO shops VALUES (1, 'Lyon'), (2, 'Oslo');"
    )
    con.commit()
    con.close()
    entries = [{"db_id": "shop", "query": q, "question": text} for text, q in questions]
    (root / "spider1" / "dev.json").write_text(json.dumps(entries), encoding="utf-8")
    return root


class Injected(Exception):
    """A failure injected mid-run, standing in for a crash or Ctrl-C."""


def _gold_for(body: dict[str, Any]) -> str:
    question = body["messages"][-1]["content"].rsplit("Question: ", 1)[1]
    return dict(QUESTIONS)[question]


def answering(body: dict[str, Any]) -> Reply:
    """The scripted model: the gold SQL in a fenced block, fixed usage."""
    return Reply(f"Here:\n```sql\n{_gold_for(body)}\n```", prompt_tokens=200, completion_tokens=20)


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(default=answering) as s:
        yield s


def _config(data: Path, out: Path, selection: Selection | None = None, **kw: Any) -> RunConfig:
    selection = replace(selection or Selection(), data_dir=data)
    return RunConfig("spider1", "zero-shot", "scripted", out=out, selection=selection, **kw)


def _model(server: ScriptedServer, **kw: Any) -> OpenAICompatibleModel:
    kw.setdefault("retry", FAST)
    return OpenAICompatibleModel(
        "scripted", base_url=server.url, prices=PRICES, timeout=kw.pop("timeout", 5.0), **kw
    )


def _lines(run_dir: Path) -> list[dict[str, Any]]:
    text = (run_dir / "records.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_zero_shot_prompt_matches_golden_file(data: Path) -> None:
    task = load_tasks("spider1", data_dir=data)[1]
    messages = ZeroShot().build_messages(task, budget=16000, data_dir=data)
    text = "\n".join(f"=== {m.role}\n{m.text}" for m in messages) + "\n"
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_run_scores_and_accounts(data: Path, server: ScriptedServer, tmp_path: Path) -> None:
    out = tmp_path / "run"
    server.script([Fault(429, retry_after=0.05), Fault(500), Fault(hang=0.8)])
    outcome = run(_config(data, out), model=_model(server, timeout=0.4))
    assert outcome.complete and list(outcome.unavailable) == ["6"]
    s = outcome.summary
    # every task counts: the one whose database is absent is engine_unavailable, with why
    assert (s["n"], s["correct"], s["score"]) == (7, 6, 6 / 7)
    assert (s["runnable"], s["score_runnable"], s["unavailable"]) == (6, 1.0, 1)
    assert s["unavailable_reasons"] == {f"database not found: absent is not under {data}": 1}
    # 6 answers + 3 faults retried; usage and cost are the scripted ones
    assert len(server.requests) == 9 and s["requests"] == 9
    assert s["tokens"] == {"prompt": 1200, "completion": 120, "total": 1320}
    assert s["cost"] == pytest.approx(6 * (200 * 3.0 + 20 * 15.0) / 1e6)
    retried = Counter(r for line in _lines(out) for r in line["retried_for"])
    assert retried == Counter({"429": 1, "500": 1, "timeout": 1})
    record = RecordStore(out).load()["1"]
    assert record.replies[0].startswith("Here:\n```sql") and record.sql == QUESTIONS[1][1]
    assert len(record.prompt_hash or "") == 64
    pred = (out / "pred.txt").read_text(encoding="utf-8").splitlines()
    assert pred == [q for _, q in QUESTIONS] + [""]
    assert (out / "gold.sql").read_text(encoding="utf-8").splitlines()[0].endswith("\tshop")
    results = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["score"] for r in results] == [1.0] * 6 + [0.0]
    assert results[6]["error"] == "engine_unavailable" and "absent" in results[6]["message"]
    assert json.loads((out / "config.json").read_text())["model"] == "scripted"


def test_interrupted_run_resumes_each_instance_once(
    data: Path, server: ScriptedServer, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    seen: list[str] = []

    def crash_after_three(record: InstanceRecord) -> None:
        seen.append(record.instance_id)
        if len(seen) == 3:
            raise Injected("stop after three")

    with pytest.raises(Injected):
        run(_config(data, out), model=_model(server), on_record=crash_after_three)
    assert 3 <= len(RecordStore(out).load()) <= 4  # the other worker may finish its task
    outcome = run(_config(data, out), model=_model(server))
    ids = [line["instance_id"] for line in _lines(out)]
    assert sorted(ids) == [str(i) for i in range(6)]  # every instance exactly once
    assert outcome.summary["correct"] == 6
    # the requests in flight at the crash may be lost, never answered twice in the store
    assert 6 <= len(server.requests) <= 6 + 2


def test_budget_stops_then_resume_finishes(
    data: Path, server: ScriptedServer, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    first = run(
        _config(data, out, execution=Execution(workers=1)),
        model=_model(server, budget=RequestBudget(2)),
    )
    assert first.stopped and "budget" in first.stopped and not first.complete
    assert first.summary["finished"] == 2
    assert first.summary["errors"] == {"missing_prediction": 4, "engine_unavailable": 1}
    second = run(
        _config(data, out, execution=Execution(workers=1)),
        model=_model(server, budget=RequestBudget(10)),
    )
    assert second.complete and second.summary["correct"] == 6
    assert sorted(line["instance_id"] for line in _lines(out)) == [str(i) for i in range(6)]
    assert len(server.requests) == 6


def test_endpoint_down_is_retried_on_resume_unusable_reply_needs_retry_failed(
    data: Path, tmp_path: Path
) -> None:
    """A transport failure (here 503 after every retry) is no answer: the next run asks again.
    A reply that came back unusable (HTTP 400) stays a failure unless --retry-failed."""
    out = tmp_path / "run"
    with ScriptedServer(default=Fault(503)) as down:
        outcome = run(_config(data, out, selection=Selection(ids=("0", "1"))), model=_model(down))
    assert outcome.complete
    assert {r.error for r in outcome.results} == {"model_error"}
    assert outcome.summary["errors"] == {"model_error": 2} and outcome.summary["score"] == 0.0
    assert all(line["transient"] for line in _lines(out))
    with ScriptedServer(default=answering) as up:
        again = run(_config(data, out, selection=Selection(ids=("0", "1"))), model=_model(up))
        assert len(up.requests) == 2  # asked again without --retry-failed
    assert again.summary["score"] == 1.0
    out2 = tmp_path / "run2"
    with ScriptedServer(default=Fault(400)) as refusing:
        run(_config(data, out2, selection=Selection(ids=("0", "1"))), model=_model(refusing))
    assert not any(line["transient"] for line in _lines(out2))
    with ScriptedServer(default=answering) as up:
        kept = run(_config(data, out2, selection=Selection(ids=("0", "1"))), model=_model(up))
        assert len(up.requests) == 0  # an unusable reply is not retried by default
        fixed = run(
            _config(data, out2, selection=Selection(ids=("0", "1"), retry_failed=True)),
            model=_model(up),
        )
        assert len(up.requests) == 2
    assert kept.summary["score"] == 0.0 and fixed.summary["score"] == 1.0


def test_majority_vote_and_pass_at_k(data: Path, tmp_path: Path) -> None:
    """Three samples: two agree on a wrong answer for q0, so majority fails it; pass@3 counts
    the right one."""

    def sampler(body: dict[str, Any]) -> Reply:
        gold = _gold_for(body)
        if gold == QUESTIONS[0][1]:
            wrong = "SELECT count(*) FROM shops"
            sample = sampler.calls.setdefault(gold, 0)  # type: ignore[attr-defined]
            sampler.calls[gold] += 1  # type: ignore[attr-defined]
            return Reply(f"```sql\n{gold if sample == 0 else wrong}\n```")
        return Reply(f"```sql\n{gold}\n```")

    sampler.calls = {}  # type: ignore[attr-defined]
    out = tmp_path / "run"
    with ScriptedServer(default=sampler) as s:
        config = _config(
            data,
            out,
            sampling=Sampling(n=3, temperature=0.8),
            selection=Selection(ids=("0", "1")),
            execution=Execution(workers=1),
        )
        outcome = run(config, model=_model(s))
        assert len(s.requests) == 6
    assert outcome.summary["majority_at_n"] == 0.5
    assert outcome.summary["pass_at_k"]["1"] == pytest.approx((1 / 3 + 1) / 2)
    assert outcome.summary["pass_at_k"]["3"] == 1.0
    record = outcome.records["0"]
    assert record.sql == "SELECT count(*) FROM shops" and len(record.replies) == 3


def test_changed_experiment_in_same_folder_is_refused(
    data: Path, server: ScriptedServer, tmp_path: Path
) -> None:
    from querybench.errors import DataError

    out = tmp_path / "run"
    run(_config(data, out, selection=Selection(ids=("0",))), model=_model(server))
    with pytest.raises(DataError, match="another experiment"):
        run(
            _config(data, out, selection=Selection(ids=("0",)), sampling=Sampling(temperature=1.0)),
            model=_model(server),
        )


def test_torn_last_line_is_skipped_and_healed(tmp_path: Path) -> None:
    store = RecordStore(tmp_path)
    store.append(InstanceRecord("a", RecordStatus.OK, sql="SELECT 1"))
    with store.path.open("a") as f:
        f.write('{"instance_id": "b", "sta')
    assert list(store.load()) == ["a"]
    store.append(InstanceRecord("c", RecordStatus.OK))
    assert list(store.load()) == ["a", "c"]


def test_cli_run_constant(data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from querybench.cli import app

    monkeypatch.setenv("QUERYBENCH_DATA", str(data))
    out = tmp_path / "cli"
    sql = "SELECT count(*) FROM items"
    args = ["run", "spider1", "--method", "zero-shot", "--model", "constant"]
    result = CliRunner().invoke(app, [*args, "--constant-sql", sql, "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 7 and summary["correct"] == 1  # only q0's gold counts 3 rows
    assert re.search(r"score 1/7", result.output)
    assert "1 of 7 tasks could not run here" in result.output
    assert "engine_unavailable 1: database not found: absent" in result.output
    again = CliRunner().invoke(app, [*args, "--constant-sql", sql, "--out", str(out)])
    assert again.exit_code == 0 and len(_lines(out)) == 6


def test_async_api_runs_inside_a_loop(data: Path, server: ScriptedServer, tmp_path: Path) -> None:
    from querybench.runs.runner import run_async

    outcome = asyncio.run(
        run_async(
            _config(data, tmp_path / "r", selection=Selection(ids=("2",))), model=_model(server)
        )
    )
    assert outcome.summary["correct"] == 1


def test_cli_run_reads_the_task_file_once(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The data-gap line and the run share one load of the task file (it was read twice)."""
    from typer.testing import CliRunner

    import querybench.tasks.spider1 as spider1
    from querybench.cli import app

    loads: list[Path] = []
    real = spider1.read_spider1_file

    def counting(benchmark: Any, questions: Path, root: Path) -> list[Any]:
        loads.append(questions)
        return real(benchmark, questions, root)

    monkeypatch.setattr(spider1, "read_spider1_file", counting)
    monkeypatch.setenv("QUERYBENCH_DATA", str(data))
    args = ["run", "spider1", "--method", "zero-shot", "--model", "constant"]
    out = tmp_path / "once"
    result = CliRunner().invoke(app, [*args, "--constant-sql", "SELECT 1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "data: spider1: 6 of 7 tasks can run here" in result.output  # the gap line stays
    assert len(loads) == 1
