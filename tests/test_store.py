"""The content store's rules, once for every kind of entry kept in it: creation, sealing,
damage, a read-only or unusable folder, concurrent writers, deferred writes, pruning, the
switches."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import multiprocessing
import os
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from querybench import store
from querybench.engines import cache as result_cache
from querybench.evaluation.bird import run_cache as bird_run_cache
from querybench.evaluation.spider2 import csv_cache, verdict_cache

KINDS = [
    result_cache.RESULTS,
    bird_run_cache.RUNS,
    verdict_cache.VERDICTS,
    *csv_cache.KINDS.values(),
]


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    for kind in KINDS:
        for switch in kind.switches:
            monkeypatch.delenv(switch, raising=False)
    monkeypatch.setattr(store, "_stores", {})
    monkeypatch.setattr(store, "_warned", set())
    return tmp_path / "cache"


@pytest.fixture(params=KINDS, ids=lambda kind: kind.file)
def kind(request: pytest.FixtureRequest) -> store.Kind:
    return dataclasses.replace(request.param, batch=1)  # written through, unless deferred


def _opened(kind: store.Kind) -> store.Store:
    kept = store.open_store(kind)
    assert kept is not None
    return kept


def _reopened(kind: store.Kind, monkeypatch: pytest.MonkeyPatch) -> store.Store:
    """The store as a new process sees it (nothing held, the file read again)."""
    monkeypatch.setattr(store, "_stores", {})
    return _opened(kind)


def _rows(kind: store.Kind) -> dict[str, bytes]:
    if not kind.path().exists():
        return {}
    with contextlib.closing(sqlite3.connect(kind.path())) as db:
        return dict(db.execute(f"SELECT key, entry FROM {kind.table}"))


def _replace(kind: store.Kind, key: str, entry: bytes) -> None:
    with contextlib.closing(sqlite3.connect(kind.path())) as db, db:
        db.execute(f"UPDATE {kind.table} SET entry = ? WHERE key = ?", (entry, key))


def test_an_entry_comes_back_as_put(kind: store.Kind, monkeypatch: pytest.MonkeyPatch) -> None:
    _opened(kind).put("k", b"payload")
    kept = _reopened(kind, monkeypatch)
    assert kept.get("k") == b"payload"
    assert kept.has("k") and not kept.has("other")
    assert kept.get("other") is None
    assert kind.path().parent.parent == store.cache_root()


def test_many_entries_come_back_as_put(kind: store.Kind, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = [f"k{i}" for i in range(1200)]  # past one query's bound on parameters
    kept = _opened(kind)
    kept.put_many([(key, key.encode()) for key in keys])
    assert len(_rows(kind)) == 1200  # written at once
    kept.put_many([("held", b"h")])
    wanted = [*keys, "held", "absent"]
    assert kept.get_many(wanted) == {**{key: key.encode() for key in keys}, "held": b"h"}
    kept = _reopened(kind, monkeypatch)
    assert kept.get_many(wanted) == {**{key: key.encode() for key in keys}, "held": b"h"}
    _replace(kind, "k7", b"not an entry")
    assert "k7" not in kept.get_many(["k7", "k8"])


def test_a_held_entry_waits_for_the_next_write(kind: store.Kind) -> None:
    kept = _opened(kind)
    kept.hold("quiet", b"q")
    assert kept.get("quiet") == b"q" and _rows(kind) == {}
    kept.put_many([("loud", b"l")])
    assert set(_rows(kind)) == {"quiet", "loud"}


def test_a_read_makes_no_store(kind: store.Kind) -> None:
    assert store.open_store(kind, create=False) is None
    assert not kind.path().exists()
    _opened(kind).put("k", b"1")
    assert store.open_store(kind, create=False) is _opened(kind)


def test_a_named_root_is_its_own_store(kind: store.Kind, tmp_path: Path) -> None:
    _opened(kind).put("k", b"1")
    elsewhere = store.open_store(kind, tmp_path / "elsewhere")
    assert elsewhere is not None and elsewhere.path == tmp_path / "elsewhere" / kind.file
    assert elsewhere.get("k") is None


def _journal_mode(path: Path) -> str:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return str(db.execute("PRAGMA journal_mode").fetchone()[0])


def _private_files(kind: store.Kind) -> list[str]:
    return [p.name for p in kind.path().parent.iterdir() if p.name.startswith(".")]


def test_a_new_store_is_put_in_place_whole(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Made aside without syncs and linked to its name: no private file left, WAL mode, what
    # was written read back by another process.
    _opened(kind).put("k", b"1")
    assert _private_files(kind) == []
    assert _journal_mode(kind.path()) == "wal"
    assert _reopened(kind, monkeypatch).get("k") == b"1"


def _reopened_entry(kind: store.Kind) -> bytes | None:
    entry = _opened(kind).get("k")
    return None if entry is None else bytes(entry)


def test_a_new_store_removes_the_files_its_earlier_layout_left(tmp_path: Path) -> None:
    kind = store.Kind("k/new.sqlite3", (), max_bytes=1 << 20, retired=("k/old.sqlite3",))
    old = store.cache_root() / "k" / "old.sqlite3"
    old.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        old.with_name(old.name + suffix).write_bytes(b"an earlier version's entries")
    keep = old.with_name("other.sqlite3")
    keep.write_bytes(b"another kind's")
    _opened(kind).put("k", b"1")
    left = {p.name for p in old.parent.iterdir()}
    assert not left & {"old.sqlite3", "old.sqlite3-wal", "old.sqlite3-shm"}
    assert keep.exists() and _reopened_entry(kind) == b"1"


def test_a_store_another_process_linked_first_is_kept(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    other = store.open_store(kind, tmp_path / "other")
    assert other is not None
    other.put("theirs", b"2")
    other.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # all of it in the file copied
    real_link = os.link

    def raced(source: str | Path, target: str | Path) -> None:
        shutil.copy(other.path, target)  # the other process links its store first
        real_link(source, target)

    monkeypatch.setattr(os, "link", raced)
    _opened(kind).put("ours", b"1")
    fresh = _reopened(kind, monkeypatch)
    assert (fresh.get("theirs"), fresh.get("ours")) == (b"2", b"1")
    assert _private_files(kind) == []


def test_where_links_cannot_be_made_sqlite_makes_the_store(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(source: str | Path, target: str | Path) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", refuse)
    _opened(kind).put("k", b"1")
    assert _journal_mode(kind.path()) == "wal"
    assert _reopened(kind, monkeypatch).get("k") == b"1"
    assert _private_files(kind) == []


def test_an_entry_is_its_digest_of_key_and_payload_then_the_payload() -> None:
    entry = store.seal("k", b"payload")
    assert entry[32:] == b"payload"
    assert store.unseal(entry, "k") == b"payload"
    assert store.unseal(entry, "k2") is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b[:-1] + bytes([b[-1] ^ 1]),  # one bit flipped
        lambda b: bytes([b[0] ^ 1]) + b[1:],  # the digest's
        lambda b: b"not an entry",
        lambda b: b"",
    ],
)
def test_a_damaged_entry_is_a_miss_and_a_new_put_mends_it(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch, damage: object
) -> None:
    _opened(kind).put("k", b"payload" * 10)
    assert callable(damage)
    _replace(kind, "k", damage(_rows(kind)["k"]))
    kept = _reopened(kind, monkeypatch)
    assert kept.get("k") is None
    kept.put("k", b"payload" * 10)
    assert _reopened(kind, monkeypatch).get("k") == b"payload" * 10


def test_an_entry_moved_to_another_key_is_refused(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = _opened(kind)
    kept.put("one", b"1")
    kept.put("two", b"2")
    _replace(kind, "one", _rows(kind)["two"])  # a whole entry, another key's
    assert _reopened(kind, monkeypatch).get("one") is None


def test_a_planted_value_of_another_type_is_a_miss(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    _opened(kind).put("k", b"payload")
    with contextlib.closing(sqlite3.connect(kind.path())) as db, db:
        db.execute(f"UPDATE {kind.table} SET entry = 'text', used = 'then'")
    assert _reopened(kind, monkeypatch).get("k") is None


@pytest.mark.parametrize("garbage", [b"not a database at all" * 100, b"\0" * 4096])
def test_a_store_that_is_not_a_database_is_set_aside_and_started_afresh(
    kind: store.Kind, garbage: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    kind.path().parent.mkdir(parents=True)
    kind.path().write_bytes(garbage)
    with caplog.at_level(logging.WARNING, logger="querybench"):
        kept = _opened(kind)
    assert "is damaged" in caplog.text
    assert kind.path().with_name(f"{kind.path().name}.damaged").read_bytes() == garbage
    kept.put("k", b"payload")
    assert kept.get("k") == b"payload"


def test_a_damaged_store_that_cannot_be_set_aside_is_said_once_and_costs_speed(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    kind.path().parent.mkdir(parents=True)
    kind.path().write_bytes(b"not a database at all" * 100)

    def read_only(*args: object) -> None:
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr(store.os, "replace", read_only)
    with caplog.at_level(logging.WARNING, logger="querybench"):
        assert store.open_store(kind) is None
        assert store.open_store(kind) is None
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and f"delete {kind.path()} to start afresh" in said[0], said


def test_a_cache_folder_that_is_a_file_is_said_once(
    kind: store.Kind, _own_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _own_cache.write_text("")
    with caplog.at_level(logging.WARNING, logger="querybench"):
        assert store.open_store(kind) is None
        assert store.open_store(kind) is None
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "set QUERYBENCH_CACHE to a writable folder" in said[0], said


def test_a_read_only_store_serves_its_entries_and_drops_new_ones(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _opened(kind).put("k", b"payload")
    kept = _reopened(kind, monkeypatch)
    kept.db.execute(f"UPDATE {kind.table} SET used = 0")  # unused for long: a read marks it used
    kept.db.execute("PRAGMA query_only = ON")  # a shared cache nobody may write
    assert kept.get("k") == b"payload"
    with caplog.at_level(logging.WARNING, logger="querybench"):
        kept.put("new", b"x")
    assert "unusable, scoring without it" in caplog.text
    assert kept.pending == {} and set(_rows(kind)) == {"k"}


def test_concurrent_threads_writing_one_key_leave_one_whole_entry(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = b"x" * 100_000
    kept = _opened(kind)
    threads = [threading.Thread(target=kept.put, args=("k", payload)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert list(_rows(kind)) == ["k"]
    assert _reopened(kind, monkeypatch).get("k") == payload


def _put_all(kind: store.Kind, keys: list[str]) -> None:
    kept = store.open_store(kind)
    assert kept is not None
    for key in keys:
        kept.put(key, key.encode() * 1000)


def test_concurrent_processes_share_one_store(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = [f"k{i}" for i in range(12)]
    _opened(kind).put("parent", b"p")  # a connection open in the parent, then fork
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_put_all, args=(kind, keys)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0, 0]
    kept = _reopened(kind, monkeypatch)
    assert set(_rows(kind)) == {"parent", *keys}
    assert all(kept.get(key) == key.encode() * 1000 for key in keys)


def test_held_entries_are_written_in_batches_and_by_flush(tmp_path: Path) -> None:
    kind = store.Kind("test/batched.sqlite3", (), max_bytes=1 << 30, batch=3)
    kept = _opened(kind)
    kept.put("a", b"1")
    kept.put("b", b"2")
    assert kept.get("a") == b"1"  # held entries are served
    assert _rows(kind) == {}
    kept.put("c", b"3")
    assert set(_rows(kind)) == {"a", "b", "c"}
    kept.put("d", b"4")
    store.flush()
    assert set(_rows(kind)) == {"a", "b", "c", "d"}


def test_deferred_writes_are_written_when_the_last_block_ends(kind: store.Kind) -> None:
    kept = _opened(kind)
    with store.deferred_writes():
        with store.deferred_writes():
            kept.put("a", b"1")
        kept.put("b", b"2")
        assert _rows(kind) == {}
    assert set(_rows(kind)) == {"a", "b"}
    with pytest.raises(RuntimeError), store.deferred_writes():
        kept.put("c", b"3")
        raise RuntimeError
    assert "c" in _rows(kind)


def test_a_fork_writes_its_own_held_entries_never_its_parent_s(kind: store.Kind) -> None:
    kept = _opened(kind)
    with store.deferred_writes():
        kept.put("parent", b"p")
        context = multiprocessing.get_context("fork")
        child = context.Process(target=_put_all, args=(kind, ["child"]))
        child.start()
        child.join(60)
        assert child.exitcode == 0
        assert set(_rows(kind)) == {"child"}  # the fork wrote through, and only its own
    assert set(_rows(kind)) == {"child", "parent"}


def test_pruning_drops_the_entries_unused_longest(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = _opened(kind)
    for i in range(8):
        kept.put(f"k{i}", bytes([i]) * 150_000)
        kept.db.execute(f"UPDATE {kind.table} SET used = ? WHERE key = ?", (i, f"k{i}"))
    small = dataclasses.replace(kind, max_bytes=800_000)
    kept = _reopened(small, monkeypatch)  # a new process: its first write prunes
    kept.put("new", b"n")
    left = _rows(small)
    assert sum(map(len, left.values())) <= 800_000
    survivors = {key for key in left if key != "new"}
    assert "new" in left and 0 < len(survivors) < 8
    assert survivors == {f"k{i}" for i in range(8 - len(survivors), 8)}  # the oldest went


def test_switched_off_a_kind_has_no_store(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    for switch in kind.switches:
        for word in ("0", "off", " NO "):
            monkeypatch.setenv(switch, word)
            assert store.open_store(kind) is None
        monkeypatch.delenv(switch)
    assert not kind.path().exists()
    assert store.open_store(kind) is not None


def test_a_new_cache_folder_is_a_new_store(
    kind: store.Kind, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _opened(kind).put("k", b"1")
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "other"))
    kept = _opened(kind)
    assert kept.path == tmp_path / "other" / kind.file
    assert kept.get("k") is None


def test_a_write_racing_another_writer_keeps_its_entries(kind: store.Kind) -> None:
    """Another process commits after this write's first read (its prune check): the entries
    are still written (a deferred transaction failed its insert at once, SQLITE_BUSY, and a
    pooled cold run lost entries its warm re-run then computed again)."""
    kept = _opened(kind)
    other = sqlite3.connect(kind.path(), timeout=0, isolation_level=None)
    prune = kept._prune

    def racing_prune() -> None:
        prune()  # this transaction has read
        with contextlib.suppress(sqlite3.OperationalError):  # waits for none: locked is fine
            other.execute(f"INSERT INTO {kind.table} VALUES ('theirs', x'00', 0)")

    kept._prune = racing_prune  # type: ignore[method-assign]
    kept.put("ours", b"entry")
    other.close()
    assert "ours" in _rows(kind)
    assert kept.get("ours") == b"entry"


def test_a_new_store_has_its_kind_s_pages_and_a_bounded_log(kind: store.Kind) -> None:
    """Parsed CSVs of tens of KiB on 64 KiB pages (on 4 KiB pages' overflow chains they cost
    twice the CPU to write); the log checkpointed past 4 MiB, as SQLite's default gives."""
    kept = _opened(kind)
    kept.put("k", b"x")
    with contextlib.closing(sqlite3.connect(kind.path())) as db:
        assert db.execute("PRAGMA page_size").fetchone()[0] == kind.page_bytes
    pages = kept.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    assert pages == (4 << 20) // kind.page_bytes


def test_a_store_left_by_an_older_layout_still_serves(kind: store.Kind) -> None:
    """A cache folder an older version filled (its `entries` table of other columns) is not
    an unusable store: the sealed entries go beside it."""
    kind.path().parent.mkdir(parents=True)
    with contextlib.closing(sqlite3.connect(kind.path())) as db, db:
        db.execute("CREATE TABLE entries (key TEXT PRIMARY KEY, data BLOB NOT NULL, used REAL)")
    kept = _opened(kind)
    kept.put("k", b"payload")
    assert kept.get("k") == b"payload"


def test_a_kind_beside_another_in_its_file_is_bounded_by_its_own_entries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outcomes = result_cache.RESULTS
    runs = dataclasses.replace(bird_run_cache.RUNS, max_bytes=500_000)
    assert runs.file == outcomes.file and runs.table != outcomes.table
    _opened(outcomes).put_many([(f"k{i}", bytes([i]) * 150_000) for i in range(8)])
    _opened(runs).put("run", b"r" * 100_000)
    kept = _reopened(runs, monkeypatch)  # a new process: its first write prunes
    kept.put("another", b"a")
    assert set(_rows(runs)) == {"run", "another"}  # 1.2 MB beside it, its own 100 kB
    assert len(_rows(outcomes)) == 8
    kept = _reopened(runs, monkeypatch)
    kept.pruned = False
    kept.put("big", b"b" * 450_000)
    kept = _reopened(runs, monkeypatch)
    kept.put("last", b"l")  # now past its bound: the oldest go
    assert "run" not in _rows(runs) and "last" in _rows(runs)
    assert len(_rows(outcomes)) == 8
