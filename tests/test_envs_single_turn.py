"""The verifiers single-turn taskset, scored on replies from the scripted loopback server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

vf = pytest.importorskip("verifiers.v1")

from querybench.envs.single_turn import SQLTask, load_environment  # noqa: E402
from tests.conftest import require_data  # noqa: E402
from tests.openai_server import Reply, ScriptedServer  # noqa: E402


def rollout(server: ScriptedServer, task: SQLTask) -> Any:
    """One single-turn rollout as a harness runs it: the prompt out, the reply scored."""
    messages = [
        {"role": "system", "content": task.data.system_prompt},
        {"role": "user", "content": task.data.prompt},
    ]
    body = {"model": "scripted", "messages": messages}
    response = httpx.post(f"{server.url}/chat/completions", json=body, timeout=10)
    reply = response.json()["choices"][0]["message"]["content"]
    trace = vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data),
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        root_reply=reply,
    )
    asyncio.run(task.score(trace))
    return trace


def scores(trace: Any) -> tuple[float, dict[str, float]]:
    return trace.rewards["execution_match"].score, dict(trace.metrics)


@pytest.mark.data
def test_spider1_gold_wrong_noblock_trivial() -> None:
    require_data("spider1", "concert_singer")
    tasks = list(load_environment(benchmark="spider1", num_tasks=4, budget=2000))
    assert len(tasks) == 4 and "Question:" in tasks[0].data.prompt
    gold = {t.data.prompt: t.data.gold_sql for t in tasks}
    replies = iter(["gold", "wrong", "prose", "trivial"])

    def respond(body: dict[str, Any]) -> Reply:
        kind = next(replies)
        sql = gold[body["messages"][-1]["content"]]
        return Reply(
            {
                "gold": f"Here it is:\n```sql\n{sql}\n```",
                "wrong": "```sql\nSELECT name FROM singer WHERE 0\n```",
                "prose": "I think the answer is six.",
                "trivial": "```sql\nSELECT 1\n```",
            }[kind]
        )

    with ScriptedServer(default=respond) as server:
        results = [scores(rollout(server, task)) for task in tasks]
    assert results[0] == (1.0, {"error": 0.0, "trivial": 0.0, "gold_error": 0.0})
    assert results[1][0] == 0.0 and results[1][1]["error"] == 0.0
    assert results[2] == (0.0, {"error": 1.0, "trivial": 0.0, "gold_error": 0.0})
    assert results[3][0] == 0.0 and results[3][1]["trivial"] == 1.0


@pytest.mark.data
def test_bird_layout_with_evidence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spider = require_data("spider1", "concert_singer")
    (tmp_path / "dev_databases").mkdir()
    (tmp_path / "dev_databases" / "concert_singer").symlink_to(spider, target_is_directory=True)
    question = {
        "question_id": 7,
        "db_id": "concert_singer",
        "question": "How many singers are older than 40?",
        "evidence": "older than 40 refers to Age > 40",
        "SQL": "SELECT count(*) FROM singer WHERE Age > 40",
        "difficulty": "simple",
    }
    (tmp_path / "dev.json").write_text(json.dumps([question]))
    monkeypatch.setenv("BIRD_DIR", str(tmp_path))
    [task] = list(load_environment(benchmark="bird"))
    assert "Age > 40" in task.data.prompt and task.data.id == "bird/7"
    answer = "```sql\nSELECT count(*) FROM singer WHERE age > 40.0\n```"
    with ScriptedServer(default=Reply(answer)) as server:
        assert scores(rollout(server, task))[0] == 1.0


def test_custom_taskset_and_first_block_only(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript("CREATE TABLE item (name TEXT); INSERT INTO item VALUES ('a');")
    conn.commit()
    conn.close()
    tasks_file = tmp_path / "tasks.jsonl"
    entry = {"id": "q1", "question": "Item names?", "database": "shop.sqlite",
             "gold_sql": "SELECT name FROM item"}  # fmt: skip
    tasks_file.write_text(json.dumps(entry) + "\n")
    [task] = list(load_environment(benchmark="custom", path=tasks_file))
    two_blocks = "```sql\nSELECT 'b'\n```\nor rather\n```sql\nSELECT name FROM item\n```"
    with ScriptedServer(default=Reply(two_blocks)) as server:
        assert scores(rollout(server, task))[0] == 0.0
    with ScriptedServer(default=Reply("```sql\nSELECT name FROM item;\n```")) as server:
        assert scores(rollout(server, task))[0] == 1.0


def test_vf_eval_resolves_the_packaged_taskset() -> None:
    pytest.importorskip("querybench_sql")
    from verifiers.v1.utils.loaders import taskset_class

    assert taskset_class("querybench-sql").__name__ == "SQLTaskset"
