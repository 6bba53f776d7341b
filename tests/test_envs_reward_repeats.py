"""Answers repeated to the byte are run once per call (`envs/repeats.py`), and only those."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from querybench.envs import RewardItem, SQLReward
from querybench.envs.match import RewardOutcome
from querybench.envs.repeats import fan_out, unique_items
from querybench.evaluation.verdict import Verdict

GOLD = "SELECT name FROM t WHERE x > 1"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("repeats") / "fixture.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE t (name TEXT, x INTEGER); INSERT INTO t VALUES ('a', 1), ('b', 2), ('c', 3);"
    )
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="module", params=[True, False], ids=["processes", "threads"])
def reward(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SQLReward]:
    cache = tmp_path_factory.mktemp("cache")
    with SQLReward(workers=2, cache_dir=cache, processes=request.param) as r:
        yield r


def sql(text: str) -> str:
    return f"reasoning\n```sql\n{text}\n```"


class Sent:
    """Counts the items the reward hands to its workers (or its thread pool's answers)."""

    def __init__(self, reward: SQLReward, monkeypatch: pytest.MonkeyPatch) -> None:
        self.items: list[object] = []
        if reward.processes:
            send = reward._batch

            def batch(items: list[tuple[str, str, str | None]]) -> object:
                self.items += items
                return send(items)

            monkeypatch.setattr(reward, "_batch", batch)
        else:
            answer = reward._answer

            def one(database: object, text: str, gold: object) -> object:
                self.items.append(text)
                return answer(database, text, gold)  # type: ignore[arg-type]

            monkeypatch.setattr(reward, "_answer", one)


def test_a_repeated_answer_runs_once_and_each_copy_gets_its_own_outcome(
    reward: SQLReward, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = Sent(reward, monkeypatch)
    answers = [GOLD, "SELECT name FROM t", GOLD, GOLD, "SELECT name FROM t"]
    # The completions differ (the reasoning above the block); the SQL is the same.
    items = [RewardItem(db, GOLD, f"try {i}\n" + sql(a)) for i, a in enumerate(answers)]
    outcomes = reward.score_many(items)
    assert [o.reward for o in outcomes] == [1.0, 0.0, 1.0, 1.0, 0.0]
    assert len(sent.items) == 2
    assert outcomes[0] == outcomes[2] and outcomes[0] is not outcomes[2]
    outcomes[0].metrics["error"] = 9.0  # a caller may change its own metrics
    assert outcomes[2].metrics["error"] == 0.0


@pytest.mark.parametrize(
    "first, second",
    [
        ("SELECT name FROM t", "SELECT name  FROM t"),  # spacing: two queries
        ("SELECT name FROM t", "-- one\nSELECT name FROM t"),  # a comment: two queries
        ("SELECT random() FROM t", "SELECT random() FROM t"),  # a random draw each
        ("SELECT hex(RANDOMBLOB(4))", "SELECT hex(RANDOMBLOB(4))"),
    ],
)
def test_only_the_same_deterministic_text_is_shared(
    reward: SQLReward, db: Path, monkeypatch: pytest.MonkeyPatch, first: str, second: str
) -> None:
    sent = Sent(reward, monkeypatch)
    reward.score_many([RewardItem(db, GOLD, sql(first)), RewardItem(db, GOLD, sql(second))])
    assert len(sent.items) == 2


def test_the_same_answer_on_another_gold_or_database_is_not_shared(
    reward: SQLReward, db: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(db.read_bytes())
    sent = Sent(reward, monkeypatch)
    items = [
        RewardItem(db, GOLD, sql(GOLD)),
        RewardItem(db, "SELECT name FROM t", sql(GOLD)),
        RewardItem(copy, GOLD, sql(GOLD)),
    ]
    assert [o.reward for o in reward.score_many(items)] == [1.0, 0.0, 1.0]
    assert len(sent.items) == 3


def test_each_call_runs_its_own_answers(
    reward: SQLReward, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = Sent(reward, monkeypatch)
    items = [RewardItem(db, GOLD, sql(GOLD))] * 3
    reward.score_many(items)
    reward.score_many(items)
    assert len(sent.items) == 2  # nothing kept from one call to the next


def test_concurrent_ascore_repeats_share_one_run(
    reward: SQLReward, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = Sent(reward, monkeypatch)

    async def rollouts() -> list[float]:
        calls = [reward.ascore(db, GOLD, f"r{i}\n" + sql(GOLD)) for i in range(16)]
        outcomes = await asyncio.gather(*calls)
        assert len({id(o) for o in outcomes}) == 16 and len({id(o.metrics) for o in outcomes}) == 16
        return [o.reward for o in outcomes]

    assert asyncio.run(rollouts()) == [1.0] * 16
    assert len(sent.items) == (1 if reward.processes else 16)


def test_a_repeat_outlives_the_cancelled_first_call(db: Path, tmp_path: Path) -> None:
    with SQLReward(workers=1, cache_dir=tmp_path) as reward:

        async def rollouts() -> float:
            first = asyncio.ensure_future(reward.ascore(db, GOLD, sql(GOLD)))
            await asyncio.sleep(0)  # the first call is waiting for its batch
            second = asyncio.ensure_future(reward.ascore(db, GOLD, sql(GOLD)))
            await asyncio.sleep(0)
            first.cancel()
            return (await second).reward

        assert asyncio.run(rollouts()) == 1.0


def test_unique_items_and_fan_out_keep_the_order() -> None:
    work = [("d", "g", "a"), ("d", "g", "b"), ("d", "g", "a"), ("d", "g", None), ("d", "g", None)]
    unique, where = unique_items(work)
    assert unique == [("d", "g", "a"), ("d", "g", "b"), ("d", "g", None), ("d", "g", None)]
    assert where == [0, 1, 0, 2, 3]
    outcomes = [RewardOutcome(float(i), Verdict.ok(), {"error": 0.0}) for i in range(4)]
    fanned = fan_out(outcomes, where)
    assert [o.reward for o in fanned] == [0.0, 1.0, 0.0, 2.0, 3.0]
    assert fanned[0] is outcomes[0] and fanned[2] == outcomes[0] and fanned[2] is not outcomes[0]
