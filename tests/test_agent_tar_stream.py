"""The workspace packed out of the agent's sandbox is a tar stream whatever ran inside may have
made: `files.unpack` reads it with the checks of a downloaded archive (`tar_checks.py`), so a
header past what the reader takes, a member outside the workspace, or one on, under or over
another's is `UnsafeArchive` at once, and an honest stream (long names, folders, links and
FIFOs left out) unpacks as before."""

from __future__ import annotations

import io
import tarfile
import time
from pathlib import Path

import pytest

from querybench.agent import files
from querybench.errors import UnsafeArchive, WorkspaceFull
from tests.test_data_fetch import HOSTILE_HEADER_IDS, HOSTILE_HEADERS, tar_with_header

Member = tuple[str, bytes | None, bytes]  # name, content (None: a folder), type


def _stream(members: list[Member], form: int = tarfile.GNU_FORMAT) -> io.BytesIO:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w|", format=form) as tar:
        for name, content, kind in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            if content is None or kind != tarfile.REGTYPE:
                tar.addfile(info)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    out.seek(0)
    return out


def _unpack(stream: io.BytesIO, root: Path) -> files.Usage:
    root.mkdir(exist_ok=True)
    return files.unpack(stream, root, max_bytes=1 << 20, max_entries=100)


def _file(name: str, content: bytes = b"x") -> Member:
    return name, content, tarfile.REGTYPE


def _folder(name: str) -> Member:
    return name, None, tarfile.DIRTYPE


def test_an_honest_stream_unpacks_its_files_and_folders_and_leaves_links_and_fifos_out(
    tmp_path: Path,
) -> None:
    long = "d/" + "n" * 200  # past ustar's 100 bytes: a GNU long name, as GNU tar writes it
    stream = _stream(
        [
            _folder("./"),
            _folder("./d/"),
            _file(f"./{long}", b"long"),
            _file("./d/a.txt", b"a"),
            ("./link", None, tarfile.SYMTYPE),
            ("./fifo", None, tarfile.FIFOTYPE),
            _folder("./e/"),
        ]
    )
    usage = _unpack(stream, tmp_path / "out")
    assert (usage.entries, usage.skipped) == (4, 2)
    assert (tmp_path / "out" / long).read_bytes() == b"long"
    assert (tmp_path / "out" / "d" / "a.txt").read_bytes() == b"a"
    assert (tmp_path / "out" / "e").is_dir()
    assert not (tmp_path / "out" / "link").exists() and not (tmp_path / "out" / "fifo").exists()


@pytest.mark.parametrize(
    ("members", "why"),
    [
        ([_file("./ok"), _file("./../escaped")], "member './../escaped' would unpack outside"),
        ([_file("/etc/cron.d/x")], "member '/etc/cron.d/x' would unpack outside its folder"),
        ([_file("./a", b"1"), _file("./a", b"2")], "lands on a, which an earlier member wrote"),
        ([_file("./a"), _file("./a/b")], "would put a/b under a, an earlier file"),
        ([_file("./a/b"), _file("./a")], "lands on a, a folder of earlier members"),
        ([_file("./a"), _folder("./a/")], "lands on a, which an earlier member wrote"),
        ([_file("./a"), _folder("./a/b/")], "would put a/b under a, an earlier file"),
    ],
    ids=["dot-dot", "absolute", "twice", "under-a-file", "over-a-folder", "folder-on-file", "x"],
)
def test_a_member_outside_the_workspace_or_on_another_is_refused(
    tmp_path: Path, members: list[Member], why: str
) -> None:
    with pytest.raises(UnsafeArchive, match=f"^the workspace's tar: .*{why}"):
        _unpack(_stream(members), tmp_path / "out")
    assert not (tmp_path / "escaped").exists()


@pytest.mark.parametrize(("kind", "payload", "why"), HOSTILE_HEADERS, ids=HOSTILE_HEADER_IDS)
def test_a_tar_header_past_what_the_reader_takes_is_refused_at_once(
    tmp_path: Path, kind: bytes, payload: bytes, why: str
) -> None:
    start = time.monotonic()
    with pytest.raises(UnsafeArchive, match=f"the tar header at byte 0 holds .*{why}"):
        _unpack(io.BytesIO(tar_with_header(kind, payload)), tmp_path / "out")
    assert time.monotonic() - start < 5.0
    assert not (tmp_path / "out" / "x").exists()


def test_a_stream_past_the_workspace_bounds_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceFull, match="more than 1 MiB"):
        _unpack(_stream([_file("./big", b"x" * (2 << 20))]), tmp_path / "out")


def test_a_name_the_host_would_not_keep_is_left_out_not_written(tmp_path: Path) -> None:
    usage = _unpack(_stream([_file("./ok"), _file("./bad\nname")]), tmp_path / "out")
    assert (usage.entries, usage.skipped) == (1, 1)
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["ok"]
