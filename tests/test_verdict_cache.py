"""The verdict store answers a re-score with the very results scoring gives, or scores again:
an edit in place, a new eval config or scorer, a damaged store, concurrent runs."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from querybench.evaluation.record import InstanceResult
from querybench.evaluation.spider2 import csv_cache, verdict_cache
from querybench.evaluation.spider2 import strict as spider2_strict
from querybench.evaluation.spider2.evaluate import Scoring, evaluate_spider2
from querybench.evaluation.spider2.gold import Spider2Gold
from tests.test_import_graph import evaluation_modules_reached

REPO = Path(__file__).resolve().parent.parent

# instance id -> (eval config fields, gold files, prediction bytes or None for none)
CASES: dict[str, tuple[dict[str, Any], dict[str, bytes], bytes | None]] = {
    "local001": ({}, {"": b"a,b\n1,x\n2,y\n"}, b"a,b\n1,x\n2,y\n"),  # a pass
    "local002": ({"ignore_order": True}, {"": b"a\n1\n2\n"}, b"a\n2\n1\n"),  # a pass, reordered
    "local003": ({}, {"": b"a,b\n1,x\n"}, b"a,b\n5,x\n"),  # wrong_result, with a detail
    "local004": ({}, {"_a": b"a\n1\n", "_b": b"a\n2\n"}, b"a\n2\n"),  # its second alternative
    "local005": ({}, {"": b"a\n1\n"}, None),  # missing_prediction
    "local006": ({}, {"": b"a\n1\n"}, b""),  # an empty prediction: bad_prediction_file
    "local007": ({"condition_cols": [5]}, {"": b"a\n1\n"}, b"a\n1\n"),  # official IndexError
    "local008": ({}, {"": b""}, b"a\n1\n"),  # an unreadable gold: gold_error, never stored
}


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("QUERYBENCH_CSV_CACHE", raising=False)
    monkeypatch.delenv("QUERYBENCH_VERDICT_CACHE", raising=False)


def _folders(root: Path) -> tuple[Path, Path]:
    """A spider2-lite gold folder of `CASES` and its predictions folder."""
    gold, preds = root / "gold", root / "preds"
    (gold / "exec_result").mkdir(parents=True)
    preds.mkdir()
    lines = []
    for instance_id, (config, golds, prediction) in CASES.items():
        lines.append(json.dumps({"instance_id": instance_id, "toks": 10, **config}))
        for suffix, data in golds.items():
            (gold / "exec_result" / f"{instance_id}{suffix}.csv").write_bytes(data)
        if prediction is not None:
            (preds / f"{instance_id}.csv").write_bytes(prediction)
    (gold / "spider2lite_eval.jsonl").write_text("\n".join(lines) + "\n")
    return gold, preds


def _score(gold: Path, preds: Path, scoring: Scoring = "official") -> list[InstanceResult]:
    return evaluate_spider2(
        preds, benchmark="spider2-lite", gold_dir=gold, workers=1, scoring=scoring
    )


def _lines(results: list[InstanceResult]) -> list[str]:
    return [json.dumps(r.to_json()) for r in results]


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names `csv_cache.parse_table` is asked for from now on (it still parses)."""
    asked: list[str] = []
    parse = csv_cache.parse_table

    def counted(
        data: Any, name: str, namespace: csv_cache.Namespace, digest: Any = None, keep: bool = True
    ) -> Any:
        asked.append(name)
        return parse(data, name, namespace, digest, keep)

    monkeypatch.setattr(csv_cache, "parse_table", counted)
    return asked


def _keys() -> list[str]:
    path = verdict_cache.store_path()
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(path)) as db:
        return sorted(key for (key,) in db.execute("SELECT key FROM sealed"))


def _entries_count() -> int:
    return len(_keys())


def test_a_warm_re_score_gives_the_cold_results_and_parses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gold, preds = _folders(tmp_path)
    cold = _score(gold, preds)
    errors = {r.instance_id: r.error for r in cold}
    assert errors == {
        "local001": None,
        "local002": None,
        "local003": "wrong_result",
        "local004": None,
        "local005": "missing_prediction",
        "local006": "bad_prediction_file",
        "local007": "gold_error",
        "local008": "gold_error",
    }
    assert cold[2].detail is not None and cold[2].detail.gold_shapes  # a detail to round-trip
    asked = _count_parses(monkeypatch)
    warm = _score(gold, preds)
    assert _lines(warm) == _lines(cold)
    assert warm == cold
    # only what the store may not answer is parsed: the empty prediction, the unreadable gold
    unanswered = ["local006.csv", "local008.csv", str(gold / "exec_result/local008.csv")]
    assert sorted(asked) == sorted(unanswered)
    strict = _score(gold, preds, "strict")  # the other scoring, from the same entries
    assert [r.score for r in strict] == [r.strict_score for r in cold]
    assert len(asked) == 6


def test_only_what_the_comparison_decided_is_stored(tmp_path: Path) -> None:
    gold, preds = _folders(tmp_path)
    _score(gold, preds)
    # local001-004 and 007 (the official scorer's own error); not the missing, the
    # unparsable prediction or the unreadable gold
    assert _entries_count() == 5


def _parsed_predictions() -> int:
    path = csv_cache.store_path("prediction")
    if not path.exists():
        return 0
    with contextlib.closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT count(*) FROM sealed").fetchone()[0])


def test_a_prediction_whose_verdicts_are_kept_leaves_no_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verdict store answers its re-score, so its parse is not stored too (an entry and a
    write per file, a twentieth of a cold run); with the verdict store off, it is."""
    gold, preds = _folders(tmp_path)
    expected = _lines(_score(gold, preds))
    assert _parsed_predictions() == 0
    assert _lines(_score(gold, preds)) == expected
    monkeypatch.setenv("QUERYBENCH_VERDICT_CACHE", "0")
    assert _lines(_score(gold, preds)) == expected
    assert _parsed_predictions() == 5  # local001-004 and 007 (008 has the same bytes)


def test_a_scorer_error_is_not_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gold, preds = _folders(tmp_path)
    expected = _lines(_score_without_store(gold, preds))

    def broken(*args: Any) -> bool:
        raise RuntimeError("a bug of the moment")

    with monkeypatch.context() as patched:
        patched.setattr(spider2_strict, "strict_table_match", broken)
        results = _score(gold, preds, "strict")
    assert {r.error for r in results if r.instance_id == "local001"} == {"scorer_error"}
    assert _entries_count() == 1  # local007: its strict verdict needs no comparison
    assert _lines(_score(gold, preds)) == expected


@pytest.mark.parametrize("which", ["prediction", "gold"])
def test_a_file_edited_in_place_same_size_and_mtime_is_scored_again(
    tmp_path: Path, which: str
) -> None:
    gold, preds = _folders(tmp_path)
    assert _score(gold, preds)[0].score == 1.0
    path = preds / "local001.csv" if which == "prediction" else gold / "exec_result/local001.csv"
    before = path.stat()
    with path.open("r+b") as f:  # the same inode, size and mtime, other bytes
        f.write(b"a,b\n7")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    assert _score(gold, preds)[0].error == "wrong_result"


def test_files_swapped_between_instances_are_scored_again(tmp_path: Path) -> None:
    gold, preds = _folders(tmp_path)
    _score(gold, preds)
    one, three = preds / "local001.csv", preds / "local003.csv"
    a, b = one.read_bytes(), three.read_bytes()
    one.write_bytes(b)
    three.write_bytes(a)
    results = {r.instance_id: r.error for r in _score(gold, preds)}
    assert results["local001"] == "wrong_result"
    assert results["local003"] == "wrong_result"
    fresh = {r.instance_id: r.error for r in _score_without_store(gold, preds)}
    assert results == fresh


def _score_without_store(gold: Path, preds: Path) -> list[InstanceResult]:
    with pytest.MonkeyPatch.context() as off:
        off.setenv("QUERYBENCH_VERDICT_CACHE", "0")
        return _score(gold, preds)


def test_a_changed_eval_config_is_scored_again(tmp_path: Path) -> None:
    gold, preds = _folders(tmp_path)
    assert _score(gold, preds)[1].score == 1.0  # local002: reordered rows, ignore_order
    config = gold / "spider2lite_eval.jsonl"
    config.write_text(config.read_text().replace('"ignore_order": true', '"ignore_order": false'))
    assert _score(gold, preds)[1].error == "wrong_result"


def test_a_changed_scorer_source_or_library_is_a_new_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "scorer_stand_in.py"
    module.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(verdict_cache, "SCORER_MODULES", ("scorer_stand_in",))

    def identity() -> bytes | None:
        verdict_cache.scorer_identity.cache_clear()
        return verdict_cache.scorer_identity()

    first = identity()
    module.write_text("X = 2\n")  # the same size
    second = identity()
    monkeypatch.setattr(verdict_cache, "LIBRARIES", ("numpy", "pytest"))
    third = identity()
    assert None not in (first, second, third)
    assert len({first, second, third}) == 3
    monkeypatch.setattr(verdict_cache, "SCORER_MODULES", ("no_such_scorer_module",))
    assert identity() is None  # no source, no store
    verdict_cache.scorer_identity.cache_clear()


def test_the_scorer_identity_names_the_versions_importlib_metadata_reads() -> None:
    """The same key as `importlib.metadata.version` of each library makes (stores written
    before stay valid), read without importing it (`email`: a tenth of a small eval)."""
    import importlib.metadata

    from querybench import store

    expected = hashlib.sha256()
    assert store.add_sources(expected, verdict_cache.SCORER_MODULES)
    for library in verdict_cache.LIBRARIES:
        expected.update(f"{library} {importlib.metadata.version(library)}\n".encode())
    verdict_cache.scorer_identity.cache_clear()
    assert verdict_cache.scorer_identity() == expected.digest()
    code = (
        "import sys; from querybench.evaluation.spider2 import verdict_cache as v; "
        "v.scorer_identity(); print('importlib.metadata' in sys.modules, 'email' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.split() == ["False", "False"], done.stderr


def test_the_scorer_modules_cover_what_scoring_imports() -> None:
    """Every evaluation module the exec_result scoring reaches (and `errors`) is hashed."""
    reached = evaluation_modules_reached("querybench.evaluation.spider2.evaluate")
    reached |= {"querybench.errors"}
    assert reached - set(verdict_cache.SCORER_MODULES) == set()


def test_switched_off_it_neither_reads_nor_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gold, preds = _folders(tmp_path)
    expected = _lines(_score(gold, preds))
    for name in ("QUERYBENCH_VERDICT_CACHE", "QUERYBENCH_CSV_CACHE"):
        with monkeypatch.context() as off:
            off.setenv(name, "0")
            asked = _count_parses(off)
            assert _lines(_score(gold, preds)) == expected
            assert "local001.csv" in asked
    verdict_cache.store_path().unlink()
    monkeypatch.setenv("QUERYBENCH_VERDICT_CACHE", "off")
    _score(gold, preds)
    assert not verdict_cache.store_path().exists()


class _Hashed:
    """hashlib.sha256, keeping every input it is given."""

    inputs: ClassVar[list[bytes]] = []

    def __init__(self, data: Any = b"") -> None:
        self.inner = _SHA256(data)
        _Hashed.inputs.append(bytes(data))

    def update(self, data: Any) -> None:
        self.inner.update(data)
        _Hashed.inputs.append(bytes(data))

    def digest(self) -> bytes:
        return self.inner.digest()

    def hexdigest(self) -> str:
        return self.inner.hexdigest()


_SHA256 = hashlib.sha256


def test_a_cold_score_hashes_each_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verdict key and the parsed-CSV keys share each file's sha256 (hashing 14 MB of
    predictions twice was a cold run's waste)."""
    gold, preds = tmp_path / "gold", tmp_path / "preds"
    (gold / "exec_result").mkdir(parents=True)
    preds.mkdir()
    (gold / "spider2lite_eval.jsonl").write_text('{"instance_id": "local001", "toks": 10}\n')
    gold_bytes, pred_bytes = b"gold_column\n11111\n", b"predicted_column\n22222\n"
    (gold / "exec_result" / "local001.csv").write_bytes(gold_bytes)
    (preds / "local001.csv").write_bytes(pred_bytes)
    monkeypatch.setattr(_Hashed, "inputs", [])
    monkeypatch.setattr(hashlib, "sha256", _Hashed)
    (result,) = _score(gold, preds)
    assert result.error == "wrong_result"
    for data in (gold_bytes, pred_bytes):
        assert sum(data in hashed for hashed in _Hashed.inputs) == 1


def test_the_scorer_parses_the_gold_bytes_the_key_was_made_of(tmp_path: Path) -> None:
    """A gold file rewritten between hashing and parsing cannot put its verdict under the
    key of the bytes hashed: the bytes hashed are the ones parsed."""
    gold, _ = _folders(tmp_path)
    frames, _single = Spider2Gold(gold, "spider2-lite").load_results("local001", [b"z\n9\n"])
    assert list(frames[0].columns) == ["z"]


_RUN = """
import json, sys
from querybench.evaluation.spider2.evaluate import Scoring, evaluate_spider2
results = evaluate_spider2(sys.argv[1], benchmark="spider2-lite", gold_dir=sys.argv[2], workers=1)
print(json.dumps({"lines": [r.to_json() for r in results],
                  "loaded": [m for m in ("pandas", "numpy", "pyarrow") if m in sys.modules]}))
"""


def _run(gold: Path, preds: Path, script: str = _RUN) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(preds), str(gold)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_a_warm_run_imports_no_pandas(tmp_path: Path) -> None:
    gold, preds = _folders(tmp_path)
    for name in ("local005", "local006", "local008"):  # what the store cannot answer
        (preds / f"{name}.csv").unlink(missing_ok=True)
        (gold / "exec_result" / f"{name}.csv").write_bytes(b"a\n1\n")
    (preds / "local008.csv").write_bytes(b"a\n1\n")
    cold = _run(gold, preds)
    assert cold["loaded"] == ["pandas", "numpy", "pyarrow"]  # the check sees them
    warm = _run(gold, preds)
    assert warm["lines"] == cold["lines"]
    assert warm["loaded"] == []


_RUN_IDLE = """
import json, sys
from querybench.evaluation.spider2 import evaluate as spider2_eval
spider2_eval._idle_core = lambda: True  # a core free: a cold run of this size takes a pool
pools = []
real = spider2_eval.ProcessPoolExecutor
spider2_eval.ProcessPoolExecutor = lambda *a, **k: pools.append(1) or real(*a, **k)
results = spider2_eval.evaluate_spider2(
    sys.argv[1], benchmark="spider2-lite", gold_dir=sys.argv[2], workers=2
)
print(json.dumps({"lines": [r.to_json() for r in results], "pools": len(pools),
                  "loaded": [m for m in ("pandas", "numpy", "pyarrow") if m in sys.modules]}))
"""


def test_a_warm_run_on_an_idle_core_starts_no_pool_and_imports_no_pandas(
    tmp_path: Path,
) -> None:
    """40 predictions of 128 KiB: cold, an idle core takes a pool (plain files: NumPy, no
    pandas); warm, the verdict store answers them all, and asking the parsed-CSV cache is not
    needed to say so."""
    gold, preds = tmp_path / "gold", tmp_path / "preds"
    (gold / "exec_result").mkdir(parents=True)
    preds.mkdir()
    lines = []
    for k in range(40):
        data = b"a\n" + b"%07d\n" % k * 16384
        (gold / "exec_result" / f"local{k:03d}.csv").write_bytes(data)
        (preds / f"local{k:03d}.csv").write_bytes(data)
        config = {"condition_cols": [], "ignore_order": True}
        lines.append(json.dumps({"instance_id": f"local{k:03d}", "toks": 1, **config}))
    (gold / "spider2lite_eval.jsonl").write_text("\n".join(lines) + "\n")
    cold = _run(gold, preds, _RUN_IDLE)
    assert cold["pools"] == 1 and cold["loaded"] == ["numpy"]
    warm = _run(gold, preds, _RUN_IDLE)
    assert warm["lines"] == cold["lines"]
    assert [line["score"] for line in warm["lines"]] == [1.0] * 40
    assert warm["pools"] == 0 and warm["loaded"] == []


def test_new_plain_predictions_against_stored_gold_import_no_pandas(tmp_path: Path) -> None:
    """Plain prediction CSVs never seen (no verdict, no parse stored) scored against gold the
    parsed-CSV cache holds: NumPy only, and the verdicts and details of a run that parses the
    gold anew."""
    gold, preds = tmp_path / "gold", tmp_path / "preds"
    (gold / "exec_result").mkdir(parents=True)
    golds = {
        "local001": {"": b"a,b\n1,x\n2,\n3,NA\n"},  # text with gaps beside ints
        "local002": {"_a": b"v\n1.5\n2.25\n", "_b": b"v,w\n1.5,2\n2.25,3\n"},
        "local003": {"": b"name,n\nab,1\ncd,2\n"},
    }
    lines = []
    for instance_id, files in golds.items():
        for suffix, data in files.items():
            (gold / "exec_result" / f"{instance_id}{suffix}.csv").write_bytes(data)
        config = {"condition_cols": [], "ignore_order": True}
        lines.append(json.dumps({"instance_id": instance_id, "toks": 1, **config}))
    (gold / "spider2lite_eval.jsonl").write_text("\n".join(lines) + "\n")

    def submission(salt: str) -> None:
        shutil.rmtree(preds, ignore_errors=True)
        preds.mkdir()
        (preds / "local001.csv").write_bytes(
            b"b,a,s\nx,1,%s\n,2,%s\n,3,%s\n" % ((salt.encode(),) * 3)
        )
        (preds / "local002.csv").write_bytes(b"v,s\n1.5,%s\n2.5,%s\n" % ((salt.encode(),) * 2))
        (preds / "local003.csv").write_bytes(
            b"name,n,s\ncd,2,%s\nab,1,%s\n" % ((salt.encode(),) * 2)
        )

    submission("first")
    _run(gold, preds)  # stores every gold alternative's parse
    submission("second")
    warm = _run(gold, preds)
    assert warm["loaded"] == ["numpy"]
    shutil.rmtree(tmp_path / "cache")
    cold = _run(gold, preds)
    assert warm["lines"] == cold["lines"]
    scores = [(line["official_score"], line["strict_score"]) for line in warm["lines"]]
    assert scores == [(1.0, 1.0), (0.0, 0.0), (1.0, 1.0)]


def test_a_worker_sends_back_the_digests_of_the_files_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a worker process hashed for its verdict keys (the gold and the predictions), the
    parent's manifest need not."""
    from querybench import file_digests
    from querybench.evaluation.prediction_file import ReadLimits
    from querybench.evaluation.spider2 import evaluate as spider2_eval

    gold, preds = _folders(tmp_path)
    monkeypatch.setattr(file_digests, "_KNOWN", {})  # a new process: nothing read yet
    job = spider2_eval._Job(Spider2Gold(gold, "spider2-lite"), preds, "official", ReadLimits())
    spider2_eval._adopt_job(job)
    results, known = spider2_eval._score_chunk(["local001", "local002"])
    assert [r.instance_id for r in results] == ["local001", "local002"]
    ids = ("local001", "local002")
    golds = sorted(p for p in (gold / "exec_result").iterdir() if p.name[:8] in ids)
    files = [*golds, *(preds / f"{i}.csv" for i in ids)]
    digests = {
        file_digests._identity(os.stat(p)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in files
    }
    assert dict(known) == digests
    monkeypatch.setattr(file_digests, "_KNOWN", {})  # the parent, which read none of them
    file_digests.adopt(known)
    monkeypatch.setattr(hashlib, "sha256", None)  # and hashes none of them again
    assert [file_digests.file_sha256(p) for p in files] == [digests[i] for i in digests]
