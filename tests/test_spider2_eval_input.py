"""Spider 2.0 evaluation under odd and hostile inputs: every failure is that instance's verdict
with a stated reason; no input crashes, hangs or ends the eval."""

from __future__ import annotations

import io
import json
import os
import socket
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from bench.official_baseline import compare_table
from querybench.cli import app
from querybench.errors import ErrorCode
from querybench.evaluation.prediction_file import ReadLimits
from querybench.evaluation.record import InstanceResult
from querybench.evaluation.spider2.evaluate import evaluate_spider2
from querybench.evaluation.spider2.gold import EvalSpec
from querybench.evaluation.spider2.instance import score_frame

BIG = "9" * 400  # pandas reads it as a Python int, which float() cannot take
runner = CliRunner()


def frame(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


def make_gold(root: Path, golds: dict[str, bytes], benchmark: str = "spider2-lite") -> Path:
    """A gold folder: `golds` maps a gold file name to its bytes, one instance per id."""
    gold = root / "gold"
    (gold / "exec_result").mkdir(parents=True)
    ids = sorted({name.removesuffix(".csv").split("_")[0] for name in golds})
    config = "spider2lite_eval.jsonl" if benchmark == "spider2-lite" else "spider2snow_eval.jsonl"
    (gold / config).write_text(
        "".join(
            json.dumps({"instance_id": i, "condition_cols": [], "ignore_order": True}) + "\n"
            for i in ids
        )
    )
    for name, data in golds.items():
        (gold / "exec_result" / name).write_bytes(data)
    return gold


def by_id(results: list[InstanceResult]) -> dict[str, InstanceResult]:
    return {r.instance_id: r for r in results}


# -- one odd cell -----------------------------------------------------------------------------


@pytest.mark.parametrize("benchmark", ["spider2-lite", "spider2-snow"])
def test_a_400_digit_integer_is_that_instances_verdict(tmp_path: Path, benchmark: str) -> None:
    gold = make_gold(tmp_path, {"local001.csv": b"v\n1\n", "local002.csv": b"v\n1\n"}, benchmark)
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "local001.csv").write_text(f"a\n{BIG}\n")
    (pred / "local002.csv").write_text("a\n1\n")
    out = tmp_path / "out.jsonl"
    args = ["eval", benchmark, "--predictions", str(pred), "--gold-dir", str(gold)]
    result = runner.invoke(app, [*args, "--output", str(out)])
    assert result.exit_code == 0, result.output
    lines = {d["instance_id"]: d for d in map(json.loads, out.read_text().splitlines())}
    assert lines["local002"]["score"] == 1
    odd = lines["local001"]
    assert (odd["official_score"], odd["strict_score"]) == (0, 0)
    # As pandas 2.2 (the leaderboard's) reads it, the big integer stays text: no gold number.
    assert odd["error"] == "wrong_result" and "matches no gold" in odd["message"]


RAISES = "raises"  # the reference's float() of the big int raises: the instance scores 0

# (pred, gold, ignore_order, official reference, strict expected)
BIG_CASES = [
    (f"a\n{BIG}\n", "v\n1\n", True, RAISES, False),
    (f"a\n{BIG}\n", f"v\n{BIG}\n", True, RAISES, True),
    (f"a\n{BIG}\n", f"v\n{BIG[:-1]}8\n", False, RAISES, False),  # exact: no float holds either
    (f"a\n{BIG}\n1\n", f"v\n1\n{BIG}\n", True, RAISES, True),
    (f"a\n{BIG}\n1\n", f"v\n1\n{BIG}\n", False, RAISES, False),
    (f"a,b\n{BIG},1\n", "v\n1\n", False, RAISES, True),  # officially the first column raises
    (f"a,b\n1,{BIG}\n", "v\n1\n", False, 1, True),  # officially column a matches first
    (f"a\n2\n{BIG}\n", "v\n1\n1\n", False, 0, False),  # the loop stops at row 0, before the int
    (f"a\nx\n{BIG}\n", "v\nx\n1\n", False, 0, False),
    (f"a\n{'7' * 5000}\n", f"v\n{'7' * 5000}\n", True, 1, True),  # beyond str()'s digit limit
]


@pytest.mark.parametrize(("pred", "gold", "ignore_order", "reference", "strict"), BIG_CASES)
def test_big_integers_official_as_the_reference_strict_exact(
    pred: str, gold: str, ignore_order: bool, reference: int | str, strict: bool
) -> None:
    verdicts = score_frame(
        frame(pred), [frame(gold)], True, EvalSpec("x", [], ignore_order), "lite"
    )
    if reference == RAISES:
        with pytest.raises(OverflowError):
            compare_table(frame(pred), frame(gold), [], ignore_order, "lite")
        assert (verdicts.official.score, verdicts.official.error) == (0, ErrorCode.WRONG_RESULT)
        assert "OverflowError" in str(verdicts.official.message)
    else:
        assert compare_table(frame(pred), frame(gold), [], ignore_order, "lite") == reference
        assert verdicts.official.score == reference
        assert verdicts.official.error == (None if reference else ErrorCode.WRONG_RESULT)
    assert verdicts.strict.passed is strict
    assert verdicts.strict.error == (None if strict else ErrorCode.WRONG_RESULT)


SqlRun = Callable[..., dict[str, InstanceResult]]


def _sql_setup(root: Path) -> tuple[Path, Path, SqlRun]:
    """Gold `x = 1` for local001/local002, their toy database and a folder for `.sql` files;
    `run(**options)` scores that folder in sql mode."""
    gold = make_gold(root, {"local001.csv": b"x\n1\n", "local002.csv": b"x\n1\n"})
    db_dir = root / "dbs"
    db_dir.mkdir()
    with sqlite3.connect(db_dir / "toy.sqlite") as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.execute("INSERT INTO t VALUES (1)")
    conn.close()
    tasks = root / "spider2-lite.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"instance_id": f"local00{i}", "db": "toy", "question": "?"}) + "\n"
            for i in (1, 2)
        )
    )
    pred = root / "pred"
    pred.mkdir()
    (pred / "local002.sql").write_text("SELECT x FROM t")  # the honest answer

    def run(**options: object) -> dict[str, InstanceResult]:
        results = evaluate_spider2(
            pred,
            benchmark="spider2-lite",
            gold_dir=gold,
            mode="sql",
            db_dir=db_dir,
            tasks_file=tasks,
            **options,
        )  # type: ignore[arg-type]
        return by_id(results)

    return gold, pred, run


def test_sql_mode_big_integer_through_the_csv_round_trip(tmp_path: Path) -> None:
    _gold, pred, run = _sql_setup(tmp_path)
    (pred / "local001.sql").write_text(f"SELECT '{BIG}' AS a, x FROM t")  # text, read back an int
    for scoring in ("official", "strict"):
        results = run(scoring=scoring)
        assert results["local002"].score == 1
        odd = results["local001"]
        # officially column a raises before column x is tried; strictly x is the answer
        assert (odd.official_score, odd.strict_score) == (0, 1)


# -- an unreadable gold alternative ---------------------------------------------------------


def test_unreadable_gold_alternative_after_a_wrong_prediction_is_a_gold_error(
    tmp_path: Path,
) -> None:
    gold = make_gold(
        tmp_path,
        {
            "local001_a.csv": b"v\n2\n",
            "local001_b.csv": b"v\n\xff\xfe\n",
            "local002.csv": b"v\n1\n",
        },
    )
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "local001.csv").write_text("a\n1\n")
    (pred / "local002.csv").write_text("a\n1\n")
    for scoring in ("official", "strict"):
        results = by_id(
            evaluate_spider2(pred, benchmark="spider2-lite", gold_dir=gold, scoring=scoring)
        )  # type: ignore[arg-type]
        assert results["local002"].score == 1
        odd = results["local001"]
        assert odd.error == "gold_error" and "local001_b.csv" in str(odd.message)
        assert (odd.official_score, odd.strict_score) == (0, 0)


# -- what a prediction file is, where it points, what it costs ------------------------------


def _eval_folder(
    tmp_path: Path, plant: dict[str, object], limits: ReadLimits | None = None
) -> dict[str, InstanceResult]:
    """Score a folder where `plant[id]` made `<id>.csv` (bytes, or a function of the path)."""
    gold = make_gold(tmp_path, {f"{i}.csv": b"a,b\n1,2\n" for i in [*plant, "local999"]})
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "local999.csv").write_bytes(b"a,b\n1,2\n")  # an honest answer beside the others
    for iid, how in plant.items():
        path = pred / f"{iid}.csv"
        if isinstance(how, bytes):
            path.write_bytes(how)
        else:
            how(path)  # type: ignore[operator]
    results = by_id(
        evaluate_spider2(pred, benchmark="spider2-lite", gold_dir=gold, workers=1, limits=limits)
    )
    assert results["local999"].score == 1
    return results


def test_special_files_are_refused_with_their_kind(tmp_path: Path) -> None:
    plant = {
        "local001": os.mkfifo,
        "local002": lambda p: os.symlink("/proc/kmsg", p),  # a read that never returns
        "local003": os.mkdir,
        "local004": lambda p: socket.socket(socket.AF_UNIX).bind(str(p)),
        "local005": lambda p: os.symlink("/nonexistent/x", p),
    }
    results = _eval_folder(tmp_path, plant)  # returns at all: nothing blocked
    expected = {
        "local001": "is a FIFO",
        "local002": "symlink to /proc/kmsg, outside the predictions folder",
        "local003": "is a directory",
        "local004": "is a socket",
        "local005": "symlink to /nonexistent/x",
    }
    for iid, words in expected.items():
        assert results[iid].error == "bad_prediction_file", results[iid]
        assert words in str(results[iid].message)


def test_symlinks_out_of_the_folder_or_into_the_gold_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.csv"
    outside.write_text("a,b\n1,2\n")  # the right answer, but not in the predictions folder

    def within(path: Path) -> None:  # a link inside the folder is followed
        (path.parent / "mine.csv").write_text("a,b\n1,2\n")
        os.symlink("mine.csv", path)

    plant = {
        "local001": lambda p: os.symlink(outside, p),
        "local002": lambda p: os.symlink(tmp_path / "gold" / "exec_result" / "local002.csv", p),
        "local003": within,
    }
    results = _eval_folder(tmp_path, plant)
    assert results["local001"].error == "bad_prediction_file"
    assert "outside the predictions folder" in str(results["local001"].message)
    assert results["local002"].error == "bad_prediction_file"
    assert "into the gold folder" in str(results["local002"].message)
    assert results["local003"].score == 1


def test_gold_inside_the_predictions_folder_is_still_refused(tmp_path: Path) -> None:
    gold = make_gold(tmp_path / "pred", {"local001.csv": b"a\n1\n"})
    pred = tmp_path / "pred"
    os.symlink(gold / "exec_result" / "local001.csv", pred / "local001.csv")
    [result] = evaluate_spider2(pred, benchmark="spider2-lite", gold_dir=gold, workers=1)
    assert result.error == "bad_prediction_file" and "gold folder" in str(result.message)


SMALL = ReadLimits(max_bytes=4096, max_columns=8, max_cells=40, max_line_bytes=256)


def test_size_columns_cells_and_lines_are_bounded(tmp_path: Path) -> None:
    plant = {
        "local001": b"a\n" + b"1\n" * 3000,  # 6 KB
        "local002": ",".join(f"c{j}" for j in range(9)).encode() + b"\n",
        "local003": b"a,b\n" + b"1,2\n" * 30,  # 60 cells
        "local004": b"a\n" + b"x" * 300 + b"\n",
        "local005": b"a,b\n" + b"1,2\n" * 19,  # 38 cells: within every bound
    }
    results = _eval_folder(tmp_path, plant, SMALL)
    for iid, words in {
        "local001": "bytes (limit 4,096)",
        "local002": "9 columns (limit 8)",
        "local003": "60 cells (limit 40)",
        "local004": "a line longer than 256 bytes",
    }.items():
        assert results[iid].error == "too_large", results[iid]
        assert words in str(results[iid].message)
    assert results["local005"].error == "wrong_result"  # read and scored: 19 rows, not 1


def test_a_sparse_2gb_file_and_a_million_columns_fail_fast(tmp_path: Path) -> None:
    def sparse(path: Path) -> None:
        with path.open("wb") as f:
            f.truncate(2 * 10**9)  # a hole: no disk used, every byte NUL

    def sparse_below_the_byte_bound(path: Path) -> None:
        with path.open("wb") as f:
            f.truncate(64 << 20)  # one 64 MiB line

    wide = ",".join(f"c{j}" for j in range(10**6)).encode() + b"\n1\n"
    results = _eval_folder(
        tmp_path, {"local001": sparse, "local002": wide, "local003": sparse_below_the_byte_bound}
    )
    assert results["local001"].error == "too_large"
    assert "2,000,000,000 bytes" in str(results["local001"].message)
    assert results["local002"].error == "too_large"
    assert "1,000,000 columns" in str(results["local002"].message)
    assert results["local003"].error == "too_large"
    assert "a line longer than" in str(results["local003"].message)


def test_a_big_file_is_parsed_as_scanned_though_it_changes_after_the_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The system under test may append to (or rewrite) a big prediction between the bounded
    scan and the parse: the parse must see exactly the bytes the bounds were checked on."""
    from querybench.evaluation import prediction_file
    from querybench.evaluation.prediction_file import open_prediction
    from querybench.evaluation.spider2 import large_result

    monkeypatch.setattr(prediction_file, "LARGE_FILE_BYTES", 64)  # the streamed path, small
    path = tmp_path / "local001.csv"
    path.write_bytes(b"a,b\n" + b"1,2\n" * 100)
    limits = ReadLimits(max_bytes=1000, max_cells=400)
    with open_prediction(path, tmp_path, limits) as scanned:
        with path.open("r+b") as f:  # the same inode: a wider header, rows past every bound
            f.write(b"a,b,c,d")
            f.seek(0, os.SEEK_END)
            f.write(b"3,4\n" * 10_000)
        table = large_result.read_result(scanned)
    assert table.shape == (100, 2)


def test_a_link_swapped_while_its_path_is_resolved_is_a_bad_prediction_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer of the folder may swap `<id>.csv` between a symlink and a file while it is
    resolved (`realpath` then fails reading the link): that instance's verdict, not a crash
    of the whole evaluation."""
    from querybench.evaluation import prediction_file

    path = tmp_path / "local001.csv"
    path.write_text("a\n1\n")
    real = os.path.realpath

    def swapped(name: Any, *args: Any, **kwargs: Any) -> str:
        if str(name) == str(path):
            raise OSError(22, "Invalid argument")  # readlink on what is no longer a link
        return real(name, *args, **kwargs)

    monkeypatch.setattr(prediction_file.os.path, "realpath", swapped)
    with pytest.raises(prediction_file.PredictionRefused) as refused:
        prediction_file.read_prediction_text(path, tmp_path, ReadLimits())
    assert refused.value.code == ErrorCode.BAD_PREDICTION_FILE
    assert "Invalid argument" in str(refused.value)


def test_a_read_past_its_deadline_is_that_instances_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A regular file whose read never returns (as /proc/kmsg's, or a dead network mount) cannot
    # be made here, so the read is pointed at a real pipe no one writes to: it blocks for real.

    from querybench.evaluation import prediction_file

    gold = make_gold(tmp_path, {"local001.csv": b"a\n1\n", "local002.csv": b"a\n1\n"})
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "local001.csv").write_text("a\n1\n")
    (pred / "local002.csv").write_text("a\n1\n")
    silent, writer = os.pipe()
    real = prediction_file._read_all

    def blocking_once(fd: int, scan: object) -> None:
        if "local001" in os.readlink(f"/proc/self/fd/{fd}"):
            os.read(silent, 1)  # blocks until the test closes the pipe
        real(fd, scan)  # type: ignore[arg-type]

    monkeypatch.setattr(prediction_file, "_read_all", blocking_once)
    monkeypatch.setattr(prediction_file, "_local_devices", frozenset)  # as on a network mount
    started = threading.active_count()
    try:
        results = by_id(
            evaluate_spider2(
                pred,
                benchmark="spider2-lite",
                gold_dir=gold,
                workers=1,
                limits=ReadLimits(seconds=0.5),
            )
        )
    finally:
        os.close(writer)
        os.close(silent)
    assert results["local001"].error == "bad_prediction_file"
    assert "did not finish within 0.5 s" in str(results["local001"].message)
    assert results["local002"].score == 1  # the eval went on
    assert threading.active_count() <= started + 1


def test_an_abandoned_slow_read_closes_its_descriptor_when_the_read_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from querybench.evaluation import prediction_file

    (tmp_path / "local001.csv").write_text("a\n1\n")
    silent, writer = os.pipe()
    opened: list[int] = []
    readers: list[threading.Thread] = []
    real_read, real_thread = prediction_file._read_all, threading.Thread

    def blocking(fd: int, scan: object) -> None:
        opened.append(fd)
        os.read(silent, 1)  # blocks until the test closes the pipe
        real_read(fd, scan)  # type: ignore[arg-type]

    def recorded(*args: Any, **kwargs: Any) -> threading.Thread:
        readers.append(real_thread(*args, **kwargs))
        return readers[-1]

    monkeypatch.setattr(prediction_file, "_read_all", blocking)
    monkeypatch.setattr(prediction_file.threading, "Thread", recorded)
    monkeypatch.setattr(prediction_file, "_local_devices", frozenset)  # as on a network mount
    try:
        with pytest.raises(prediction_file.PredictionRefused, match="did not finish within"):
            prediction_file.read_prediction_text(
                tmp_path / "local001.csv", tmp_path, ReadLimits(seconds=0.2)
            )
        (fd,) = opened
        os.fstat(fd)  # still the reader's while its read blocks
    finally:
        os.close(writer)
    readers[0].join(5)
    os.close(silent)
    assert not readers[0].is_alive()
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(fd)  # closed by the reader, not leaked


# -- odd bytes: the official verdict is the reference's, every failure has a reason ------------

ODD = {
    "empty": b"",
    "newline only": b"\n",
    "blank line": b" \n",
    "BOM": b"\xef\xbb\xbfa,b\n1,2\n",
    "NUL in a cell": b"a,b\n1\x00,2\n",
    "NUL header": b"\x00" * 64,
    "invalid UTF-8": b"a,b\n\xff,2\n",
    "UTF-16": "a,b\n1,2\n".encode("utf-16"),
    "lone quote": b'"',
    "open quote": b'a,b\n"1,2\n',
    "CR only": b"a,b\r1,2\r",
    "CRLF": b"a,b\r\n1,2\r\n",
    "duplicate names": (",".join(["a"] * 3000) + "\n" + ",".join(["1"] * 3000) + "\n").encode(),
    "too many fields": b"a,b\n1,2,3,4\n",
    "too few fields": b"a,b\n1\n",
    "header only": b"a,b\n",
    "binary": bytes(range(256)) * 4,
}


@pytest.mark.parametrize("name", list(ODD))
def test_odd_bytes_score_as_the_reference_with_a_reason(tmp_path: Path, name: str) -> None:
    from bench.official_baseline import score_instance

    results = _eval_folder(tmp_path, {"local001": ODD[name]})
    result = results["local001"]
    spec = {"condition_cols": [], "ignore_order": True}
    gold_dir = str(tmp_path / "gold" / "exec_result")
    pred_path = str(tmp_path / "pred" / "local001.csv")
    assert result.official_score == score_instance(pred_path, gold_dir, "local001", spec, "lite")
    if result.score != 1:
        assert result.error and result.message, result


def _score_as_nobody(pred: Path, gold: Path, out: Path) -> None:
    """In a child process: drop root (which reads any file), then score."""
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)
    results = evaluate_spider2(pred, benchmark="spider2-lite", gold_dir=gold, workers=1)
    out.write_text(json.dumps({r.instance_id: [r.error, r.message] for r in results}))


def test_permission_denied_is_a_bad_prediction_file(tmp_path: Path) -> None:
    import multiprocessing
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="querybench-perm-"))  # readable by the dropped user
    try:
        root.chmod(0o777)
        gold = make_gold(root, {"local001.csv": b"a\n1\n", "local002.csv": b"a\n1\n"})
        pred = root / "pred"
        pred.mkdir()
        for path in [pred, gold, gold / "exec_result", *gold.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        (pred / "local001.csv").write_text("a\n1\n")
        (pred / "local001.csv").chmod(0)
        (pred / "local002.csv").write_text("a\n1\n")
        (pred / "local002.csv").chmod(0o644)
        out = root / "out.json"
        out.touch()
        out.chmod(0o666)
        child = multiprocessing.get_context("fork").Process(
            target=_score_as_nobody, args=(pred, gold, out)
        )
        child.start()
        child.join(120)
        assert child.exitcode == 0
        got = json.loads(out.read_text())
    finally:
        import shutil

        shutil.rmtree(root)
    assert got["local002"] == [None, None]
    assert got["local001"][0] == "bad_prediction_file"
    assert "ermission denied" in got["local001"][1]


def test_sql_mode_reads_sql_files_as_untrusted_and_never_writes_through_a_link(
    tmp_path: Path,
) -> None:
    gold, pred, run = _sql_setup(tmp_path)
    (gold / "sql").mkdir()
    (gold / "sql" / "local001.sql").write_text("SELECT x FROM t")
    os.symlink(gold / "sql" / "local001.sql", pred / "local001.sql")  # the gold's own answer
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    os.symlink(victim, pred / "local002.csv")  # where write_csv puts the result
    results = run(write_csv=True)
    assert results["local001"].error == "bad_prediction_file"
    assert "gold folder" in str(results["local001"].message)
    assert results["local002"].score == 1
    assert victim.read_text() == "keep me"
    assert not (pred / "local002.csv").is_symlink()
    assert (pred / "local002.csv").read_text() == "x\n1\n"


def test_sql_mode_results_are_bounded_like_files(tmp_path: Path) -> None:
    _gold, pred, run = _sql_setup(tmp_path)
    (pred / "local001.sql").write_text("SELECT x, x, x FROM t")
    results = run(limits=ReadLimits(max_columns=2))
    assert results["local001"].error == "too_large"
    assert "3 columns (limit 2)" in str(results["local001"].message)
    assert results["local002"].score == 1


def _forty_right_answers(tmp_path: Path) -> tuple[list[str], Path, Path]:
    """40 one-cell tasks and a predictions folder answering each right."""
    ids = [f"local{i:03d}" for i in range(40)]
    gold = make_gold(tmp_path, {f"{i}.csv": b"a\n1\n" for i in ids})
    pred = tmp_path / "pred"
    pred.mkdir()
    for iid in ids:
        (pred / f"{iid}.csv").write_text("a\n1\n")
    return ids, gold, pred


def test_a_scoring_worker_that_dies_fails_only_its_own_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker process killed mid-chunk (the OOM killer, a crash in a C extension) is
    # simulated by the process exiting for real when it reaches local007.
    from querybench.evaluation.spider2 import evaluate as spider2_eval

    ids, gold, pred = _forty_right_answers(tmp_path)
    real = spider2_eval._score_ids

    def dying(job: object, chunk: list[str]) -> object:
        if "local007" in chunk:
            os._exit(9)
        return real(job, chunk)  # type: ignore[arg-type]

    monkeypatch.setattr(spider2_eval, "_score_ids", dying)
    monkeypatch.setattr(spider2_eval, "POOL_MIN_BYTES", 0)  # these tiny files, on workers
    results = by_id(evaluate_spider2(pred, benchmark="spider2-lite", gold_dir=gold, workers=2))
    assert set(results) == set(ids)
    assert results["local007"].error == "scorer_error"
    assert "process died" in str(results["local007"].message)
    assert all(results[i].score == 1 for i in ids if i != "local007")


def _cold_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """40 predictions of 128 KiB (5 MiB: under `POOL_MIN_BYTES`), and an empty cache."""
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    ids = [f"local{i:03d}" for i in range(40)]
    pred = tmp_path / "pred"
    pred.mkdir()
    for k, iid in enumerate(ids):
        (pred / f"{iid}.csv").write_bytes(b"a\n" + b"%07d\n" % k * 16384)
    return pred, ids


def test_a_cold_run_takes_an_idle_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from querybench.evaluation.spider2 import evaluate as spider2_eval

    pred, ids = _cold_folder(tmp_path, monkeypatch)
    monkeypatch.setattr(spider2_eval, "_idle_core", lambda: True)
    assert spider2_eval._worth_a_pool(pred, ids)
    monkeypatch.setattr(spider2_eval, "_idle_core", lambda: False)  # both cores busy
    assert not spider2_eval._worth_a_pool(pred, ids)


def test_a_warm_run_stays_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from querybench.evaluation.spider2 import csv_cache
    from querybench.evaluation.spider2 import evaluate as spider2_eval

    pred, ids = _cold_folder(tmp_path, monkeypatch)
    monkeypatch.setattr(spider2_eval, "_idle_core", lambda: True)
    for path in sorted(pred.iterdir()):
        csv_cache.parse(path.read_bytes(), path.name, "prediction")
    assert not spider2_eval._worth_a_pool(pred, ids)
    monkeypatch.setenv("QUERYBENCH_CSV_CACHE", "0")  # no cache: nothing says it is cold
    assert not spider2_eval._worth_a_pool(pred, ids)


def test_the_cold_probe_never_waits_on_a_fifo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from querybench.evaluation.spider2 import evaluate as spider2_eval

    pred, ids = _cold_folder(tmp_path, monkeypatch)
    monkeypatch.setattr(spider2_eval, "_idle_core", lambda: True)
    for iid in (ids[0], ids[20], ids[-1]):  # the three it reads
        (pred / f"{iid}.csv").unlink()
        os.mkfifo(pred / f"{iid}.csv")
    assert not spider2_eval._worth_a_pool(pred, ids)  # returns, and cannot tell: no pool


def test_the_idle_core_check_reads_the_instant_count(monkeypatch: pytest.MonkeyPatch) -> None:
    from querybench.evaluation.spider2 import evaluate as spider2_eval

    real_open = open

    def loadavg(running: int) -> Callable[..., Any]:
        def fake(path: Any, *args: Any, **kwargs: Any) -> Any:
            if path == "/proc/loadavg":
                return io.BytesIO(b"9.00 9.00 9.00 %d/300 4242\n" % running)
            return real_open(path, *args, **kwargs)

        return fake

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(spider2_eval.time, "sleep", lambda s: None)
    monkeypatch.setattr("builtins.open", loadavg(1))  # only this process runs
    assert spider2_eval._idle_core()
    monkeypatch.setattr("builtins.open", loadavg(2))  # another runnable thread, all along
    assert not spider2_eval._idle_core()


def test_a_moment_of_another_runnable_thread_leaves_the_core_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kernel thread writing back files just written (a new submission) is runnable in about
    one reading of thirty: a cold run then still takes its pool (in-process it took 1.2 s
    against 0.7 s), as the next reading, a millisecond on, finds the core free."""
    from querybench.evaluation.spider2 import evaluate as spider2_eval

    real_open = open
    counts = iter([2, 1])
    slept: list[float] = []

    def fake(path: Any, *args: Any, **kwargs: Any) -> Any:
        if path == "/proc/loadavg":
            return io.BytesIO(b"0.10 0.10 0.10 %d/300 4242\n" % next(counts))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(spider2_eval.time, "sleep", slept.append)
    monkeypatch.setattr("builtins.open", fake)
    assert spider2_eval._idle_core()
    assert len(slept) == 1 and slept[0] <= 0.002


@pytest.mark.parametrize(
    "bounds", [{"max_bytes": 0}, {"max_columns": -5}, {"max_cells": 0}, {"seconds": 0.0}]
)
def test_read_limits_below_their_least_value_are_refused_by_the_library(
    bounds: dict[str, float],
) -> None:
    (name,) = bounds
    with pytest.raises(ValueError, match=f"ReadLimits.{name} must be"):
        ReadLimits(**bounds)  # type: ignore[arg-type]


def test_a_pool_broken_while_its_chunks_are_sent_costs_no_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker that dies at once breaks the pool before the parent has sent every chunk:
    # `submit` itself raises, and the chunks not sent are scored like a dead worker's.
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from querybench.evaluation.spider2 import evaluate as spider2_eval

    ids, gold, pred = _forty_right_answers(tmp_path)
    pools: list[object] = []

    class BreaksOnItsSecondChunk(ProcessPoolExecutor):
        def submit(self, *args: Any, **kwargs: Any) -> Any:
            pools.append(self)
            if pools.count(self) == 2 and pools[0] is self:
                raise BrokenProcessPool("a child process terminated abruptly")
            return super().submit(*args, **kwargs)

    monkeypatch.setattr(spider2_eval, "ProcessPoolExecutor", BreaksOnItsSecondChunk)
    monkeypatch.setattr(spider2_eval, "POOL_MIN_BYTES", 0)  # these tiny files, on workers
    results = by_id(evaluate_spider2(pred, benchmark="spider2-lite", gold_dir=gold, workers=2))
    assert set(results) == set(ids)
    assert all(results[i].score == 1 for i in ids)


def test_the_workers_jobs_hold_the_biggest_predictions_first(tmp_path: Path) -> None:
    """Jobs go out biggest first, each bounded by tasks and bytes, so the small ones left at
    the end even out the workers' finish; every task is in exactly one job."""
    from querybench.evaluation.spider2 import evaluate as spider2_eval

    sizes = {f"t{i:03d}": (i * 7919) % 5000 for i in range(60)}
    sizes["t007"] = spider2_eval.CHUNK_BYTES * 2  # a file bigger than a job's bytes: alone
    for name, size in sizes.items():
        (tmp_path / f"{name}.csv").write_bytes(b"x" * size)
    ids = [*sorted(sizes), "absent"]
    chunks = spider2_eval._chunks(tmp_path, ids)
    assert sorted(i for chunk in chunks for i in chunk) == sorted(ids)
    assert chunks[0] == ["t007"]
    order = [sizes.get(i, 0) for chunk in chunks for i in chunk]
    assert order == sorted(order, reverse=True)
    assert all(len(chunk) <= spider2_eval._CHUNK for chunk in chunks)
    for chunk in chunks:  # a job is closed once its bytes reach the bound
        assert sum(sizes.get(i, 0) for i in chunk[:-1]) < spider2_eval.CHUNK_BYTES
