"""DBT projects: a synthetic project with a DuckDB source built here, one model removed, that a
scripted agent (through the loopback OpenAI-compatible server) completes with CreateFile and
`dbt run` in the sandbox; the database it leaves scores 1 under `duckdb_match`, the source
database is untouched, and tasks run at once each build their own copy."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from querybench.agent.actions import ExecuteSQL
from querybench.agent.dbt import ENV_VAR, find_dbt, open_dbt_workspace, unreadable_mounts
from querybench.agent.protocol import format_action
from querybench.agent.sandbox import Limits, run_shell
from querybench.agent.workspace import WorkspaceOptions
from querybench.cli import app
from querybench.evaluation.spider2.agentic.dbt import evaluate_spider2_dbt, with_gold_summary
from querybench.models.base import ChatRequest, Completion
from querybench.runs.config import Execution, RunConfig, Selection
from querybench.runs.runner import run
from querybench.tasks import load_tasks
from querybench.tasks.model import Task
from tests.conftest import require_data, require_sandbox
from tests.methods_fixture import model
from tests.openai_server import Reply, ScriptedServer

REPO = Path(__file__).resolve().parent.parent
MODEL_SQL = """select c.name, sum(o.amount) as total
from raw_customers c join {{ ref('stg_orders') }} o on o.customer_id = c.id
group by c.name
"""
GOLD_SQL = """create table customer_totals as
select c.name, sum(o.amount) as total
from raw_customers c join raw_orders o on o.customer_id = c.id
where o.status <> 'cancelled'
group by c.name"""


def _dbt_program() -> str:
    """dbt for the tests: $QUERYBENCH_DBT, else the checkout's .venv-dbt (.ci/run makes it),
    else PATH; skipped with a reason without one (or without bwrap), failed under CI."""
    found = os.environ.get(ENV_VAR) or str(REPO / ".venv-dbt" / "bin" / "dbt")
    program = found if Path(found).is_file() else shutil.which("dbt")
    require_sandbox()
    if program is None:
        reason = f"dbt not found (set {ENV_VAR} or create .venv-dbt as .ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    assert program is not None
    return program


@pytest.fixture()
def dbt_program(monkeypatch: pytest.MonkeyPatch) -> str:
    program = _dbt_program()
    monkeypatch.setenv(ENV_VAR, program)
    return program


def make_dbt_data(root: Path, ids: list[str], *, gold: bool = True) -> Path:
    """A data root with spider2-dbt tasks `ids` over one project (model customer_totals
    removed) and, with `gold`, their gold database: each answer names its instance."""
    dbt = root / "spider2" / "spider2-dbt"
    project = dbt / "examples" / "shop"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        "name: shop\nversion: '1.0'\nprofile: shop\nmodel-paths: ['models']\n"
        "models:\n  shop:\n    +materialized: table\n"
    )
    (project / "profiles.yml").write_text(
        "shop:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n"
        "      path: './shop.duckdb'\n      schema: main\n"
    )
    (project / "models" / "stg_orders.sql").write_text(
        "select * from raw_orders where status <> 'cancelled'\n"
    )
    (project / "models" / "schema.yml").write_text(
        "version: 2\nmodels:\n  - name: customer_totals\n"
        "    description: each customer's total of orders that were not cancelled\n"
    )
    with duckdb.connect(str(project / "shop.duckdb")) as con:
        con.execute("create table raw_customers as select * from (values (1, 'ann'), (2, 'bo'))")
        con.execute("alter table raw_customers rename column col0 to id")
        con.execute("alter table raw_customers rename column col1 to name")
        con.execute(
            "create table raw_orders as select * from (values (1, 1, 10.5, 'done'), "
            "(2, 1, 4.5, 'done'), (3, 2, 7.0, 'cancelled'), (4, 2, 3.0, 'done')) "
            "t(id, customer_id, amount, status)"
        )
    tasks, evals = [], []
    for iid in ids:
        shutil.copytree(project, dbt / "examples" / iid)
        tasks.append({"instance_id": iid, "instruction": "Add customer_totals.", "type": "DBT"})
        params = {"gold": "shop.duckdb", "condition_tabs": ["customer_totals"]}
        evals.append(
            {
                "instance_id": iid,
                "evaluation": {
                    "func": "duckdb_match",
                    "parameters": {**params, "condition_cols": [[0, 1]], "ignore_orders": [True]},
                },
            }
        )
        if gold:
            folder = dbt / "evaluation_suite" / "gold" / iid
            folder.mkdir(parents=True)
            shutil.copyfile(project / "shop.duckdb", folder / "shop.duckdb")
            with duckdb.connect(str(folder / "shop.duckdb")) as con:
                con.execute(GOLD_SQL)
    shutil.rmtree(project)
    lines = "".join(json.dumps(t) + "\n" for t in tasks)
    (dbt / "examples" / "spider2-dbt.jsonl").write_text(lines)
    gold_dir = dbt / "evaluation_suite" / "gold"
    gold_dir.mkdir(parents=True, exist_ok=True)
    (gold_dir / "spider2_eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    return root


def text(name: str, **arguments: Any) -> Reply:
    return Reply(f"Thought: next\nAction: {format_action(name, **arguments)}")


SOLVE = [
    text("Bash", code="cat models/schema.yml && dbt ls --resource-type model"),
    text("CreateFile", filepath="models/customer_totals.sql", code=MODEL_SQL),
    text("Bash", code="dbt run"),
    text("ExecuteSQL", sql_query="SELECT name, total FROM customer_totals ORDER BY name"),
    text("Terminate", output="shop.duckdb"),
]


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(default=text("Terminate", output="shop.duckdb")) as s:
        yield s


def test_find_dbt_names_what_the_sandbox_mounts(dbt_program: str) -> None:
    toolchain = find_dbt()
    assert toolchain is not None
    assert toolchain.bin_dir == Path(dbt_program).absolute().parent
    assert unreadable_mounts(toolchain) == []  # the sandbox user can start it


def test_agent_completes_the_project_and_scores_one(
    dbt_program: str, server: ScriptedServer, tmp_path: Path
) -> None:
    data = make_dbt_data(tmp_path / "data", ["shop001", "shop002"])
    source = data / "spider2" / "spider2-dbt" / "examples" / "shop001" / "shop.duckdb"
    before = source.read_bytes()
    server.script([*SOLVE, text("Terminate", output="shop.duckdb")])  # shop002 gives up
    out = tmp_path / "run"
    config = RunConfig(
        "spider2-dbt",
        "spider-agent",
        "scripted",
        out=out,
        selection=Selection(data_dir=data),
        execution=Execution(workers=1),
    )
    outcome = run(config, model=model(server))
    results = {r.instance_id: r for r in outcome.results}
    assert results["shop001"].official_score == 1.0 and results["shop001"].strict_score == 1.0
    assert results["shop002"].score == 0.0 and results["shop002"].error == "wrong_result"
    assert "customer_totals" in (results["shop002"].message or "")
    assert outcome.summary["with_gold"] == {
        "n": 2,
        "correct": 1,
        "official_score": 0.5,
        "strict_score": 0.5,
    }
    steps = json.loads((out / "trajectories" / "shop001.json").read_text())["steps"]
    assert "name: customer_totals" in steps[0]["observation"]
    assert "shop.stg_orders" in steps[0]["observation"]  # dbt ls, offline
    assert "Completed successfully" in steps[2]["observation"]
    assert "ann,15.0" in steps[3]["observation"] and "bo,3.0" in steps[3]["observation"]
    built = out / "predictions" / "shop001" / "shop.duckdb"
    with duckdb.connect(str(built), read_only=True) as con:
        rows = con.execute("select name, total from customer_totals order by name").fetchall()
    assert rows == [("ann", 15.0), ("bo", 3.0)]
    assert source.read_bytes() == before  # the agent worked on a private copy
    # the saved databases score the same through `querybench eval spider2-dbt`
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "spider2-dbt",
            "--predictions",
            str(out / "predictions"),
            "--data-dir",
            str(data),
            "--output",
            str(tmp_path / "eval.jsonl"),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in (tmp_path / "eval.jsonl").read_text().splitlines()]
    assert [(x["instance_id"], x["score"]) for x in lines] == [("shop001", 1.0), ("shop002", 0.0)]


def test_missing_gold_and_missing_start_database_count_in_the_honest_denominator(
    dbt_program: str, server: ScriptedServer, tmp_path: Path
) -> None:
    data = make_dbt_data(tmp_path / "data", ["shop001", "shop002"], gold=False)
    (data / "spider2" / "spider2-dbt" / "examples" / "shop002" / "shop.duckdb").unlink()
    out = tmp_path / "run"
    config = RunConfig(
        "spider2-dbt",
        "spider-agent",
        "scripted",
        out=out,
        selection=Selection(data_dir=data),
        execution=Execution(workers=1),
    )
    outcome = run(config, model=model(server))
    results = {r.instance_id: r for r in outcome.results}
    assert results["shop001"].error == "gold_error" and "gold file missing" in str(
        results["shop001"].message
    )
    assert results["shop002"].error == "engine_unavailable"
    assert "shop.duckdb is not here" in str(results["shop002"].message)
    assert outcome.summary["n"] == 2 and outcome.summary["score"] == 0.0
    assert outcome.summary["with_gold"]["n"] == 0
    assert (out / "predictions" / "shop001" / "shop.duckdb").is_file()


class Overlapping:
    """Each task writes a model naming its own instance, once all four are in flight, then
    runs dbt: four sandboxes build four private copies at once."""

    name = "overlapping"

    def __init__(self) -> None:
        self.barrier = asyncio.Barrier(4)

    async def complete(self, request: ChatRequest, task: Task | None = None) -> Completion:
        assert task is not None
        done = sum(m.role == "assistant" for m in request.messages)
        if done == 0:
            await asyncio.wait_for(self.barrier.wait(), timeout=120)
        sql = f"select '{task.instance_id}' as who, count(*) as n from raw_orders"
        steps: list[tuple[str, dict[str, Any]]] = [
            ("CreateFile", {"filepath": "models/who.sql", "code": sql}),
            ("Bash", {"code": "dbt run --select who"}),
            ("Terminate", {"output": "shop.duckdb"}),
        ]
        name, arguments = steps[done]
        return Completion(f"Thought: step {done}\nAction: {format_action(name, **arguments)}")

    async def aclose(self) -> None:
        return None


def test_four_dbt_tasks_at_once_build_separate_copies(dbt_program: str, tmp_path: Path) -> None:
    ids = [f"shop00{i}" for i in range(1, 5)]
    data = make_dbt_data(tmp_path / "data", ids)
    out = tmp_path / "run"
    config = RunConfig(
        "spider2-dbt",
        "spider-agent",
        "overlapping",
        out=out,
        selection=Selection(data_dir=data),
        execution=Execution(workers=4),
    )
    outcome = run(config, model=Overlapping())
    failed = {k: (r.error, r.message) for k, r in outcome.records.items() if not r.ok}
    assert not failed
    for iid in ids:
        steps = json.loads((out / "trajectories" / f"{iid}.json").read_text())["steps"]
        assert "Completed successfully" in steps[1]["observation"], steps[1]["observation"]
        with duckdb.connect(str(out / "predictions" / iid / "shop.duckdb"), read_only=True) as con:
            assert con.execute("select who, n from who").fetchall() == [(iid, 4)]


def test_scoring_tells_a_missing_prediction_from_missing_gold(tmp_path: Path) -> None:
    data = make_dbt_data(tmp_path / "data", ["shop001", "shop002"])
    gold = data / "spider2" / "spider2-dbt" / "evaluation_suite" / "gold"
    shutil.rmtree(gold / "shop002")
    predictions = tmp_path / "predictions"
    (predictions / "shop002").mkdir(parents=True)
    shutil.copyfile(gold / "shop001" / "shop.duckdb", predictions / "shop002" / "shop.duckdb")
    tasks = load_tasks("spider2-dbt", data_dir=data)
    first, second = evaluate_spider2_dbt(predictions, tasks=tasks, gold_dir=gold)
    assert first.error == "missing_prediction" and first.metrics == {"has_gold": 1.0}
    assert second.error == "gold_error" and second.metrics == {"has_gold": 0.0}
    assert with_gold_summary([first, second])["n"] == 1


@pytest.mark.slow
def test_official_dbt_tasks_count_all_68() -> None:
    dbt = require_data("spider2", "spider2-dbt")
    tasks = load_tasks("spider2-dbt", data_dir=dbt.parent.parent)
    results = evaluate_spider2_dbt(
        dbt / "no-predictions", tasks=tasks, gold_dir=dbt / "evaluation_suite" / "gold"
    )
    assert len(results) == 68
    # the public data has no gold databases: nothing is scored against gold, and says so
    assert with_gold_summary(results)["n"] == 0  # data/README: no gold .duckdb files here
    assert {r.error for r in results} == {"missing_prediction"}


def test_the_dbt_mount_is_read_only_and_shows_nothing_else(dbt_program: str) -> None:
    toolchain = find_dbt()
    assert toolchain is not None
    venv = toolchain.bin_dir.parent
    code = (
        f"touch {venv}/planted; echo touch=$?; ls {REPO / 'querybench'}; echo ls=$?; "
        "dbt --version | head -1"
    )
    with tempfile.TemporaryDirectory() as folder:  # tmp_path: closed to the sandbox uid
        result = run_shell(Path(folder), code, timeout=60, limits=Limits(), toolchain=toolchain)
    assert "touch=1" in result.output and "ls=2" in result.output, result.output
    assert not (venv / "planted").exists()
    assert "Core:" in result.output.splitlines()  # `dbt --version`'s first line (dbt 1.5+)


def test_a_single_call_bomb_on_the_dbt_database_stops_at_its_timeout(
    dbt_program: str, tmp_path: Path
) -> None:
    """The agent's SQL on its DBT database runs in a killable child, as every agent query: a
    DuckDB `repeat()` no interrupt reaches ends at the action's timeout, not minutes later."""
    data = make_dbt_data(tmp_path / "data", ["shop001"], gold=False)
    (task,) = load_tasks("spider2-dbt", data_dir=data)
    workspace = open_dbt_workspace(task, data, WorkspaceOptions(action_timeout=2))
    try:
        start = time.monotonic()
        observation = workspace.execute(
            ExecuteSQL("SELECT sum(length(repeat('x', 1000000000))) AS n FROM range(16)")
        )
        elapsed = time.monotonic() - start
        assert "timeout" in observation.lower() or "time limit" in observation.lower(), observation
        assert elapsed < 6, elapsed  # 2 s + the kill's 0.5 s grace (in process: 8 s, idle)
        assert "42" in workspace.execute(ExecuteSQL("SELECT 41 + 1 AS answer"))  # a fresh child
    finally:
        workspace.close()


def test_an_agent_that_plants_a_view_over_the_gold_scores_nothing(
    dbt_program: str, server: ScriptedServer, tmp_path: Path
) -> None:
    """`run spider2-dbt`'s scoring opens the database the agent left as `eval` does: a model
    materialized as a view over the gold file (a glob that binds empty in the sandbox, where
    no gold is) is refused, not read, in both scorings."""
    data = make_dbt_data(tmp_path / "data", ["shop001"])
    gold = data / "spider2" / "spider2-dbt" / "evaluation_suite" / "gold"
    planted = (
        "{{ config(materialized='view') }}\n"
        f"select * from read_duckdb('{gold}/*/shop.duckdb', table_name='customer_totals',"
        " allow_empty=true)\n"
    )
    server.script(
        [
            text("CreateFile", filepath="models/customer_totals.sql", code=planted),
            text("Bash", code="dbt run"),
            text("Terminate", output="shop.duckdb"),
        ]
    )
    out = tmp_path / "run"
    config = RunConfig(
        "spider2-dbt",
        "spider-agent",
        "scripted",
        out=out,
        selection=Selection(data_dir=data),
        execution=Execution(workers=1),
    )
    outcome = run(config, model=model(server))
    result = outcome.results[0]
    steps = json.loads((out / "trajectories" / "shop001.json").read_text())["steps"]
    assert "Completed successfully" in steps[1]["observation"]  # the view was built
    assert (result.official_score, result.strict_score) == (0.0, 0.0), result
    assert result.error == "bad_prediction_file", result
    assert "reaches outside its database file" in (result.message or "")
