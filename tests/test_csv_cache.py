"""The parsed-CSV cache gives back exactly the frame `read_result_csv` parses, or parses again."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import io
import math
import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from querybench import store
from querybench.evaluation.spider2 import csv_cache
from querybench.evaluation.spider2.result_csv import read_result_csv
from querybench.evaluation.spider2.table import Table
from tests.conftest import require_data


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("QUERYBENCH_CSV_CACHE", raising=False)
    # this process's parses start empty too: a frame another test keeps alive is not shared
    monkeypatch.setattr(csv_cache, "_parsed", type(csv_cache._parsed)())
    monkeypatch.setattr(csv_cache, "_parsed_frames", type(csv_cache._parsed_frames)())
    return tmp_path / "cache"


def _entries(namespace: csv_cache.Namespace) -> list[str]:
    """The keys in the namespace's store."""
    path = csv_cache.store_path(namespace)
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(path)) as db:
        return sorted(key for (key,) in db.execute("SELECT key FROM sealed"))


def _entry(namespace: csv_cache.Namespace, key: str) -> bytes:
    with contextlib.closing(sqlite3.connect(csv_cache.store_path(namespace))) as db:
        return bytes(db.execute("SELECT entry FROM sealed WHERE key = ?", (key,)).fetchone()[0])


def _replace(namespace: csv_cache.Namespace, key: str, data: bytes) -> None:
    with contextlib.closing(sqlite3.connect(csv_cache.store_path(namespace))) as db, db:
        db.execute("UPDATE sealed SET entry = ? WHERE key = ?", (data, key))


def _stored_bytes(namespace: csv_cache.Namespace) -> int:
    with contextlib.closing(sqlite3.connect(csv_cache.store_path(namespace))) as db:
        return int(db.execute("SELECT sum(length(entry)) FROM sealed").fetchone()[0] or 0)


def _same_cell(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


def assert_identical(parsed: pd.DataFrame, cached: pd.DataFrame) -> None:
    """Same names (repeats included), index, dtypes, and every cell of the same type and value."""
    assert list(cached.columns) == list(parsed.columns)
    assert cached.columns.dtype == parsed.columns.dtype
    assert cached.index.equals(parsed.index) and type(cached.index) is type(parsed.index)
    assert list(cached.dtypes) == list(parsed.dtypes)
    for j in range(parsed.shape[1]):
        want, got = parsed.iloc[:, j].to_numpy(), cached.iloc[:, j].to_numpy()
        if want.dtype == object:
            assert all(_same_cell(a, b) for a, b in zip(want.tolist(), got.tolist(), strict=True))
        else:
            assert want.tobytes() == got.tobytes()  # NaN and -0.0 bit for bit


def _round_trip(data: bytes) -> tuple[pd.DataFrame, pd.DataFrame]:
    first = csv_cache.parse(data, "x.csv", "prediction")  # parsed, then stored
    second = csv_cache.parse(data, "x.csv", "prediction")  # from the cache
    return first, second


@pytest.mark.parametrize("variant", ["lite", "snow"])
def test_every_gold_csv_round_trips_exactly(variant: str) -> None:
    gold = require_data("spider2", f"spider2-{variant}", "evaluation_suite", "gold", "exec_result")
    paths = sorted(gold.glob("*.csv"))
    assert len(paths) > 1000
    for path in paths:
        parsed = read_result_csv(path)
        csv_cache.read_result_file(path, "gold")  # stores it
        cached = csv_cache.read_result_file(path, "gold")
        assert isinstance(cached, pd.DataFrame)
        assert_identical(parsed, cached)
    assert len(_entries("gold")) == len({p.read_bytes() for p in paths})


@pytest.mark.parametrize(
    "text",
    [
        "a,a,b\n1,2,x\n3,4,y\n",  # repeated names (pandas renames: a, a.1)
        "n,t\n1,x\n,\n2.5,NA\n",  # gaps: NaN in numbers and in text
        "mixed\n1\nx\nTrue\n\n-0.0\n",  # one object column of mixed cells
        "b,c\nTrue,False\nFalse,True\n",  # booleans
        "big\n18446744073709551615\n1\n",  # uint64
        "huge\n123456789012345678901234567890\n",  # beyond any integer dtype
        "only,header\n",  # no rows
        "x\n-0.0\n0.0\nnan\ninf\n",
        'q\n"a,b"\n"line\nbreak"\n',
        "Unnamed: 0,v\n0,1\n",
    ],
)
def test_odd_tables_round_trip_exactly(text: str) -> None:
    data = text.encode()
    first, second = _round_trip(data)
    assert len(_entries("prediction")) == 1
    expected = read_result_csv(io.BytesIO(data))
    assert_identical(expected, first)
    assert_identical(expected, second)


def test_an_implicit_index_is_not_cached_but_parsed_right() -> None:
    data = b"a,b\n1,2,3\n4,5,6\n"  # more fields than names: the first becomes the index
    _, second = _round_trip(data)
    assert _entries("prediction") == []
    pd.testing.assert_frame_equal(second, read_result_csv(io.BytesIO(data)))


def test_unreadable_files_fail_every_time_and_are_not_cached() -> None:
    for data in (b"", b"\xff\xfe,\n1,2\n"):
        for _ in range(2):
            with pytest.raises(Exception) as caught:
                csv_cache.parse(data, "bad.csv", "prediction")
            assert "bad.csv" in str(caught.value)
    assert _entries("prediction") == []


def _spy_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every parse of a file's bytes (plain ones by `simple_csv`, the others by pandas)."""
    calls: list[str] = []
    real = csv_cache._read_table

    def counting(data: Any, name: str) -> Table:
        calls.append(str(name))
        return real(data, name)

    monkeypatch.setattr(csv_cache, "_read_table", counting)
    return calls


def test_a_warm_read_parses_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy_parses(monkeypatch)
    csv_cache.parse(b"a\n1\n", "p.csv", "prediction")
    csv_cache.parse(b"a\n1\n", "q.csv", "prediction")  # same bytes, another name
    assert calls == ["p.csv"]


def test_a_planted_pickle_runs_no_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    data = b"a\n1\n"
    csv_cache.parse(data, "p.csv", "prediction")
    (key,) = _entries("prediction")
    marker = tmp_path / "ran"
    payload = pickle.dumps(_Planted(str(marker)))
    _replace("prediction", key, store.seal(key, csv_cache.MAGIC + payload))  # whole, planted
    frame = csv_cache.parse(data, "p.csv", "prediction")
    assert not marker.exists()
    assert frame.iloc[0, 0] == 1


class _Planted:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def test_a_new_parser_version_is_a_new_key(monkeypatch: pytest.MonkeyPatch) -> None:
    csv_cache.parse(b"a\n1\n", "p.csv", "prediction")
    monkeypatch.setattr(csv_cache, "_key_prefix", lambda: b"result_csv 999 pandas x numpy y\n")
    calls = _spy_parses(monkeypatch)
    csv_cache.parse(b"a\n1\n", "p.csv", "prediction")
    assert calls == ["p.csv"]
    assert len(_entries("prediction")) == 2


def test_a_gold_file_edited_in_place_is_parsed_again(tmp_path: Path) -> None:
    path = tmp_path / "g.csv"
    path.write_bytes(b"v\n1\n")
    stat = path.stat()
    assert csv_cache.read_result_file(path, "gold").iloc[0, 0] == 1  # type: ignore[union-attr]
    path.write_bytes(b"v\n2\n")  # same size, same times
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert csv_cache.read_result_file(path, "gold").iloc[0, 0] == 2  # type: ignore[union-attr]


def test_a_missing_gold_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="file not found"):
        csv_cache.read_result_file(tmp_path / "none.csv", "gold")


def test_disabled_it_writes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYBENCH_CSV_CACHE", "0")
    calls = _spy_parses(monkeypatch)
    for _ in range(2):
        csv_cache.parse(b"a\n1\n", "p.csv", "prediction")
    assert calls == ["p.csv", "p.csv"]
    assert not csv_cache.store_path("prediction").exists()


def _parse_all(tables: list[bytes]) -> None:
    for data in tables:
        csv_cache.parse(data, "p", "prediction")


def test_a_prediction_of_its_gold_bytes_is_parsed_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = b"a,b\n1,x\n2,\n"
    gold = tmp_path / "g.csv"
    gold.write_bytes(data)
    calls = _spy_parses(monkeypatch)
    pred = csv_cache.parse(data, "p.csv", "prediction")
    shared = csv_cache.read_result_file(gold, "gold")
    assert calls == ["p.csv"]
    assert shared is pred
    assert_identical(read_result_csv(io.BytesIO(data)), pred)
    assert _entries("gold") == _entries("prediction")  # the next run finds both stored
    monkeypatch.setattr(store, "_stores", {})  # a new process: loaded, not parsed
    csv_cache.read_result_file(gold, "gold")
    assert calls == ["p.csv"]


def test_only_this_process_s_parses_are_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame loaded from one namespace's store is never another namespace's parse."""
    data = b"a\n1\n"
    csv_cache.parse(data, "p.csv", "prediction")
    monkeypatch.setattr(csv_cache, "_parsed", type(csv_cache._parsed)())  # a new process
    monkeypatch.setattr(csv_cache, "_parsed_frames", type(csv_cache._parsed_frames)())
    calls = _spy_parses(monkeypatch)
    held = csv_cache.parse(data, "p.csv", "prediction")  # loaded from the store
    csv_cache.parse(data, "g.csv", "gold")
    assert calls == ["g.csv"]
    assert held.iloc[0, 0] == 1


def test_a_shared_parse_ends_with_its_last_holder(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy_parses(monkeypatch)
    csv_cache.parse(b"a\n1\n", "p.csv", "prediction")  # held by no one
    gc.collect()
    csv_cache.parse(b"a\n1\n", "g.csv", "gold")
    assert calls == ["p.csv", "g.csv"]


def test_is_stored_says_whether_a_file_s_parse_is_there(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_bytes(b"a\n1\n")
    assert csv_cache.is_stored(path, "prediction") is False
    csv_cache.parse(b"a\n1\n", "p.csv", "prediction")
    assert csv_cache.is_stored(path, "prediction") is True
    assert csv_cache.is_stored(path, "gold") is False  # namespaces apart
    (tmp_path / "link.csv").symlink_to(path)
    os.mkfifo(tmp_path / "fifo.csv")
    (tmp_path / "empty.csv").write_bytes(b"")
    for name in ("link.csv", "fifo.csv", "empty.csv", "none.csv"):
        assert csv_cache.is_stored(tmp_path / name, "prediction") is None  # cannot tell


def test_deferred_writes_store_every_entry_when_the_block_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _spy_parses(monkeypatch)
    with csv_cache.deferred_writes():
        for k in range(5):
            csv_cache.parse(b"a\n%d\n" % k, f"{k}.csv", "prediction")
        assert _entries("prediction") == []  # nothing written yet
        gc.collect()  # no parse held: the second read is the pending entry's
        csv_cache.parse(b"a\n3\n", "again.csv", "prediction")
        assert calls == [f"{k}.csv" for k in range(5)]
    assert len(_entries("prediction")) == 5
    monkeypatch.setattr(store, "_stores", {})  # a new process: all five are there
    for k in range(5):
        assert csv_cache.parse(b"a\n%d\n" % k, "p.csv", "prediction").iloc[0, 0] == k
    assert len(calls) == 5


def _key(data: bytes) -> str:
    return csv_cache._key(hashlib.sha256(data).digest())


def _parse_deferred(data: bytes) -> None:
    csv_cache.parse(b"a\n3\n", "c.csv", "prediction")  # not deferred: the parent's switch
    with csv_cache.deferred_writes():
        csv_cache.parse(data, "child.csv", "prediction")


def test_a_shared_parse_stores_the_same_entry_in_both_namespaces(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    built: list[str] = []
    real = csv_cache._payload
    monkeypatch.setattr(csv_cache, "_payload", lambda f, k: built.append(k) or real(f, k))
    with csv_cache.deferred_writes():
        held = csv_cache.parse(b"a,b\n1,x\n", "p.csv", "prediction")
        csv_cache.parse(b"a,b\n1,x\n", "g.csv", "gold")
    assert len(built) == 1  # one entry made, for both
    (key,) = _entries("gold")
    assert _entry("gold", key) == _entry("prediction", key)
    assert held.iloc[0, 1] == "x"


def test_the_key_names_the_pandas_that_parses_without_importing_it() -> None:
    script = (
        "import sys; from querybench.evaluation.spider2 import csv_cache; "
        "print(csv_cache._pandas_version(), 'pandas' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == [pd.__version__, "False"]
