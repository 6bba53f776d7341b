"""Soft-F1 and R-VES against the official mini-dev formulas, worked by hand on fixtures here.

Every expected number below is computed in the comment next to it from the rules of
bird-bench/mini_dev `evaluation_f1.py` / `evaluation_ves.py` / `evaluation_utils.py`.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querybench.cli import app
from querybench.evaluation.bird.evaluate import BIRD_SEPARATOR, evaluate_bird, load_bird_questions
from querybench.evaluation.bird.metrics import (
    BirdMetric,
    LevelScores,
    TimedPair,
    level_scores,
    mean_time_ratio,
    measure_rewards,
    official_table,
    parse_metrics,
    soft_f1,
    time_ratios,
    trim_outliers,
    ves_reward,
)
from querybench.evaluation.record import InstanceResult
from querybench.report.summary import bird_tables

Rows = list[tuple[Any, ...]]


@pytest.fixture(autouse=True)
def _private_result_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))


# --- Soft-F1 ------------------------------------------------------------------------------

SOFT_F1_CASES: list[tuple[str, Rows, Rows, float]] = [
    # (name, predicted rows, gold rows, expected F1)
    ("both empty", [], [], 1.0),
    ("prediction empty", [], [(1,)], 0.0),  # tp 0, fp 0, fn 1: P = R = 0
    ("gold empty", [(1,)], [], 0.0),  # tp 0, fp 1
    ("equal", [(1, "a"), (2, "b")], [(1, "a"), (2, "b")], 1.0),
    ("column order ignored", [("a", 1)], [(1, "a")], 1.0),  # each value is in the other row
    # rows are paired by position: (2,)~(1,) and (1,)~(2,): tp 0 -> 0 (EX would say 1)
    ("row order matters", [(2,), (1,)], [(1,), (2,)], 0.0),
    # duplicates dropped first, order of first occurrence kept
    ("duplicates dropped", [(1,), (1,), (2,)], [(1,), (2,), (2,)], 1.0),
    # tp 1, fp 1 (the unpaired predicted row), fn 0: P 1/2, R 1 -> 2/3
    ("extra predicted row", [(1, "a"), (2, "b")], [(1, "a")], 2 / 3),
    # tp 1, fp 0, fn 1: P 1, R 1/2 -> 2/3
    ("missing row", [(1,)], [(1,), (2,)], 2 / 3),
    # pred (1, 1) vs gold (1, 2): matched 2/2 (each 1 is in gold), gold-only 1/2 (2 is not in
    # pred): tp 1, fp 0, fn 0.5 -> P 1, R 2/3 -> F1 0.8
    ("repeated value counts twice", [(1, 1)], [(1, 2)], 0.8),
    # pred (1, 5) vs gold (1,): fractions over the gold width 1: matched 1, pred-only 1 -> 2/3
    ("wider prediction", [(1, 5)], [(1,)], 2 / 3),
    ("1 equals 1.0", [(1.0,)], [(1,)], 1.0),
    ("NULL matches NULL", [(None, "x")], [("x", None)], 1.0),
    # the README's worked example, under the script: NULL is a value. Row 1 (325,'Apple') vs
    # ('Apple',325): 2/0/0 (over width 2: 1, 0, 0); row 2 (191,'Orange') vs ('Orange',None):
    # 1/1/1 (0.5 each); row 3 (None,'Banana') vs ('Banana',119): 1/1/1. tp 2, fp 1, fn 1:
    # P = R = 2/3 -> 2/3 (the README, skipping empty cells, says 0.8)
    (
        "README example",
        [(325, "Apple"), (191, "Orange"), (None, "Banana")],
        [("Apple", 325), ("Orange", None), ("Banana", 119)],
        2 / 3,
    ),
]


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [case[1:] for case in SOFT_F1_CASES],
    ids=[case[0] for case in SOFT_F1_CASES],
)
def test_soft_f1_official_formula(pred: Rows, gold: Rows, expected: float) -> None:
    assert soft_f1(pred, gold) == pytest.approx(expected)


# --- R-VES --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "reward"),
    [
        (0.0, 0.0),  # the official "no match" value
        (5.0, 1.25),
        (2.0, 1.25),
        (1.999, 1.0),
        (1.0, 1.0),
        (0.999, 0.75),
        (0.5, 0.75),
        (0.4999, 0.5),
        (0.25, 0.5),
        (0.2499, 0.25),
        (1e-9, 0.25),
    ],
)
def test_ves_reward_buckets(ratio: float, reward: float) -> None:
    assert ves_reward(ratio) == reward


def test_outliers_beyond_three_sigma_are_trimmed() -> None:
    # twenty ratios of 1.0 and one of 100: mean 5.714, population sd 21.1, 100 is 4.47 sd out
    samples = [1.0] * 20 + [100.0]
    assert trim_outliers(samples) == [1.0] * 20
    assert mean_time_ratio(samples) == 1.0  # reward 1; untrimmed the mean 5.7 would give 1.25
    # a spread sample keeps everything within 3 sd: 0.9 .. 1.3, mean 1.1
    spread = [0.9, 1.0, 1.1, 1.2, 1.3]
    assert trim_outliers(spread) == spread
    assert mean_time_ratio(spread) == pytest.approx(1.1)
    # all equal: no outlier, all kept (the script's strict test would drop all and score 0)
    assert trim_outliers([2.0, 2.0]) == [2.0, 2.0]


class ScriptedClock:
    """A clock whose readings advance by scripted durations: each predicted run takes the
    next of `pred`, each gold run the next of `gold`; no time passes in between."""

    def __init__(self, pred: list[float], gold: list[float]) -> None:
        self.now = 0.0
        self.steps: Iterator[float] = iter(
            [0.0] + [d for p, g in zip(pred, gold, strict=True) for d in (0.0, p, g)]
        )

    def __call__(self) -> float:
        self.now += next(self.steps)
        return self.now


def test_time_ratios_are_gold_over_predicted() -> None:
    clock = ScriptedClock(pred=[1.0, 2.0, 0.5], gold=[3.0, 1.0, 0.5])
    ran: list[str] = []
    ratios = time_ratios(lambda: ran.append("p"), lambda: ran.append("g"), 3, clock)
    assert ratios == pytest.approx([3.0, 0.5, 1.0])
    assert ran == ["p", "g"] * 3  # alternated, prediction first, as the script does


def test_time_ratios_budget() -> None:
    clock = ScriptedClock(pred=[5.0, 5.0, 5.0], gold=[5.0, 5.0, 5.0])
    with pytest.raises(TimeoutError):
        time_ratios(lambda: None, lambda: None, 3, clock, budget_s=12.0)


# --- on a database made here --------------------------------------------------------------


def _database(root: Path) -> Path:
    folder = root / "shop"
    folder.mkdir(parents=True)
    path = folder / "shop.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE item (id INTEGER, name TEXT, price REAL)")
        conn.executemany(
            "INSERT INTO item VALUES (?, ?, ?)",
            [(1, "pen", 1.5), (2, "ink", 4.0), (3, "pad", None)],
        )
    conn.close()
    return path


QUESTIONS = [
    # (question_id, difficulty, gold, prediction)
    (1, "simple", "SELECT id FROM item ORDER BY id", "SELECT id FROM item ORDER BY id DESC"),
    (2, "simple", "SELECT name, price FROM item WHERE id = 1", "SELECT price, name FROM item"),
    (3, "moderate", "SELECT COUNT(*) FROM item", "SELECT COUNT(*) FROM item"),
    (4, "challenging", "SELECT name FROM item WHERE price IS NULL", "SELECT nme FROM item"),
]


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    _database(tmp_path / "db")
    questions = [
        {"question_id": q, "db_id": "shop", "question": "", "SQL": gold, "difficulty": level}
        for q, level, gold, _ in QUESTIONS
    ]
    predictions = {str(q): f"{pred}{BIRD_SEPARATOR}shop" for q, _, _, pred in QUESTIONS}
    q_path, p_path = tmp_path / "mini_dev_sqlite.json", tmp_path / "predict.json"
    q_path.write_text(json.dumps(questions), encoding="utf-8")
    p_path.write_text(json.dumps(predictions), encoding="utf-8")
    return q_path, p_path, tmp_path / "db"


def test_evaluate_bird_soft_f1(tmp_path: Path) -> None:
    questions, predictions, db_dir = _files(tmp_path)
    results = evaluate_bird(
        predictions,
        questions=questions,
        db_dir=db_dir,
        workers=2,
        metrics=(BirdMetric.EX, BirdMetric.SOFT_F1),
    )
    assert [r.score for r in results] == [1.0, 0.0, 1.0, 0.0]
    # 1: rows 3,2,1 against 1,2,3 by position: only the middle pair matches: tp 1, fp 2,
    #    fn 2 -> 1/3. 2: row 1 (1.5,'pen') pairs gold ('pen',1.5): 1; rows 2, 3 unpaired:
    #    fp 2 -> P 1/3, R 1 -> 1/2. 3: equal -> 1. 4: the prediction fails -> 0.
    assert [r.metrics["soft_f1"] for r in results] == pytest.approx([1 / 3, 0.5, 1.0, 0.0])
    assert all("r_ves" not in r.metrics for r in results)


def test_evaluate_bird_default_metrics_unchanged(tmp_path: Path) -> None:
    questions, predictions, db_dir = _files(tmp_path)
    results = evaluate_bird(predictions, questions=questions, db_dir=db_dir, workers=1)
    assert [sorted(r.metrics) for r in results] == [["error", "gold_error", "trivial"]] * 4
    assert {r.engine for r in results} == {"sqlite"}


def test_evaluate_bird_r_ves_on_controlled_timings(tmp_path: Path) -> None:
    questions, predictions, db_dir = _files(tmp_path)
    # two matched pairs (1 and 3), timed in question order on one worker, 4 runs each:
    # pair 1: predicted 1 s, gold 0.3 s -> ratio 0.3 -> reward 0.5;
    # pair 3: predicted 1 s, gold 2.5 s -> ratio 2.5 -> reward 1.25
    pair1 = ScriptedClock(pred=[1.0] * 4, gold=[0.3] * 4)
    pair3 = ScriptedClock(pred=[1.0] * 4, gold=[2.5] * 4)
    steps = iter([*pair1.steps, *pair3.steps])
    now = [0.0]

    def clock() -> float:
        now[0] += next(steps)
        return now[0]

    results = evaluate_bird(
        predictions,
        questions=questions,
        db_dir=db_dir,
        workers=1,
        metrics=(BirdMetric.EX, BirdMetric.R_VES),
        ves_repeats=4,
        clock=clock,
    )
    # r_ves is sqrt(reward): 1 -> sqrt(0.5), 3 -> sqrt(1.25), the others did not match -> 0
    expected = [math.sqrt(0.5), 0.0, math.sqrt(1.25), 0.0]
    assert [r.metrics["r_ves"] for r in results] == pytest.approx(expected)
    # R-VES = mean of sqrt(reward) x 100, per level as the script's compute_ves_by_diff:
    # simple (1, 2): (70.71 + 0) / 2 = 35.36; moderate (3): 111.80; challenging (4): 0;
    # total (70.711 + 111.803) / 4 = 45.628
    table = level_scores(BirdMetric.R_VES, [(r.difficulty, r.metrics["r_ves"]) for r in results])
    assert table.counts == (2, 1, 1, 4)
    assert table.scores == pytest.approx((35.355, 111.803, 0.0, 45.628), abs=1e-3)


def test_measure_rewards_errors_score_zero(tmp_path: Path) -> None:
    db = _database(tmp_path)
    pairs = [
        TimedPair("ok", db, "SELECT 1", "SELECT 1"),
        TimedPair("bad", db, "SELECT nope FROM item", "SELECT 1"),
        TimedPair("gone", tmp_path / "absent.sqlite", "SELECT 1", "SELECT 1"),
    ]
    rewards = measure_rewards(pairs, repeats=3, timeout=5, workers=2)
    assert rewards["bad"] == 0.0 and rewards["gone"] == 0.0
    assert rewards["ok"] in (0.25, 0.5, 0.75, 1.0, 1.25)  # real timings: any bucket


# --- the official table -------------------------------------------------------------------


def test_official_table_layout() -> None:
    table = LevelScores(BirdMetric.SOFT_F1, (148, 250, 102, 500), (62.36, 44.9, 45.86, 50.26))
    # evaluation/SQLite_example_result.txt of the official repository, trailing spaces aside
    expected = (
        "                     simple               moderate             challenging"
        "          total\n"
        "count                148                  250                  102"
        "                  500\n"
        "======================================    Soft-F1    ====================================="
        "\n"
        "Soft-F1              62.36                44.90                45.86"
        "                50.26"
    )
    assert official_table(table) == expected


def test_level_scores_empty_level_and_unlabelled() -> None:
    table = level_scores(BirdMetric.EX, [("simple", 1.0), (None, 0.0), ("moderate", 0.0)])
    assert table.counts == (1, 1, 0, 3)
    assert table.scores == (100.0, 0.0, None, pytest.approx(100 / 3))
    assert "-" in official_table(table).splitlines()[-1].split()


def test_parse_metrics() -> None:
    assert parse_metrics("ex, SOFT_F1,r_ves,ex") == (
        BirdMetric.EX,
        BirdMetric.SOFT_F1,
        BirdMetric.R_VES,
    )
    with pytest.raises(ValueError, match="unknown metric 'f1'"):
        parse_metrics("ex,f1")
    with pytest.raises(ValueError, match="no metric"):
        parse_metrics(" , ")


# --- the command line ---------------------------------------------------------------------


def test_cli_bird_mini_dev_tables_and_output(tmp_path: Path) -> None:
    questions, predictions, db_dir = _files(tmp_path)
    out = tmp_path / "results.jsonl"
    args = ["eval", "bird-mini-dev", "--predictions", str(predictions)]
    args += ["--questions", str(questions), "--db-dir", str(db_dir), "--output", str(out)]
    result = CliRunner().invoke(app, [*args, "--metrics", "ex,soft_f1"])
    assert result.exit_code == 0, result.output
    assert "BIRD mini-dev (sqlite)" in result.stdout
    # EX: simple 1/2, moderate 1/1, challenging 0/1, total 2/4
    assert "EX                   50.00                100.00               0.00" in result.stdout
    # Soft-F1: simple (1/3 + 1/2) / 2 = 41.67, moderate 100, challenging 0, total 45.83
    assert "Soft-F1              41.67                100.00               0.00" in result.stdout
    assert "45.83" in result.stdout
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line["metrics"]["soft_f1"] for line in lines] == pytest.approx([1 / 3, 0.5, 1, 0])


def test_cli_bird_r_ves_says_it_is_slow(tmp_path: Path) -> None:
    questions, predictions, db_dir = _files(tmp_path)
    args = ["eval", "bird", "--questions", str(questions), "--predictions", str(predictions)]
    args += ["--db-dir", str(db_dir), "--metrics", "r_ves", "--ves-repeats", "3"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "slow" in result.stderr and "machine's load" in result.stderr
    assert "R-VES" in result.stdout and "count" in result.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--metrics", "ex,vs"], "unknown metric 'vs'"),
        (["--dialect", "mysql"], "--dialect mysql needs --db-url"),
        (["--dialect", "oracle"], "--dialect must be sqlite, mysql or postgresql"),
        (
            ["--dialect", "postgresql", "--db-url", "mysql://root@127.0.0.1/x"],
            "does not match --dialect postgresql",
        ),
    ],
)
def test_cli_bird_mini_dev_bad_options(tmp_path: Path, extra: list[str], message: str) -> None:
    questions, predictions, db_dir = _files(tmp_path)
    args = ["eval", "bird-mini-dev", "--predictions", str(predictions)]
    args += ["--questions", str(questions), "--db-dir", str(db_dir), *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_bird_tables_read_the_result_fields(tmp_path: Path) -> None:
    questions, predictions, db_dir = _files(tmp_path)
    results = evaluate_bird(
        predictions, questions=questions, db_dir=db_dir, workers=1, metrics=(BirdMetric.SOFT_F1,)
    )
    text = bird_tables(results, (BirdMetric.EX, BirdMetric.SOFT_F1))
    assert text.count("count                2                    1                    1") == 2


# --- the official mini-dev prediction keys ------------------------------------------------


def _mini_dev_ids(tmp_path: Path, keyed_by: str) -> list[InstanceResult]:
    _database(tmp_path / "db")
    ids = [1471, 1472, 3]  # mini-dev ids are BIRD dev ids, not positions
    golds = ["SELECT 1", "SELECT 2", "SELECT 3"]
    questions = [
        {"question_id": q, "db_id": "shop", "SQL": g, "difficulty": "simple"}
        for q, g in zip(ids, golds, strict=True)
    ]
    keys = [str(i) for i in range(3)] if keyed_by == "position" else [str(q) for q in ids]
    predictions = dict(zip(keys, [f"{g}{BIRD_SEPARATOR}shop" for g in golds], strict=True))
    q_path, p_path = tmp_path / "q.json", tmp_path / "p.json"
    q_path.write_text(json.dumps(questions), encoding="utf-8")
    p_path.write_text(json.dumps(predictions), encoding="utf-8")
    return evaluate_bird(p_path, questions=q_path, db_dir=tmp_path / "db", workers=1)


@pytest.mark.parametrize("keyed_by", ["position", "question_id"])
def test_mini_dev_predictions_keyed_by_position_or_id(tmp_path: Path, keyed_by: str) -> None:
    # the official generators key mini-dev predictions "0".."499" by position; question 3's
    # id is also a position key, which must not pair it with the first prediction
    results = _mini_dev_ids(tmp_path, keyed_by)
    assert [(r.instance_id, r.score) for r in results] == [("1471", 1.0), ("1472", 1.0), ("3", 1.0)]


@pytest.mark.parametrize("keyed_by", ["position", "question_id"])
def test_repeated_question_ids_are_questions_of_their_own(tmp_path: Path, keyed_by: str) -> None:
    # the July 2024 official MySQL/PostgreSQL files hold ids 137 and 138 twice; the official
    # scripts pair by position and count every entry
    _database(tmp_path / "db")
    ids = [137, 138, 137, 2]
    entries = [{"question_id": q, "db_id": "shop", "SQL": f"SELECT {q}"} for q in ids]
    q_path, p_path = tmp_path / "q.json", tmp_path / "p.json"
    q_path.write_text(json.dumps(entries), encoding="utf-8")
    assert [q.question_id for q in load_bird_questions(q_path)] == ["137", "138", "137#2", "2"]
    keys = [str(i) for i in range(4)] if keyed_by == "position" else ["137", "138", "2"]
    sqls = ["SELECT 137", "SELECT 138", "SELECT 137", "SELECT 2"]
    if keyed_by == "question_id":
        sqls = ["SELECT 137", "SELECT 138", "SELECT 2"]
    predictions = {k: f"{sql}{BIRD_SEPARATOR}shop" for k, sql in zip(keys, sqls, strict=True)}
    p_path.write_text(json.dumps(predictions), encoding="utf-8")
    results = evaluate_bird(p_path, questions=q_path, db_dir=tmp_path / "db", workers=1)
    assert [(r.instance_id, r.score) for r in results] == [
        ("137", 1.0),
        ("138", 1.0),
        ("137#2", 1.0),
        ("2", 1.0),
    ]


def test_db_load_two_renamings_refused(tmp_path: Path) -> None:
    source = _database(tmp_path)
    args = ["db", "load", f"sqlite:///{tmp_path / 'copy.sqlite'}", "--from", str(source)]
    result = CliRunner().invoke(app, [*args, "--lower-names", "--postgres-names"])
    assert result.exit_code == 2
    assert "choose one" in result.stderr
    assert not (tmp_path / "copy.sqlite").exists()


def test_a_question_database_id_that_is_a_path_opens_no_host_file(tmp_path: Path) -> None:
    """`<db-dir>/<db_id>/<db_id>.sqlite`: a db_id of `../x` would open `x.sqlite` beside the
    databases' folder (it scored 1 there); the questions file is refused, naming the entry."""
    import shutil

    from querybench.errors import DataError

    shutil.copy(_database(tmp_path / "db"), tmp_path / "x.sqlite")
    (tmp_path / "x").mkdir()  # `db/../x/../x.sqlite` resolves
    entries = [{"question_id": 1, "db_id": "../x", "SQL": "SELECT count(*) FROM item"}]
    q_path, p_path = tmp_path / "q.json", tmp_path / "p.json"
    q_path.write_text(json.dumps(entries), encoding="utf-8")
    p_path.write_text(json.dumps({"1": f"SELECT count(*) FROM item{BIRD_SEPARATOR}../x"}))
    with pytest.raises(DataError, match=r"entry 0: db_id '\.\./x' is not a plain name"):
        evaluate_bird(p_path, questions=q_path, db_dir=tmp_path / "db")
