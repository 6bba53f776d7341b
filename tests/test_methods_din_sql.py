"""din-sql through the scripted server: one documented prompt per stage (golden file), the
label and links parsed, self-correction applied, and every stage accounted in a run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from querybench.methods import MethodSettings, get_method
from querybench.methods.din_sql import EASY, NESTED, NON_NESTED, parse_label, parse_links
from querybench.models import Sampling
from querybench.runs.config import RunConfig, Selection
from querybench.runs.runner import run
from tests.methods_fixture import QUESTIONS, check_golden, make_data, model, sent_prompts, task
from tests.openai_server import Reply, ScriptedServer

NESTED_SQL = (
    "WITH top AS (SELECT id FROM items ORDER BY price DESC LIMIT 1)\n"
    "SELECT s.city FROM sales AS x JOIN shops AS s ON x.shop_id = s.id "
    "WHERE x.item_id = (SELECT id FROM top)"
)


@pytest.fixture()
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    return make_data(tmp_path / "data")


def test_four_stages_match_golden_and_correction_wins(data: Path) -> None:
    settings = MethodSettings(Sampling(temperature=0.0), context_budget=16000, data_dir=data)
    with ScriptedServer() as server:
        server.script(
            [
                Reply(
                    "The question needs prices and cities.\n"
                    "Schema_links: [items.price, items.id = sales.item_id,\n"
                    " sales.shop_id = shops.id, shops.city]",
                    100,
                    30,
                ),
                Reply(
                    'It needs the most expensive item first: a nested query.\nLabel: "NESTED"',
                    110,
                    12,
                ),
                Reply(
                    f"Sub-question: the most expensive item.\n```sql\n{NESTED_SQL}\n```", 120, 60
                ),
                Reply(f"```sql\n{QUESTIONS[2][1]}\n```", 130, 40),
            ]
        )
        output = asyncio.run(get_method("din-sql").solve(task(data, 2), model(server), settings))
        text = sent_prompts(server, output.extra["stages"])
    check_golden("din_sql_prompts.txt", text)
    stages = [s["stage"] for s in output.extra["stages"]]
    assert stages == ["schema_linking", "classification", "generation", "self_correction"]
    assert output.extra["difficulty_class"] == NESTED
    assert output.extra["schema_links"].startswith("[items.price, items.id = sales.item_id, ")
    assert NESTED_SQL in text  # the generated SQL is what self-correction is asked to fix
    (candidate,) = output.candidates
    assert candidate.sql == QUESTIONS[2][1]
    usage = candidate.completion.usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (460, 142)
    assert candidate.completion.attempts == 4


def test_correction_without_sql_keeps_the_generated_query(data: Path) -> None:
    settings = MethodSettings(Sampling(), data_dir=data)
    with ScriptedServer() as server:
        server.script(
            [
                Reply("no links"),
                Reply("EASY"),
                Reply("```sql\nSELECT 1\n```"),
                Reply("```text\nlooks fine\n```"),
            ]
        )
        output = asyncio.run(get_method("din-sql").solve(task(data, 0), model(server), settings))
    assert output.extra["schema_links"] == "no links"
    assert output.candidates[0].sql == "SELECT 1"
    assert output.candidates[0].reply == "```text\nlooks fine\n```"  # raw final reply kept


def test_label_and_links_parsing() -> None:
    assert parse_label('so NESTED? no.\nLabel: "NON-NESTED"') == NON_NESTED
    # no label: the reply is read as SQL (what the oracle answers) and classified by shape
    assert parse_label("```sql\nSELECT a FROM t WHERE b IN (SELECT c FROM u)\n```") == NESTED
    assert parse_label("SELECT a FROM t JOIN u ON t.x = u.y") == NON_NESTED
    assert parse_label("SELECT count(*) FROM t") == EASY
    assert parse_links("Schema_links: [a]\n... Schema_links: [t.a, t.b]") == "[t.a, t.b]"


def test_run_accounts_every_stage(data: Path, tmp_path: Path) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        system = body["messages"][0]["content"]
        user = body["messages"][-1]["content"]
        question = user.split('Q: "', 1)[1].split('"', 1)[0] if 'Q: "' in user else ""
        if "FIXED SQL QUERY" in user:
            question = user.split("#### Question: ", 1)[1].split("\n", 1)[0]
            return Reply(f"```sql\n{dict(QUESTIONS)[question]}\n```", 50, 10)
        if system.startswith("For the given question, classify"):
            return Reply('Label: "EASY"', 50, 10)
        if "Schema_links: [" in system:
            return Reply("Schema_links: [items.name]", 50, 10)
        return Reply("```sql\nSELECT 1\n```", 50, 10)

    with ScriptedServer(default=answer) as server:
        config = RunConfig(
            "spider1",
            "din-sql",
            "scripted",
            out=tmp_path / "run",
            selection=Selection(data_dir=data),
        )
        outcome = run(config, model=model(server))
        assert len(server.requests) == 12
    assert outcome.summary["correct"] == 3
    assert outcome.summary["tokens"] == {"prompt": 600, "completion": 120, "total": 720}
    record = outcome.records["1"]
    assert [s["stage"] for s in record.extra["stages"]][-1] == "self_correction"
    assert record.sql == QUESTIONS[1][1]
