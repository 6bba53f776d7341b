"""The one safety check of an archive the project did not write: a tar's own headers before
Python's reader parses them (`CheckedTarInfo`), and where each member lands (`MemberLayout`).

Two kinds of archive come from outside: a downloaded data archive (`data/download.py`) and a
workspace packed out of the agent's sandbox, a tar stream whatever ran inside may have made
(`agent/files.py`). Both are read with these checks, so both get the same refusals, each an
`UnsafeArchive` naming the member and why: a header past its bound or not made of well-formed
records, a member outside its folder (absolute, `..`), whose name no file system keeps (a
control character, a part past 255 bytes, a path past 4,096), on a file another member wrote,
under one, or where a folder is. Links and special files are never written by either reader.
"""

from __future__ import annotations

import os
import re
import tarfile
from pathlib import PurePosixPath
from typing import Any

from querybench.errors import UnsafeArchive

# A tar's own headers beside a member's: a pax header (long names, times, a few fields) or a GNU
# long name holds a few KiB. Past these bounds, or not made of well-formed records, one is
# refused before Python's reader takes it: in Python 3.11 that reader is quadratic in a pax
# header's size for some contents (a long run of digits, its `hdrcharset` search,
# CVE-2024-6232; many records before one `=`), so one crafted header of 1 MB took minutes and
# one of 10 MB a day, and a declared size is read into memory whole (a compressed tar of a
# 10 GB "name").
MAX_TAR_HEADER_BYTES = 1 << 20
_PAX_DIGITS = 64
_LONG_DIGIT_RUN = re.compile(rb"\d{%d}" % (_PAX_DIGITS + 1))

MAX_PART_BYTES = 255  # a file name's bound on every common file system
MAX_PATH_BYTES = 4096


def pax_problem(records: bytes) -> str | None:
    """What makes `records` (a pax header's bytes) no pax header read here, or None: each
    record `<length> <keyword>=<value>\\n`, its length its own, no run of more than
    `_PAX_DIGITS` digits, no GNU sparse map (no benchmark's data is a sparse file, and reading
    one is quadratic in the member's size). Linear in the bytes."""
    if _LONG_DIGIT_RUN.search(records):
        return f"a run of more than {_PAX_DIGITS} digits"
    if b"GNU.sparse" in records:
        return "a sparse file's map"
    pos = 0
    while pos < len(records):
        space = records.find(b" ", pos, pos + 21)
        if space <= pos or not records[pos:space].isdigit():
            return f"a record without its length at byte {pos}"
        end = pos + int(records[pos:space])
        if end <= space + 2 or end > len(records) or records[end - 1] != 0x0A:
            return f"a record whose length is not its own at byte {pos}"
        if records.find(b"=", space + 2, end) < 0:
            return f"a record without a keyword at byte {pos}"
        pos = end
    return None


class _Replay:
    """A tar's file object whose next read returns bytes already read from it (the pax header
    checked before Python's reader parses it), then reads on."""

    def __init__(self, fileobj: Any, first: bytes) -> None:
        self._fileobj = fileobj
        self._first: bytes | None = first

    def read(self, size: int = -1) -> bytes:
        first, self._first = self._first, None
        if first is not None:
            return first
        data: bytes = self._fileobj.read(size)
        return data

    def __getattr__(self, name: str) -> object:
        return getattr(self._fileobj, name)


class CheckedTarInfo(tarfile.TarInfo):
    """A tar member whose pax or GNU long-name header is checked before it is read (the bounds
    above), as `tarfile.open(..., tarinfo=CheckedTarInfo)` reads every header, in a file or a
    stream; past them, `UnsafeArchive` naming the archive, the header's offset and why."""

    def _refuse(self, tar: tarfile.TarFile, why: str) -> UnsafeArchive:
        name = "the tar" if tar.name is None else os.fsdecode(tar.name)
        return UnsafeArchive(f"{name}: the tar header at byte {self.offset:,} holds {why}")

    def _proc_gnulong(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
        if not 0 <= self.size <= MAX_TAR_HEADER_BYTES:
            raise self._refuse(tar, f"a long name of {self.size:,} bytes")
        return super()._proc_gnulong(tar)  # type: ignore[misc, no-any-return]

    def _proc_pax(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
        if not 0 <= self.size <= MAX_TAR_HEADER_BYTES:
            raise self._refuse(tar, f"{self.size:,} bytes of pax records")
        fileobj = tar.fileobj
        assert fileobj is not None
        buf = fileobj.read(self._block(self.size))  # type: ignore[attr-defined]
        problem = pax_problem(buf[: self.size])
        if problem is not None:
            raise self._refuse(tar, problem)
        tar.fileobj = _Replay(fileobj, buf)  # type: ignore[assignment]
        try:
            return super()._proc_pax(tar)  # type: ignore[misc, no-any-return]
        finally:
            tar.fileobj = fileobj


class MemberLayout:
    """Where one archive's members land (relative to the folder it unpacks into), so that none
    lands outside it, on, under or over another's, or by a name no file system keeps;
    `UnsafeArchive` (`source: member 'name' ...`) says which and why."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.files: dict[PurePosixPath, None] = {}  # in the order written
        self.folders: set[PurePosixPath] = set()

    def claim(self, destination: PurePosixPath, name: str) -> None:
        """Take `destination` for the file of member `name`."""
        where = self.checked(destination, name)
        text = str(destination)
        if destination in self.files:
            raise UnsafeArchive(f"{where} lands on {text}, which an earlier member wrote")
        if destination in self.folders:
            raise UnsafeArchive(f"{where} lands on {text}, a folder of earlier members")
        parents = list(destination.parents)[:-1]  # less the root itself
        self._no_file_among(parents, where, text)
        self.files[destination] = None
        self.folders.update(parents)

    def claim_folder(self, destination: PurePosixPath, name: str) -> None:
        """Take `destination` as a folder, for the folder member `name`."""
        where = self.checked(destination, name)
        text = str(destination)
        if destination in self.files:
            raise UnsafeArchive(f"{where} lands on {text}, which an earlier member wrote")
        parents = list(destination.parents)[:-1]
        self._no_file_among(parents, where, text)
        self.folders.add(destination)
        self.folders.update(parents)

    def checked(self, destination: PurePosixPath, name: str) -> str:
        """How a refusal names member `name`, once `destination` is a path inside the folder
        that every file system keeps."""
        where = f"{self.source}: member {name!r}"
        if destination.is_absolute() or not destination.parts or ".." in destination.parts:
            raise UnsafeArchive(f"{where} would unpack outside its folder")
        problem = unkeepable(destination)
        if problem is not None:
            raise UnsafeArchive(f"{where}: {problem}")
        return where

    def _no_file_among(self, folders: list[PurePosixPath], where: str, text: str) -> None:
        for folder in folders:
            if folder in self.files:
                raise UnsafeArchive(f"{where} would put {text} under {folder}, an earlier file")


def unkeepable(destination: PurePosixPath) -> str | None:
    """Why no common file system keeps a file at `destination`, or None: a control character,
    a part past `MAX_PART_BYTES`, a path past `MAX_PATH_BYTES`."""
    if len(str(destination).encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        return f"its path is longer than {MAX_PATH_BYTES} bytes"
    for part in destination.parts:
        if any(ord(c) < 32 or ord(c) == 127 for c in part):
            return "its name holds a control character"
        if len(part.encode("utf-8", "surrogateescape")) > MAX_PART_BYTES:
            return f"a part of its name is past {MAX_PART_BYTES} bytes"
    return None
