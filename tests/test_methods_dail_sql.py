"""dail-sql through the scripted server: the documented prompts (golden file), the example
selection by masked question and skeleton similarity, and the replies parsed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from querybench.errors import DataError
from querybench.methods import MethodSettings, get_method
from querybench.methods.dail_sql import DailSql
from querybench.methods.examples import (
    Example,
    ExamplePool,
    get_pool,
    mask_question,
    skeleton_similarity,
    sql_skeleton,
)
from querybench.models import Sampling
from tests.methods_fixture import check_golden, make_data, model, sent_prompts, task
from tests.openai_server import Reply, ScriptedServer


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return make_data(tmp_path / "data")


def test_prompts_match_golden_and_skeleton_reorders_examples(data: Path) -> None:
    pool = str(data / "pool.jsonl")
    settings = MethodSettings(
        Sampling(temperature=0.0), context_budget=16000, data_dir=data, examples=pool
    )
    with ScriptedServer() as server:
        server.script(
            [
                Reply("```sql\nSELECT count(*) FROM items\n```", 300, 12),
                Reply(
                    "Here it is:\n```sql\nSELECT name FROM items WHERE price < 5.0\n```", 310, 14
                ),
            ]
        )
        output = asyncio.run(DailSql(shots=2).solve(task(data, 1), model(server), settings))
        text = sent_prompts(server, output.extra["stages"])
    check_golden("dail_sql_prompts.txt", text)
    assert [s["stage"] for s in output.extra["stages"]] == ["preliminary", "generation"]
    (candidate,) = output.candidates
    assert candidate.sql == "SELECT name FROM items WHERE price < 5.0"
    assert candidate.reply.startswith("Here it is:")  # the raw reply is kept
    usage = candidate.completion.usage  # both calls are accounted on the candidate
    assert (usage.prompt_tokens, usage.completion_tokens) == (610, 26)
    # by masked question alone, "List the names of <mask> ... <value>" questions come first;
    # the preliminary draft's skeleton (SELECT count(_) FROM _) then lifts the counting example
    first, second = text.split("##### stage: generation")
    assert "older than 30" in first and "How many singers" not in first
    assert second.index("How many singers") < second.index("older than 30")
    assert output.extra["examples"] == [
        "How many singers are there?",
        "List the names of singers older than 30.",
    ]


def test_same_examples_after_reselection_reuse_the_preliminary_reply(data: Path) -> None:
    pool = [Example("How many singers are there?", "SELECT count(*) FROM singer")]
    path = data / "one.json"
    path.write_text(
        '[{"question": "How many singers are there?", "query": "SELECT count(*) FROM singer"}]'
    )
    settings = MethodSettings(Sampling(), data_dir=data, examples=str(path))
    with ScriptedServer(default=Reply("```sql\nSELECT count(*) FROM items\n```")) as server:
        output = asyncio.run(get_method("dail-sql").solve(task(data, 0), model(server), settings))
        assert len(server.requests) == 1
    assert output.extra["examples"] == [pool[0].question]
    assert output.candidates[0].sql == "SELECT count(*) FROM items"


def test_without_pool_one_call_per_candidate(data: Path) -> None:
    settings = MethodSettings(Sampling(temperature=0.7), n=2, data_dir=data)
    with ScriptedServer(default=Reply("SELECT 1")) as server:
        output = asyncio.run(get_method("dail-sql").solve(task(data, 0), model(server), settings))
        assert len(server.requests) == 2
        body = server.requests[0]["messages"][1]["content"]
    assert "Some SQL examples" not in body and "CREATE TABLE items (" in body
    assert [c.sql for c in output.candidates] == ["SELECT 1", "SELECT 1"]  # whole reply as SQL


def test_masking_and_skeletons() -> None:
    masked = mask_question("List the names of items cheaper than 5 in 'Lyon'.", {"name", "item"})
    assert masked == [
        "list",
        "the",
        "<mask>",
        "of",
        "<mask>",
        "cheaper",
        "than",
        "<value>",
        "in",
        "<value>",
    ]
    assert sql_skeleton("SELECT T1.name FROM a AS T1 WHERE x > 3 AND y = 'b';") == [
        "select",
        "_",
        "from",
        "_",
        "as",
        "_",
        "where",
        "_",
        ">",
        "_",
        "and",
        "_",
        "=",
        "_",
    ]
    assert skeleton_similarity("SELECT a FROM t WHERE b < 1", "SELECT c FROM u WHERE d < 'x'") == 1


def test_pool_excludes_the_task_itself_and_its_question() -> None:
    pool = ExamplePool(
        [
            Example("How many items are there?", "SELECT count(*) FROM items", "spider1:0"),
            Example("How many items?", "SELECT count(*) FROM items", "spider1:7"),
            Example("How many singers are there?", "SELECT count(*) FROM singer", "spider1:9"),
        ]
    )
    picked = pool.select("How many items are there?", {"item"}, 5, exclude="spider1:7")
    assert [e.key for e in picked] == ["spider1:9"]


def test_pool_from_benchmark_and_bad_specs(data: Path) -> None:
    assert len(get_pool("spider1", data).examples) == 3
    with pytest.raises(DataError, match="neither"):
        get_pool("no-such-pool", data)
    bad = data / "bad.jsonl"
    bad.write_text('{"question": "q"}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:1: an example needs"):
        get_pool(str(bad), data)
