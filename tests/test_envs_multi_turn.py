"""The multi-turn core: SQL tools on a read-only engine and the turn loop, driven through the
scripted loopback server's native tool calls."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from querybench.envs import SQLReward
from querybench.envs.multi_turn import Episode, SQLToolbox, run_episode
from querybench.envs.tasks import load_sql_tasks
from querybench.models import Message, OpenAICompatibleModel, RetryPolicy, ToolCall
from tests.conftest import require_data
from tests.openai_server import Reply, ScriptedServer

GOLD = "SELECT name FROM item WHERE price > 1"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("multi") / "shop.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE item (name TEXT, price REAL);"
        "INSERT INTO item VALUES ('a', 1), ('b', 2), ('c', 3);"
        "CREATE TABLE n (i INTEGER);"
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 500)"
        " INSERT INTO n SELECT i FROM s;"
    )
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="module")
def reward(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLReward]:
    with SQLReward(workers=1, cache_dir=tmp_path_factory.mktemp("cache"), processes=False) as r:
        yield r


def call(name: str, **args: object) -> tuple[str, str]:
    return name, json.dumps(args)


QUESTION = (Message("system", "use the tools"), Message("user", "Items over 1?"))


def episode(
    server: ScriptedServer,
    reward: SQLReward,
    db: Path,
    turns: int = 10,
    *,
    gold: str = GOLD,
    messages: tuple[Message, ...] = QUESTION,
) -> Episode:
    async def go() -> Episode:
        model = OpenAICompatibleModel(
            "m", base_url=server.url, api_key="k", retry=RetryPolicy(max_retries=0)
        )
        try:
            return await run_episode(model, reward, db, gold, messages, max_turns=turns)
        finally:
            await model.aclose()

    return asyncio.run(go())


def test_tools_observe_the_database_capped_and_truncated(db: Path) -> None:
    with SQLToolbox(db, max_rows=5, max_chars=200) as box:
        assert box.list_tables() == "item\nn"
        assert "price REAL" in box.describe_table("ITEM")
        assert box.sample_rows("item").splitlines()[1:] == ["a\t1.0", "b\t2.0", "c\t3.0"]
        big = box.execute_sql("SELECT i FROM n ORDER BY i;")
        assert big.splitlines()[1:6] == ["1", "2", "3", "4", "5"] and "more than 5" in big
        assert "truncated at 200" in box.execute_sql("SELECT group_concat(i) FROM n")
        assert box.call(ToolCall.parse("1", "execute_sql", "{oops")).startswith("error:")
        assert "unknown tool" in box.call(ToolCall.parse("1", "drop_all", "{}"))


def test_a_single_call_bomb_costs_the_tool_its_timeout(db: Path) -> None:
    # One printf call runs ~15 s without reaching SQLite's progress handler.
    with SQLToolbox(db, timeout=1.0) as box:
        start = time.monotonic()
        told = box.call(
            ToolCall.parse(
                "1", "execute_sql", json.dumps({"sql": "SELECT printf('%.*c', 2147483647, 'x')"})
            )
        )
        assert time.monotonic() - start < 1.0 + 10
        assert told.startswith("error:") and "timeout" in told
        assert box.execute_sql("SELECT count(*) FROM item").splitlines()[1:] == ["3"]


@pytest.mark.parametrize(
    "sql",
    ["DELETE FROM item", "SELECT 1; DELETE FROM item", "ATTACH 'x.sqlite' AS x",
     "PRAGMA writable_schema = 1", "SELECT * FROM (SELECT 1); DROP TABLE item"],
)  # fmt: skip
def test_execute_sql_stays_read_only(db: Path, sql: str) -> None:
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    with SQLToolbox(db) as box:
        assert box.call(ToolCall.parse("1", "execute_sql", json.dumps({"sql": sql}))).startswith(
            "error:"
        )
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_explore_then_submit_scores_one(db: Path, reward: SQLReward) -> None:
    with ScriptedServer() as server:
        server.script(
            [
                Reply("", tool_calls=(call("list_tables"), call("describe_table", table="item"))),
                Reply("", tool_calls=(call("execute_sql", sql="SELECT * FROM item"),)),
                Reply(
                    "", tool_calls=(call("submit", sql="SELECT name FROM item WHERE price >= 2"),)
                ),
            ]
        )
        result = episode(server, reward, db)
        tool_turns = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert result.outcome.reward == 1.0 and result.turns == 3
    assert "item" in tool_turns[0]["content"] and "price REAL" in tool_turns[1]["content"]


def test_wrong_submit_plain_reply_and_turn_limit(db: Path, reward: SQLReward) -> None:
    with ScriptedServer(default=Reply("", tool_calls=(call("submit", sql="SELECT 1"),))) as s:
        trivial = episode(s, reward, db)
    assert trivial.outcome.reward == 0.0 and trivial.outcome.metrics["trivial"] == 1.0
    with ScriptedServer(default=Reply(f"```sql\n{GOLD}\n```")) as s:
        assert episode(s, reward, db).outcome.reward == 1.0  # no tool call: its block counts
    with ScriptedServer(default=Reply("", tool_calls=(call("list_tables"),))) as s:
        stalled = episode(s, reward, db, turns=3)
    assert stalled.turns == 3 and stalled.submitted is None
    assert stalled.outcome.reward == 0.0 and stalled.outcome.metrics["error"] == 1.0


@pytest.mark.data
def test_spider1_in_bird_layout(tmp_path: Path, reward: SQLReward) -> None:
    spider = require_data("spider1", "concert_singer")
    (tmp_path / "dev_databases").mkdir()
    (tmp_path / "dev_databases" / "concert_singer").symlink_to(spider, target_is_directory=True)
    question = {"question_id": 1, "db_id": "concert_singer", "question": "Singers over 40?",
                "evidence": "", "SQL": "SELECT count(*) FROM singer WHERE Age > 40"}  # fmt: skip
    (tmp_path / "dev.json").write_text(json.dumps([question]))
    [task] = load_sql_tasks("bird", data_dir=tmp_path)
    with SQLToolbox(task.database) as box:
        assert "singer" in box.list_tables().split("\n")
    submit = call("submit", sql="SELECT count(*) FROM singer WHERE age > 40.0")
    with ScriptedServer(default=Reply("", tool_calls=(submit,))) as server:
        messages = (Message("user", task.prompt),)
        result = episode(server, reward, task.database, gold=task.gold_sql, messages=messages)
    assert result.outcome.reward == 1.0


def test_spider2_lite_local_tasks(reward: SQLReward) -> None:
    require_data("spider2-lite-local")
    tasks = {t.task.instance_id: t for t in load_sql_tasks("spider2-lite", budget=4000)}
    # Only local tasks whose rebuilt database and gold SQL are both here; never a cloud task.
    assert tasks and all(i.startswith("local") for i in tasks)
    task = tasks.get("local022") or next(iter(tasks.values()))
    with SQLToolbox(task.database) as box:
        assert box.list_tables().strip()
    submit = call("submit", sql=task.gold_sql)
    with ScriptedServer(default=Reply("", tool_calls=(call("list_tables"),))) as server:
        server.script(
            [Reply("", tool_calls=(call("list_tables"),)), Reply("", tool_calls=(submit,))]
        )
        messages = (Message("user", task.prompt),)
        result = episode(server, reward, task.database, gold=task.gold_sql, messages=messages)
    assert result.outcome.reward == 1.0 and result.turns == 2
    wrong = reward.score_sql(task.database, task.gold_sql, "SELECT 1")
    assert wrong.reward == 0.0
