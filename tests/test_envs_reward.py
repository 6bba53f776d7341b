"""The RL reward core: BIRD execution match, its metrics, and reward-hacking attempts."""

from __future__ import annotations

import asyncio
import hashlib
import json
import pickle
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from querybench.engines.base import FETCH_CHUNK, Result, Sink
from querybench.engines.sqlite import SQLiteEngine
from querybench.engines.supervisor import Supervisor
from querybench.engines.timeouts import wall_cap
from querybench.envs import RewardItem, SQLReward, answer_sql, execution_match, sql_workers
from querybench.envs.match import run_answer
from querybench.errors import EngineError, QueryTimeout
from querybench.evaluation.bird.evaluate import (
    StreamedMatch,
    bird_result_match,
    bird_stream_match,
    is_trivial_result,
)
from tests.conftest import require_data

GOLD = "SELECT name FROM t WHERE x > 1"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("envs") / "fixture.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE t (name TEXT, x INTEGER, r REAL);"
        "INSERT INTO t VALUES ('a', 1, 1.0), ('b', 2, 2.0), ('c', 3, 3.0), ('c', 3, 3.0);"
        "CREATE TABLE big (i INTEGER); INSERT INTO big VALUES (1), (2), (3);"
    )
    conn.commit()
    conn.close()
    other = path.parent / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.executescript("CREATE TABLE secret (name TEXT); INSERT INTO secret VALUES ('b'), ('c');")
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="module")
def reward(tmp_path_factory: pytest.TempPathFactory) -> SQLReward:
    cache = tmp_path_factory.mktemp("cache")
    with SQLReward(workers=2, answer_timeout=1.0, cache_dir=cache) as r:
        yield r


def sql(text: str) -> str:
    return f"```sql\n{text}\n```"


def test_execution_match_is_the_bird_set_rule() -> None:
    gold = Result(("a",), [(1,), (2,)])
    assert execution_match(gold, Result(("b",), [(2.0,), (1,), (1,)])).reward == 1.0
    wrong = execution_match(gold, Result(("a",), [(1,)]))
    assert wrong.reward == 0.0 and wrong.verdict.error == "wrong_result"
    assert wrong.metrics == {"error": 0.0, "trivial": 1.0, "gold_error": 0.0}
    failed_gold = execution_match(EngineError("boom"), Result(("a",), [(1,)]))
    assert failed_gold.reward == 0.0 and failed_gold.metrics["gold_error"] == 1.0
    none = execution_match(gold, None)
    assert none.reward == 0.0 and none.metrics["error"] == 1.0


def test_answer_sql_takes_the_first_fenced_block_only() -> None:
    assert answer_sql("SELECT 1") is None  # no fence: prose is never run as SQL
    assert answer_sql("x\n```sql\nSELECT 2\n```\n```sql\nSELECT 3\n```") == "SELECT 2"
    assert answer_sql("```python\nprint()\n```") is None


@pytest.mark.parametrize(
    "reply",
    [
        "```\nSELECT 1\n```",  # a bare block is not a ```sql block
        "```sqlite\nSELECT 1\n```",
        "```\nSELECT 1\n```\n```python\nx = 1\n```",
    ],
)
def test_only_a_sql_block_is_an_answer(reply: str) -> None:
    assert answer_sql(reply) is None


def test_prose_above_the_block_with_backticks_in_it_is_skipped() -> None:
    reasoning = "Think: a ``` inside a line opens nothing.\n" * 50
    assert answer_sql(reasoning + "```sql\nSELECT 2\n```\nso 2.") == "SELECT 2"
    assert answer_sql("x ```sql\nSELECT 1\n```") is None  # mid-line: not a fence
    assert answer_sql("see ``` here\n  ```sql\nSELECT 3\n  ```") == "SELECT 3"


def test_the_first_sql_block_wins_over_an_earlier_bare_one() -> None:
    assert answer_sql("```\nSELECT 1\n```\n```SQL\nSELECT 2\n```\n```sql\nSELECT 3\n```") == (
        "SELECT 2"
    )


def test_a_question_blind_answer_is_trivial_whatever_its_row_count(
    reward: SQLReward, db: Path
) -> None:
    # Many rows of one 0 collapse, as a set, into the gold's single 0: it scores 1 (BIRD's
    # rule, unchanged) and is flagged trivial, on the streamed path too.
    blind = reward.score(db, "SELECT count(*) FROM t WHERE x > 5", sql("SELECT 0 FROM big"))
    assert blind.reward == 1.0 and blind.metrics["trivial"] == 1.0
    missed = reward.score(db, GOLD, sql("SELECT NULL FROM big"))
    assert missed.reward == 0.0 and missed.metrics["trivial"] == 1.0
    assert (
        reward.score(db, GOLD, sql("SELECT 0 FROM big UNION ALL SELECT 1")).metrics["trivial"]
        == 0.0
    )
    real = reward.score(db, "SELECT x FROM t", sql("SELECT x FROM t"))
    assert real.reward == 1.0 and real.metrics["trivial"] == 0.0


def test_gold_scores_one_wrong_zero_and_metrics(reward: SQLReward, db: Path) -> None:
    assert reward.score(db, GOLD, sql("SELECT name FROM t WHERE x >= 2")).reward == 1.0
    # 1 vs 1.0, order and duplicates do not matter
    assert reward.score(db, "SELECT x FROM t", sql("SELECT r FROM t ORDER BY r DESC")).reward == 1
    wrong = reward.score(db, GOLD, sql("SELECT name FROM t"))
    assert wrong.reward == 0.0 and wrong.metrics["error"] == 0.0
    no_block = reward.score(db, GOLD, "the answer is b and c")
    assert no_block.reward == 0.0 and no_block.metrics["error"] == 1.0
    trivial = reward.score(db, GOLD, sql("SELECT 1"))
    assert trivial.reward == 0.0 and trivial.metrics["trivial"] == 1.0
    failing = reward.score(db, GOLD, sql("SELECT nope FROM t"))
    assert failing.metrics["error"] == 1.0
    gold_error = reward.score(db, "SELECT nope FROM t", sql("SELECT 1"))
    assert gold_error.reward == 0.0 and gold_error.metrics["gold_error"] == 1.0


@pytest.mark.parametrize(
    "answer",
    [
        # only the first block counts
        "```sql\nSELECT 1\n```\n```sql\nSELECT name FROM t WHERE x > 1\n```",
        sql("SELECT 1; SELECT name FROM t WHERE x > 1"),
        sql("SELECT name FROM t WHERE x > 1; DROP TABLE t"),
        sql("ATTACH DATABASE '{other}' AS o"),
        sql("SELECT name FROM o.secret"),
        sql("PRAGMA writable_schema = 1"),
        sql("SELECT load_extension('fileio')"),
        sql("SELECT readfile('{other}')"),
        sql("SELECT name FROM pragma_table_info('t')"),
        sql("VACUUM INTO '/tmp/querybench-stolen.sqlite'"),
    ],
)
def test_hacks_earn_nothing(reward: SQLReward, db: Path, answer: str) -> None:
    answer = answer.replace("{other}", str(db.parent / "other.sqlite"))
    assert reward.score(db, GOLD, answer).reward == 0.0


def test_a_writing_answer_changes_nothing(reward: SQLReward, db: Path) -> None:
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    for statement in (
        "DELETE FROM t",
        "UPDATE t SET name = 'z'",
        "INSERT INTO t VALUES ('q', 9, 9.0)",
        "CREATE TABLE x (a)",
        "DROP TABLE t",
        "WITH d AS (SELECT 1) DELETE FROM t",
        "REPLACE INTO t VALUES ('q', 9, 9.0)",
    ):
        outcome = reward.score(db, GOLD, sql(statement))
        assert outcome.reward == 0.0 and outcome.metrics["error"] == 1.0, statement
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert reward.score(db, GOLD, sql(GOLD)).reward == 1.0


def test_an_endless_answer_times_out_while_others_flow(reward: SQLReward, db: Path) -> None:
    endless = sql(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
    )
    result: dict[str, object] = {}
    start = time.monotonic()
    worker = threading.Thread(target=lambda: result.update(o=reward.score(db, GOLD, endless)))
    worker.start()
    quick = [reward.score(db, GOLD, sql(GOLD)).reward for _ in range(50)]
    served_meanwhile = worker.is_alive()  # the other worker kept serving, not queued behind it
    worker.join(10)
    outcome = result["o"]
    assert quick == [1.0] * 50 and served_meanwhile
    assert outcome.reward == 0.0 and outcome.verdict.error == "timeout"  # type: ignore[attr-defined]
    # Its timeout is CPU time: on a loaded machine many wall seconds, at most the wall cap.
    assert 0.9 < time.monotonic() - start < wall_cap(1.0) + 5


@pytest.mark.parametrize("processes", [True, False])
def test_a_single_call_bomb_costs_its_timeout_on_both_paths(
    db: Path, tmp_path: Path, processes: bool
) -> None:
    # One printf call runs ~15 s without reaching SQLite's progress handler: it used to take
    # that long at a 1 s timeout and score wrong_result.
    bomb = sql("SELECT printf('%.*c', 2147483647, 'x')")
    with SQLReward(workers=1, answer_timeout=1.0, cache_dir=tmp_path, processes=processes) as r:
        assert r.score(db, GOLD, sql(GOLD)).reward == 1.0  # workers started, gold known
        start = time.monotonic()
        outcome = r.score(db, GOLD, bomb)
        assert time.monotonic() - start < wall_cap(1.0) + 10  # 1 s of CPU time, or the cap
        assert (outcome.reward, outcome.verdict.error) == (0.0, "timeout")
        assert outcome.metrics["error"] == 1.0
        assert r.score(db, GOLD, sql(GOLD)).reward == 1.0  # the worker serves on


def test_gold_is_computed_once(db: Path, tmp_path: Path) -> None:
    with SQLReward(workers=1, cache_dir=tmp_path) as first:
        assert first.score(db, GOLD, sql(GOLD)).reward == 1.0
        assert first.gold(db, GOLD) is first.gold(db, GOLD)
    with SQLReward(workers=1, cache_dir=tmp_path) as second:  # from the disk cache
        gold = second.gold(db, GOLD)
        assert isinstance(gold, Result) and gold.extra.get("cached") is True


def test_workers_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYBENCH_SQL_WORKERS", "3")
    assert sql_workers() == 3
    monkeypatch.delenv("QUERYBENCH_SQL_WORKERS")
    assert sql_workers() >= 1
    monkeypatch.setenv("QUERYBENCH_SQL_WORKERS", "zero")
    with pytest.raises(ValueError):
        sql_workers()


def test_processes_and_threads_agree_batch_by_batch(db: Path, tmp_path: Path) -> None:
    from querybench.envs import RewardItem

    answers = [GOLD, "SELECT name FROM t", "SELECT 1; SELECT 2", "DELETE FROM t", "SELECT nope"]
    items = [RewardItem(db, GOLD, sql(a)) for a in answers] + [RewardItem(db, GOLD, "prose")]
    outcomes = {}
    for processes in (True, False):
        with SQLReward(workers=2, cache_dir=tmp_path, processes=processes, batch_size=2) as r:
            outcomes[processes] = [(o.reward, o.metrics) for o in r.score_many(items)]
    assert outcomes[True] == outcomes[False]
    assert [reward for reward, _ in outcomes[True]] == [1.0, 0, 0, 0, 0, 0]


def test_concurrent_ascore_calls_travel_in_few_batches(reward: SQLReward, db: Path) -> None:
    import asyncio

    kinds = [GOLD, "SELECT name FROM t", "DELETE FROM t", "SELECT nope"]
    # Each text its own (a repeat in flight would take the first one's outcome, not travel).
    answers = [f"-- rollout {i}\n{kinds[i % 4]}" for i in range(100)]
    sizes: list[int] = []
    send = reward._batch

    def counted(items: list[tuple[str, str, str | None]]) -> object:
        sizes.append(len(items))
        return send(items)

    async def rollouts() -> list[float]:
        outcomes = await asyncio.gather(*(reward.ascore(db, GOLD, sql(a)) for a in answers))
        late = await reward.ascore(db, GOLD, sql(GOLD))  # a lone call is not held back
        return [o.reward for o in outcomes] + [late.reward]

    reward._batch = counted  # type: ignore[method-assign,assignment]
    try:
        rewards = asyncio.run(rollouts())
    finally:
        del reward._batch
    assert rewards == [1.0, 0.0, 0.0, 0.0] * 25 + [1.0]
    assert sum(sizes) == 101 and len(sizes) <= 8 and sizes[-1] == 1


def test_score_many_sends_a_batch_before_reading_the_rest(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import querybench.envs.reward as reward_module

    read: list[str] = []
    extract = reward_module.submitted

    def reading(completion: str) -> object:
        read.append(completion)
        return extract(completion)

    monkeypatch.setattr(reward_module, "submitted", reading)
    items = [RewardItem(db, GOLD, sql(f"-- rollout {i}\n{GOLD}")) for i in range(64)]
    with SQLReward(workers=2, cache_dir=tmp_path) as r:
        read_when_sent = _on_each_batch(r, monkeypatch, lambda work: len(read))
        assert [o.reward for o in r.score_many(items)] == [1.0] * 64
    # batches of 64 // (4 * 2) = 8, each sent as soon as its answers are read
    assert read_when_sent == list(range(8, 65, 8))


def _on_each_batch(
    reward: SQLReward,
    monkeypatch: pytest.MonkeyPatch,
    measure: Callable[[list[tuple[str, str, str | None]]], int],
) -> list[int]:
    """`measure` of each batch `reward` sends, in order, recorded as it is sent."""
    seen: list[int] = []
    send = reward._batch

    def counted(work: list[tuple[str, str, str | None]]) -> object:
        seen.append(measure(work))
        return send(work)

    monkeypatch.setattr(reward, "_batch", counted)
    return seen


def test_score_many_spreads_few_distinct_answers_over_the_workers(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 8 distinct answers, each repeated 8 times in a row (a GRPO group agreeing on its SQL)
    items = [RewardItem(db, GOLD, sql(f"-- group {i // 8}\n{GOLD}")) for i in range(64)]
    with SQLReward(workers=2, cache_dir=tmp_path) as r:
        sizes = _on_each_batch(r, monkeypatch, len)
        assert [o.reward for o in r.score_many(items)] == [1.0] * 64
    assert sizes == [1] * 8  # one batch of 8 would leave a worker idle


def test_a_burst_of_ascore_calls_sends_full_batches_while_it_is_made(
    reward: SQLReward, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    calls = 0
    made = _on_each_batch(reward, monkeypatch, lambda work: calls)  # calls made when each went

    async def one(i: int) -> float:
        nonlocal calls
        calls += 1
        return (await reward.ascore(db, GOLD, sql(f"-- rollout {i}\n{GOLD}"))).reward

    async def burst() -> list[float]:  # the calls' first steps all run in one loop pass
        return list(await asyncio.gather(*(one(i) for i in range(128))))

    rewards = asyncio.run(burst())
    assert rewards == [1.0] * 128
    assert made[:2] == [64, 128]


FIVE_MILLION = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000000) "


class CountingEngine(SQLiteEngine):
    """Counts every row the engine hands to the comparison."""

    fetched = 0

    def execute_batches(  # type: ignore[override]
        self, sql: str, **kwargs: Any
    ) -> Generator[list[tuple[Any, ...]], None, None]:
        inner = super().execute_batches(sql, **kwargs)
        try:
            for batch in inner:
                self.fetched += len(batch)
                yield batch
        finally:
            inner.close()

    def feed_batches(self, sql: str, sink: Sink, **kwargs: Any) -> None:  # type: ignore[override]
        def counted(batch: list[tuple[Any, ...]]) -> bool:
            self.fetched += len(batch)
            return sink(batch)

        super().feed_batches(sql, counted, **kwargs)


def test_a_huge_foreign_answer_stops_at_its_first_row(db: Path) -> None:
    gold = Result(("name",), [("b",), ("c",)])
    with CountingEngine(db) as engine:
        answer = run_answer(
            engine, FIVE_MILLION + "SELECT i FROM n", gold, timeout=30, max_rows=10_000_000
        )
        assert isinstance(answer, StreamedMatch)
        assert not answer.matched and answer.rows_read == 1 and not answer.trivial
        assert engine.fetched <= FETCH_CHUNK  # one batch of the 5 million, no more
        assert engine.execute("SELECT 1").rows == [(1,)]  # the cursor was let go
    outcome = execution_match(gold, answer)
    assert outcome.reward == 0.0 and outcome.verdict.error == "wrong_result"
    assert outcome.metrics == {"error": 0.0, "trivial": 0.0, "gold_error": 0.0}


def test_a_huge_superset_of_the_gold_stops_at_the_first_foreign_row(db: Path) -> None:
    gold = Result(("name",), [("b",), ("c",), ("c",)])
    superset = GOLD + " UNION ALL " + "SELECT * FROM (" + FIVE_MILLION + "SELECT 'z' FROM n)"
    with CountingEngine(db) as engine:
        answer = run_answer(engine, superset, gold, timeout=30, max_rows=None)
        assert isinstance(answer, StreamedMatch)
        assert not answer.matched and answer.rows_read == 4
        assert engine.fetched <= FETCH_CHUNK


@pytest.mark.parametrize("processes", [True, False])
def test_huge_answers_score_zero_without_error_on_both_paths(
    db: Path, tmp_path: Path, processes: bool
) -> None:
    huge = sql(FIVE_MILLION + "SELECT i FROM n")
    with SQLReward(workers=1, cache_dir=tmp_path, processes=processes, answer_max_rows=100) as r:
        wrong = r.score(db, GOLD, huge)
        assert wrong.reward == 0.0 and wrong.verdict.error == "wrong_result"
        assert wrong.metrics["error"] == 0.0
        # only gold rows, past the cap: still capped
        capped = r.score(db, GOLD, sql(FIVE_MILLION + "SELECT 'b' FROM n"))
        assert capped.reward == 0.0 and capped.verdict.error == "too_many_rows"
        assert r.score(db, GOLD, sql(GOLD + " UNION ALL " + GOLD)).reward == 1.0


@pytest.mark.parametrize("processes", [True, False])
def test_an_answer_past_the_bound_of_one_answer_is_its_own_too_large_and_never_sent(
    db: Path, tmp_path: Path, processes: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # right rows, 20 MB of comment: past 16 MiB the answer is not extracted, sent or run
    huge = sql(GOLD + " /*" + "x" * 20_000_000 + "*/")
    sent: list[int] = []
    send = Supervisor.send

    def counted(self: Supervisor, kind: str, *args: Any, restart: bool = True) -> int:
        sent.append(len(pickle.dumps(args)))
        return send(self, kind, *args, restart=restart)

    monkeypatch.setattr(Supervisor, "send", counted)
    with SQLReward(workers=1, cache_dir=tmp_path, processes=processes) as r:
        start = time.monotonic()
        outcomes = [
            r.score(db, GOLD, huge),
            asyncio.run(r.ascore(db, GOLD, huge)),
            *r.score_many([RewardItem(db, GOLD, huge), RewardItem(db, GOLD, sql(GOLD))]),
            r.score_sql(db, GOLD, huge),
        ]
        took = time.monotonic() - start
    right = outcomes.pop(3)
    assert right.reward == 1.0
    for outcome in outcomes:
        assert outcome.reward == 0.0 and outcome.verdict.error == "too_large"
        assert outcome.verdict.message == (
            f"the answer is {len(huge):,} bytes (limit 16,777,216): not run"
        )
        assert outcome.metrics == {"error": 1.0, "trivial": 0.0, "gold_error": 0.0}
    assert took < 10.0
    assert max(sent, default=0) < 100_000  # the 20 MB stayed in this process


@pytest.mark.parametrize(
    ("gold", "answer", "matched"),
    [
        ([(1,), (2,)], [(2.0,), (1,), (1,), (2,)], True),  # duplicates, order, 1 == 1.0
        ([(1,)], [(1.0,)], True),
        ([], [], True),
        ([(1,)], [], False),
        ([], [(0,)], False),
        ([(1,), (2,)], [(1,), (1,)], False),  # a gold row never seen
        ([("a", 1)], [("a", 1.0), ("a", 1)], True),
        ([(None,)], [(None,)], True),
    ],
)
@pytest.mark.parametrize("batch", [1, 2, 100])
def test_streamed_match_is_the_bird_set_rule(
    gold: list[tuple[Any, ...]], answer: list[tuple[Any, ...]], matched: bool, batch: int
) -> None:
    batches = [answer[i : i + batch] for i in range(0, len(answer), batch)]
    streamed = bird_stream_match(gold, batches)
    assert streamed.matched is matched is bird_result_match(gold, answer)
    assert streamed.gold_distinct == len(set(gold))
    assert streamed.trivial is is_trivial_result(answer)
    whole = execution_match(Result(("a",), gold), Result(("a",), answer))
    by_stream = execution_match(Result(("a",), gold), streamed)
    assert (by_stream.reward, by_stream.verdict.error, by_stream.metrics) == (
        whole.reward,
        whole.verdict.error,
        whole.metrics,
    )
    if not matched:  # both name the gold's distinct rows alike
        assert f"gold {len(set(gold))} distinct rows" in (by_stream.verdict.message or "")
        assert f"gold {len(set(gold))} distinct rows" in (whole.verdict.message or "")


def test_streamed_trivial_reads_on_only_while_the_rows_repeat_one_value() -> None:
    # the first row is foreign, so the comparison stops; trivial needs the rest of the rows
    assert not bird_stream_match([(5,)], [[(1,)], [(2,)]]).trivial
    assert bird_stream_match([(5,)], [[(1,)]]).trivial
    assert bird_stream_match([(5,)], [[(0,), (0,)], [(0.0,)]]).trivial
    assert not bird_stream_match([(5,)], [[(0,)], [(0,), (1,)]]).trivial
    assert not bird_stream_match([(5,)], [[(7,)]]).trivial
    assert not bird_stream_match([(0,)], [[(0,), (1,)]]).trivial

    def endless() -> Iterator[list[tuple[Any, ...]]]:
        yield [(0,)]
        raise QueryTimeout("cut short")

    assert bird_stream_match([(5,)], endless()).trivial
    stream = iter([[(0,)], [(2,)], [(3,)]])
    assert not bird_stream_match([(5,)], stream).trivial
    assert next(stream) == [(3,)]  # a second value ends the reading: the rest is never asked


@pytest.mark.data
@pytest.mark.slow
def test_question_blind_wins_on_spider1_dev_are_all_flagged(tmp_path: Path) -> None:
    root = require_data("spider1")
    entries = json.loads((root / "dev_subset_available_dbs.json").read_text(encoding="utf-8"))
    blind = sql("SELECT 0 FROM sqlite_master")  # many rows of 0, whatever the question
    items = [
        RewardItem(root / e["db_id"] / f"{e['db_id']}.sqlite", e["query"], blind) for e in entries
    ]
    with SQLReward(workers=2, cache_dir=tmp_path, processes=False) as reward:
        outcomes = reward.score_many(items)
    wins = [o for o in outcomes if o.reward == 1.0]
    assert len(wins) == 24  # the golds whose rows are, as a set, a single 0 (or none: never)
    assert all(o.metrics["trivial"] == 1.0 for o in wins)


@pytest.mark.parametrize("name", ["answer_timeout", "gold_timeout"])
@pytest.mark.parametrize("timeout", [float("nan"), float("inf")])
def test_a_reward_timeout_no_clock_reaches_is_refused_when_the_reward_is_made(
    name: str, timeout: float
) -> None:
    """A NaN or infinite timeout gave every answer (or gold) a deadline never passed: an
    endless answer held its worker for ever. Refused at once, before any worker starts."""
    with pytest.raises(EngineError, match="finite number of seconds"):
        SQLReward(workers=1, processes=False, **{name: timeout})  # type: ignore[arg-type]
