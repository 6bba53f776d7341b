"""sha256 of a file's bytes, and of the files this process has read whole already;
`open_regular`, the non-blocking open of a regular file every reader of data and digests uses;
and `regular_database`, the same check for a database a driver opens by name.

A scorer that reads a file whole and hashes it (the verdict store hashes every gold file it
reads) remembers the digest under the file's identity at that read: device, inode, size, and
the modification and change times in nanoseconds, the same before and after the read. The
manifest then names those bytes without reading the folder again. A file written since has
another change time, so it is read and hashed anew; a write within the same tick of the
kernel's clock as the read (a few ms) may keep the identity, and the digest is then still that
of the bytes the scorer read. A worker process sends the digests it made back to the
process that writes the manifest (`known_since`, `adopt`).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from querybench.errors import NotRegularFile

_CHUNK = 1 << 20
_KNOWN: dict[tuple[int, int, int, int, int], str] = {}


def _identity(info: os.stat_result) -> tuple[int, int, int, int, int]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def remember(before: os.stat_result, after: os.stat_result, digest: bytes) -> None:
    """`digest` (sha256) is of the bytes read whole between `before` and `after`, the file's
    `fstat` on each side of the read; kept only when nothing changed between them."""
    if _identity(before) == _identity(after):
        _KNOWN[_identity(after)] = digest.hex()


Known = tuple[tuple[int, int, int, int, int], str]  # a file's identity and its digest


def known_count() -> int:
    """How many digests this process knows: a mark for `known_since`."""
    return len(_KNOWN)


def known_since(mark: int) -> list[Known]:
    """The digests this process came to know after `mark` (a worker process's, sent back to
    the process that writes the manifest)."""
    return list(_KNOWN.items())[mark:]


def adopt(known: list[Known]) -> None:
    """Digests another process of this run made, each under the identity it read the file
    at: a file changed since has another identity, and is hashed anew."""
    _KNOWN.update(known)


def open_regular(path: Path | str, flags: int = 0) -> tuple[int, os.stat_result]:
    """A blocking descriptor of `path` and its `fstat`, when it is a regular file; else
    `NotRegularFile`. Opened without blocking (`flags` added, e.g. `O_NOFOLLOW`) and checked on
    the descriptor, so a FIFO, or one swapped in after a check, never waits for a writer: the
    one way every reader of data, gold and digests opens a file it did not make."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_regular(path: Path | str) -> bytes:
    """`path`'s bytes, once it is a regular file (`open_regular`: a FIFO is an `OSError` at
    once, not a read that waits for a writer)."""
    fd, _ = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def regular_database(path: Path | str, sidecars: Iterable[str] = ()) -> Path:
    """`path`, once it and each of its `sidecars` that exists (`<path><suffix>`: an engine's
    `EngineSpec.sidecars`, SQLite's `-journal` and `-wal`) are regular files; else
    `NotRegularFile` (`FileNotFoundError` for a missing database, another `OSError` for one that
    cannot be opened). SQLite and DuckDB open a database and its sidecars by name, blocking: a
    FIFO there waits for a writer for ever (a FIFO `-journal` too, read as a hot journal). The
    database is opened as `open_regular` opens it and the sidecars are `stat`ed, so nothing
    blocks; a file swapped in between this check and the driver's own open is not excluded
    (docs/security.md)."""
    fd, _ = open_regular(path)
    os.close(fd)
    for suffix in sidecars:
        sidecar = f"{os.fspath(path)}{suffix}"
        try:
            mode = os.stat(sidecar).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise NotRegularFile(sidecar)
    return Path(path)


def refusal(exc: OSError, path: Path | str) -> str:
    """Why `regular_database(path)` refused, in words, naming the sidecar when it was one."""
    reason = exc.strerror or str(exc)
    named = exc.filename
    return reason if named is None or os.fspath(named) == os.fspath(path) else f"{named}: {reason}"


def file_sha256(path: Path) -> str:
    """The hex sha256 of `path`'s bytes: remembered if this process read them whole (looked up
    by a `stat`: a file not opened costs a fifth), else read a chunk at a time. Anything but a
    regular file is an `OSError` at once (`open_regular`)."""
    try:
        info = os.stat(path)
    except OSError:
        info = None  # `open_regular` says why
    if info is not None and stat.S_ISREG(info.st_mode):
        known = _KNOWN.get(_identity(info))
        if known is not None:
            return known
    fd, info = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        known = _KNOWN.get(_identity(info))
        if known is not None:
            return known
        digest = hashlib.sha256()
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
