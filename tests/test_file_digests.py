"""A file's sha256, taken from the read that hashed it when nothing changed since."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from querybench import file_digests
from querybench.evaluation.spider2 import verdict_cache
from querybench.file_digests import file_sha256
from querybench.tasks.spider2_gold import EvalSpec

_real_sha256 = hashlib.sha256


def _sha(data: bytes) -> str:
    return _real_sha256(data).hexdigest()


def _read_whole(path: Path) -> None:
    """`path` read whole as a scorer reads it, its digest remembered under its identity."""
    with path.open("rb") as f:
        before = os.fstat(f.fileno())
        data = f.read()
        after = os.fstat(f.fileno())
    file_digests.remember(before, after, hashlib.sha256(data).digest())


def test_a_file_read_by_the_verdict_store_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUERYBENCH_CACHE", str(tmp_path / "cache"))
    gold = tmp_path / "g1.csv"
    gold.write_bytes(b"a\n1\n")
    spec = EvalSpec("g1", [], True)
    assert verdict_cache.instance_key("spider2-lite", spec, [gold], True, b"a\n1\n") is not None
    hashed: list[bytes] = []

    class Counting:
        def __init__(self) -> None:
            self.real = _real_sha256()

        def update(self, data: bytes) -> None:
            hashed.append(bytes(data))
            self.real.update(data)

        def hexdigest(self) -> str:
            return str(self.real.hexdigest())

    monkeypatch.setattr(file_digests.hashlib, "sha256", Counting)
    assert file_digests.file_sha256(gold) == _sha(b"a\n1\n")
    assert hashed == []  # not read again: the digest is the verdict store's


def test_a_file_written_since_is_hashed_anew(tmp_path: Path) -> None:
    path = tmp_path / "f.csv"
    path.write_bytes(b"a\n1\n")
    _read_whole(path)
    assert file_digests.file_sha256(path) == _sha(b"a\n1\n")
    time.sleep(0.05)  # past the change time's granularity
    path.write_bytes(b"a\n2\n")  # the same size
    assert file_digests.file_sha256(path) == _sha(b"a\n2\n")


def test_a_digest_of_a_file_changing_during_its_read_is_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "f.csv"
    path.write_bytes(b"a\n1\n")
    before = os.stat(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    file_digests.remember(before, os.stat(path), hashlib.sha256(b"other bytes").digest())
    assert file_digests.file_sha256(path) == _sha(b"a\n1\n")


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_path_that_is_no_regular_file_is_refused_without_blocking(
    tmp_path: Path, kind: str
) -> None:
    """A FIFO put where a hashed file was (a swap after the scorer's check) would block a
    plain open until a writer came; it is refused at once, as is a folder."""
    path = tmp_path / "a.csv"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    outcome: list[BaseException] = []

    def digest() -> None:
        try:
            file_sha256(path)
        except OSError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=digest, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "file_sha256 blocked on a FIFO"
    assert len(outcome) == 1 and "not a regular file" in str(outcome[0])


def test_a_known_file_is_named_by_its_stat_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest names 2,300 gold files whose digests the scorers made: each is `stat`ed,
    not opened (an open, fstat and close cost it 20 ms of a run's finish); a file not known is
    opened and hashed as before."""
    known, other = tmp_path / "known.csv", tmp_path / "other.csv"
    known.write_bytes(b"a\n1\n")
    other.write_bytes(b"a\n2\n")
    _read_whole(known)
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(file_digests.os, "open", counting_open)
    assert file_sha256(known) == _sha(b"a\n1\n")
    assert opened == []
    assert file_sha256(other) == _sha(b"a\n2\n")
    assert opened == [str(other)]
