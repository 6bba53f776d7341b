"""chess through the scripted server: the filtering, generation and revision prompts (golden
file), revision from real execution feedback, and selection by execution result."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from querybench.methods import MethodSettings, get_method
from querybench.models import Sampling
from querybench.runs.config import RunConfig, Selection
from querybench.runs.runner import run
from tests.methods_fixture import check_golden, make_data, model, sent_prompts, task
from tests.openai_server import Reply, ScriptedServer


@pytest.fixture()
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    return make_data(tmp_path / "data")


def test_filter_generate_revise_match_golden(data: Path) -> None:
    settings = MethodSettings(Sampling(temperature=0.0), context_budget=16000, data_dir=data)
    with ScriptedServer() as server:
        server.script(
            [
                Reply("```text\nitems\n```", 200, 5),
                Reply("```sql\nSELECT nme FROM items WHERE price < 5\n```", 100, 15),
                Reply(
                    "The column is `name`.\n```sql\nSELECT name FROM items WHERE price < 5\n```",
                    150,
                    20,
                ),
            ]
        )
        output = asyncio.run(get_method("chess").solve(task(data, 1), model(server), settings))
        text = sent_prompts(server, output.extra["stages"])
    check_golden("chess_prompts.txt", text)
    assert [s["stage"] for s in output.extra["stages"]] == [
        "schema_filtering",
        "generation",
        "revision",
    ]
    assert output.extra["tables"] == ["items"]
    generation = text.split("##### stage: generation")[1].split("##### stage: revision")[0]
    assert "CREATE TABLE items" in generation and "shops" not in generation
    ((first, second),) = output.extra["execution"]
    assert first["status"] == "error" and "nme" in first["message"]
    assert second["status"] == "ok"
    (candidate,) = output.candidates
    assert candidate.sql == "SELECT name FROM items WHERE price < 5"
    assert candidate.reply.startswith("The column is")
    assert candidate.completion.usage.prompt_tokens == 450


def test_majority_by_execution_after_revising_empty_results(data: Path) -> None:
    replies = iter(
        [
            "SELECT name FROM items WHERE price > 100",  # empty: revised
            "SELECT name FROM items WHERE price < 4.5",
            "SELECT name FROM items WHERE price < 3.5",
        ]
    )
    revisions: list[str] = []

    def answer(body: dict[str, Any]) -> Reply:
        system = body["messages"][0]["content"]
        user = body["messages"][-1]["content"]
        if "selecting the part of a database schema" in system:
            return Reply("items, and nothing else")
        if "Feedback:" in user:
            revisions.append(user)
            return Reply("```sql\nSELECT name FROM items WHERE price <= 4\n```")
        return Reply(f"```sql\n{next(replies)}\n```")

    settings = MethodSettings(Sampling(temperature=0.8), n=3, data_dir=data)
    with ScriptedServer(default=answer) as server:
        output = asyncio.run(get_method("chess").solve(task(data, 1), model(server), settings))
        assert len(server.requests) == 1 + 3 + 1
    assert len(revisions) == 1 and "returned no rows" in revisions[0]
    # {pen, cup} twice (one of them revised) against {pen} once
    assert output.candidates[0].sql in (
        "SELECT name FROM items WHERE price < 4.5",
        "SELECT name FROM items WHERE price <= 4",
    )
    assert output.extra["candidate_order"][0] == output.extra["selected"]


def test_unknown_tables_keep_the_whole_context_and_oracle_runs(data: Path, tmp_path: Path) -> None:
    with ScriptedServer(default=Reply("```sql\nSELECT 1\n```")) as server:
        settings = MethodSettings(Sampling(), data_dir=data)
        output = asyncio.run(get_method("chess").solve(task(data, 0), model(server), settings))
    assert sorted(output.extra["tables"]) == ["items", "sales", "shops"]
    config = RunConfig(
        "spider1", "chess", "oracle", out=tmp_path / "oracle", selection=Selection(data_dir=data)
    )
    assert run(config).summary["correct"] == 3
