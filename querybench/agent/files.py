"""Host-side file operations on an agent's workspace, safe against whatever the agent left there.

The agent chooses every name and may have planted anything in its workspace; the host may run
as root. So every operation walks the path one component at a time from the workspace's own
directory descriptor (`openat` with `O_NOFOLLOW`, `O_DIRECTORY` for folders): a symbolic link
anywhere on the path, a `..`, an absolute path outside `/workspace`, a name with a control
character or past the system's length limits is refused with the reason, never followed. Only
regular files with a single link are read or written, and every open is `O_NONBLOCK` and checked
with `fstat` before a byte moves, so a FIFO or a device never blocks a host thread.

`pack` and `unpack` carry a workspace into and out of the sandbox as a tar stream (see
`sandbox.py`); `unpack` keeps regular files and folders only, within a byte and entry bound,
and reads the stream (which whatever ran in the sandbox may have made) with the checks of a
downloaded archive (`tar_checks.py`): a tar header past its bound, a member outside the
workspace or on, under or over another's is `UnsafeArchive`, and nothing is kept.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from querybench.errors import UnsafePath, WorkspaceFull
from querybench.tar_checks import CheckedTarInfo, MemberLayout, unkeepable

MOUNT_POINT = "/workspace"
NAME_MAX = 255  # bytes of one component (Linux)
PATH_MAX = 4096
MAX_DEPTH = 64  # folders deep a file carried out of the sandbox may sit
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1024 * 1024


def parts(name: str) -> tuple[str, ...]:
    """The components of the workspace path `name` (`/workspace/...` means the same file)."""
    text = name.strip()
    bad = next((c for c in text if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        raise UnsafePath(f"{text[:80]!r}: a file name may not hold control characters")
    if len(os.fsencode(text)) > PATH_MAX:
        raise UnsafePath(f"{text[:80]}...: longer than {PATH_MAX} bytes")
    pure = PurePosixPath(text)
    if pure.is_absolute():
        try:
            pure = pure.relative_to(MOUNT_POINT)
        except ValueError:
            raise UnsafePath(f"{text}: only files under {MOUNT_POINT} can be used") from None
    if ".." in pure.parts or not pure.parts:
        raise UnsafePath(f"{text}: not a path inside the workspace")
    for part in pure.parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise UnsafePath(f"{part[:80]}...: a name longer than {NAME_MAX} bytes")
    return pure.parts


def kind(mode: int) -> str:
    """What a file is, as a reason names it."""
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "a special file"


@contextlib.contextmanager
def _folder(root: Path, folders: tuple[str, ...], name: str, create: bool) -> Iterator[int]:
    """A descriptor of the folder `folders` under `root`, walked without following links."""
    fd = os.open(root, _DIR)
    try:
        for part in folders:
            try:
                child = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise FileNotFoundError(errno.ENOENT, f"{name} does not exist") from None
                os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, _DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                what = kind(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
                raise UnsafePath(f"{name}: {part} is {what}, not a folder (refused)") from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _entry(fd: int, leaf: str) -> os.stat_result | None:
    try:
        return os.stat(leaf, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _check_regular(info: os.stat_result, name: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePath(f"{name} is {kind(info.st_mode)}, not a regular file (refused)")
    if info.st_nlink != 1:
        raise UnsafePath(f"{name} has {info.st_nlink} hard links (refused)")


def _open_regular(fd: int, leaf: str, name: str, flags: int) -> int:
    """Open an existing regular file: checked before (lstat) and after (fstat, same inode)."""
    before = _entry(fd, leaf)
    if before is None:
        raise FileNotFoundError(errno.ENOENT, f"{name} does not exist")
    _check_regular(before, name)
    try:
        handle = os.open(leaf, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.ENOTDIR):
            raise UnsafePath(f"{name} changed under the host while opening it (refused)") from None
        raise
    after = os.fstat(handle)
    if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
        os.close(handle)
        raise UnsafePath(f"{name} changed under the host while opening it (refused)")
    try:
        _check_regular(after, name)
    except UnsafePath:
        os.close(handle)
        raise
    return handle


def status(root: Path, name: str) -> os.stat_result | None:
    """The entry `name` names (not followed), None when there is none."""
    *folders, leaf = parts(name)
    try:
        with _folder(root, tuple(folders), name, create=False) as fd:
            return _entry(fd, leaf)
    except FileNotFoundError:
        return None


def read_bytes(root: Path, name: str, limit: int) -> bytes:
    """The content of the regular file `name`; `UnsafePath` past `limit` bytes."""
    *folders, leaf = parts(name)
    with _folder(root, tuple(folders), name, create=False) as fd:
        handle = _open_regular(fd, leaf, name, os.O_RDONLY)
    with os.fdopen(handle, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UnsafePath(f"{name} is larger than {limit} bytes (not read)")
    return data


def write_bytes(root: Path, name: str, data: bytes, *, new: bool | None = None) -> None:
    """Write `data` to `name`: `new=True` a file that must not exist, `False` one that must,
    None either; missing folders are made, links and special files are refused."""
    *folders, leaf = parts(name)
    with _folder(root, tuple(folders), name, create=new is not False) as fd:
        existing = _entry(fd, leaf)
        if existing is not None and new:
            raise FileExistsError(errno.EEXIST, f"{name} exists; use EditFile to change it")
        if existing is None:
            if new is False:
                raise FileNotFoundError(errno.ENOENT, f"{name} does not exist; use CreateFile")
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            handle = os.open(leaf, flags, 0o644, dir_fd=fd)
        else:
            handle = _open_regular(fd, leaf, name, os.O_WRONLY)
            os.ftruncate(handle, 0)
    with os.fdopen(handle, "wb") as f:
        f.write(data)


def regular_file(root: Path, name: str) -> Path:
    """The host path of the regular file `name` (for a library that opens paths: DuckDB),
    after checking every component; `UnsafePath` otherwise."""
    *folders, leaf = parts(name)
    with _folder(root, tuple(folders), name, create=False) as fd:
        os.close(_open_regular(fd, leaf, name, os.O_RDONLY))
    return root.joinpath(*folders, leaf)


def copy_out(root: Path, name: str, target: Path) -> bool:
    """Copy the workspace file `name` to the host path `target` (False: there is none)."""
    *folders, leaf = parts(name)
    with _folder(root, tuple(folders), name, create=False) as fd:
        if _entry(fd, leaf) is None:
            return False
        handle = _open_regular(fd, leaf, name, os.O_RDONLY)
    with os.fdopen(handle, "rb") as source, target.open("wb") as out:
        while chunk := source.read(_CHUNK):
            out.write(chunk)
    return True


@dataclass(frozen=True)
class Usage:
    bytes: int  # apparent sizes of regular files (a sparse file counts in full)
    entries: int
    skipped: int = 0  # links and special files, not carried


def _walk(fd: int, prefix: str, usage: list[int]) -> Iterator[tuple[str, os.DirEntry[str], int]]:
    """(path, entry, descriptor of its folder) of every folder and regular file under `fd`,
    depth first, links and special files counted in `usage[0]` and not entered."""
    with os.scandir(fd) as entries:
        listed = list(entries)
    for entry in listed:
        path = f"{prefix}{entry.name}"
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            yield path, entry, fd
            child = os.open(entry.name, _DIR, dir_fd=fd)
            try:
                yield from _walk(child, f"{path}/", usage)
            finally:
                os.close(child)
        elif stat.S_ISREG(info.st_mode):
            yield path, entry, fd
        else:
            usage[0] += 1


def usage(root: Path) -> Usage:
    """What the workspace holds."""
    skipped = [0]
    size = entries = 0
    fd = os.open(root, _DIR)
    try:
        for _, entry, _ in _walk(fd, "", skipped):
            entries += 1
            if entry.is_file(follow_symlinks=False):
                size += entry.stat(follow_symlinks=False).st_size
    finally:
        os.close(fd)
    return Usage(size, entries, skipped[0])


def pack(root: Path, out: IO[bytes]) -> None:
    """The workspace's folders and regular files as a tar stream (links and special files are
    left out; nothing is followed)."""
    fd = os.open(root, _DIR)
    try:
        with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for path, entry, folder in _walk(fd, "", [0]):
                info = entry.stat(follow_symlinks=False)
                member = tarfile.TarInfo(path)
                member.mode = info.st_mode & 0o755 | 0o600
                member.mtime = int(info.st_mtime)
                if stat.S_ISDIR(info.st_mode):
                    member.type = tarfile.DIRTYPE
                    tar.addfile(member)
                    continue
                handle = _open_regular(folder, entry.name, path, os.O_RDONLY)
                with os.fdopen(handle, "rb") as f:
                    member.size = os.fstat(f.fileno()).st_size
                    tar.addfile(member, f)
    finally:
        os.close(fd)


def unpack(stream: IO[bytes], root: Path, *, max_bytes: int, max_entries: int) -> Usage:
    """Extract a tar stream into the empty folder `root`: folders and regular files only (by
    safe paths, never following anything), at most `max_bytes` and `max_entries`;
    `WorkspaceFull` past either bound, `UnsafeArchive` for a header or a member's place that a
    downloaded archive would have refused too (`tar_checks`), `tarfile.TarError` on a broken
    stream."""
    size = entries = skipped = 0
    folders = _Folders(root)
    layout = MemberLayout("the workspace's tar")
    with tarfile.open(fileobj=stream, mode="r|", tarinfo=CheckedTarInfo) as tar:
        for member in tar:
            destination = _destination(member.name)
            if destination is None:
                continue  # the workspace itself
            if not (member.isdir() or member.isreg()):
                skipped += 1  # a link or a special file: never written
                continue
            if len(destination.parts) > MAX_DEPTH or unkeepable(destination) is not None:
                skipped += 1  # a name the host would not keep (a file there is not kept)
                continue
            if member.isdir():
                layout.claim_folder(destination, member.name)
            else:
                layout.claim(destination, member.name)
            names = destination.parts
            entries += 1
            size += max(member.size, 0)
            if entries > max_entries:
                raise WorkspaceFull(f"the workspace holds more than {max_entries} files")
            if size > max_bytes:
                raise WorkspaceFull(
                    f"the workspace holds more than {_mib(max_bytes)} (sparse files count at "
                    "their full size)"
                )
            name = "/".join(names)
            try:
                if member.isdir():
                    folders.get(names, name)
                    continue
                source = tar.extractfile(member)
                if source is not None:
                    folder = folders.get(names[:-1], name)
                    _write_stream(folder, names[-1], source, member.mode & 0o755 | 0o600)
            except (UnsafePath, OSError):
                skipped += 1  # e.g. a name the host's filesystem refuses
    folders.close()
    return Usage(size, entries, skipped)


def _destination(name: str) -> PurePosixPath | None:
    """Where member `name` lands in the workspace (None: the workspace itself); a name outside
    it (absolute, `..`) as it is, for the layout to refuse."""
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts:
        return pure
    return pure if pure.parts else None


class _Folders:
    """The descriptor of the folder the last file went to, kept for the next (a tar stream
    lists a folder's files together), so one file costs one `open`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.names: tuple[str, ...] | None = None
        self.fd = -1

    def get(self, names: tuple[str, ...], name: str) -> int:
        if names != self.names:
            self.close()
            with _folder(self.root, names, name, create=True) as fd:
                self.fd, self.names = os.dup(fd), names
        return self.fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd, self.names = -1, None


def _write_stream(folder: int, leaf: str, source: IO[bytes], mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(leaf, flags, mode, dir_fd=folder), "wb") as out:
        while chunk := source.read(_CHUNK):
            out.write(chunk)


def _mib(n: int) -> str:
    return f"{n / 1024**2:g} MiB"
