"""Reading one prediction file without trusting it: what it is, where it points, what it costs.

A predictions folder is written by the system under test, so a `<id>.csv` may be a FIFO (an
open that never returns), a symlink to `/proc/kmsg` (a read that never returns), a link to the
gold, a 2 GB sparse file or a header of a million columns. Before pandas sees a byte:

* only a regular file is read; anything else is refused with its kind named;
* a symlink is followed only within the predictions folder and never into a forbidden folder
  (the gold); `/proc`, `/sys` and `/dev` files are refused;
* a file with more than one name (a hard link: to the gold, a database, anything) is refused,
  since a hard link is the linked file itself and no path tells it from the gold
  (`_one_name`);
* the file is opened with O_NOFOLLOW | O_NONBLOCK and checked again on the descriptor, then read
  (at most `max_bytes`) on a helper thread with a deadline (`ReadLimits.seconds`), unless it
  sits on a local disk, whose reads cannot stall (`_local_devices`);
* what is parsed is the bytes read, kept in memory or, for a big file, in a private temporary
  file: the file itself may grow or be rewritten once its bounds are checked;
* the header's fields and the rows (line ends) bound the cells; a line longer than
  `max_line_bytes` is refused too (pandas holds a column name at about nine times its size).

A refusal is a `PredictionRefused` carrying the instance's error code.
"""

from __future__ import annotations

import csv
import functools
import io
import os
import stat
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from querybench import file_digests
from querybench.benchmarks import eval_options as eo
from querybench.errors import DataError, ErrorCode, PredictionRefused

_BLOCK = 1 << 24
# A result file from this size on is spooled rather than kept in memory, and parsed a chunk at
# a time (`spider2/large_result.py`); tests lower it to force that path.
LARGE_FILE_BYTES = 32 << 20
_PSEUDO_ROOTS = ("/proc", "/sys", "/dev")


@dataclass(frozen=True)
class ReadLimits:
    """What reading one prediction may cost; beyond a bound the instance is `too_large` (or,
    for time, `bad_prediction_file`). The defaults leave room for a 5M-row result of five
    columns (about 150 MiB); 25M cells of a wide file cost about 1 GB to parse and score."""

    # declared once, beside the flags that set them (`eval spider2-lite --max-bytes`, ...)
    max_bytes: int = eo.MAX_BYTES
    max_columns: int = eo.MAX_COLUMNS
    max_cells: int = eo.MAX_CELLS
    max_line_bytes: int = eo.MAX_LINE_BYTES
    seconds: float = eo.READ_SECONDS

    def __post_init__(self) -> None:
        # A bound of 0 would refuse every file (or time every read out) with no word why.
        for name in ("max_bytes", "max_columns", "max_cells", "max_line_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"ReadLimits.{name} must be at least 1, got {getattr(self, name)}")
        if not self.seconds > 0:
            raise ValueError(f"ReadLimits.seconds must be above 0, got {self.seconds}")


def predictions_folder(path: str | Path) -> Path:
    """`path` as a predictions folder, or `DataError` saying it is missing or not a folder."""
    folder = Path(path)
    if not folder.is_dir():
        what = "path is not a folder" if folder.exists() else "folder not found"
        raise DataError(f"predictions {what}: {folder}")
    return folder


@dataclass(frozen=True)
class Scanned:
    """A result file already opened and measured: a binary handle at offset 0 (the bytes
    themselves, in a `BytesIO`, below `LARGE_FILE_BYTES`), its size, its line count, and the
    name its errors mention."""

    handle: BinaryIO
    size: int
    lines: int
    name: str
    # the file's `fstat` when it was opened and once its bytes were read (kept files only)
    read_between: tuple[os.stat_result, os.stat_result] | None = None

    def remember(self, digest: bytes) -> None:
        """`digest` is the sha256 of the bytes kept here: the manifest names the file by it
        without reading it again (`file_digests.remember`, so only while the file's identity
        was the same at both ends of the read)."""
        if self.read_between is not None:
            file_digests.remember(*self.read_between, digest)


def _kind(mode: int) -> str | None:
    """The kind of a non-regular file, None for a regular one."""
    kinds = [
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO (named pipe)"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISLNK, "symlink"),
    ]
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in kinds if test(mode)), "special file")


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def inside_folder(path: Path, root: Path) -> None:
    """Refuse `path`, named inside `root` (a submission folder), when its real path is not
    inside `root`'s: a folder on its way (`<id>/`) is a symlink out of the submission, to the
    gold's folder or a host folder. The reader's own checks see only the file's entry, which
    then is no link; this sees the whole way. A path not there yet resolves as far as it goes."""
    target = os.path.realpath(path)
    if not _within(target, os.path.realpath(root)):
        raise PredictionRefused(
            ErrorCode.BAD_PREDICTION_FILE,
            f"{path.name} is reached through a symlink to {target}, outside the submission "
            "folder (not followed)",
        )


def _one_name(name: str, entry: os.stat_result) -> None:
    """Refuse a prediction with more than one name. A hard link to the gold (or to a
    database, or any file) is that file: its path, its real path and its content are all
    the submission's own, so the link count is the one sign of it. Counting links rather
    than looking the inode up among the gold and data files in play holds for every file,
    wherever it lives and whichever scorer reads it, in one `stat`; an honest file with a
    second name (a `cp -al` or `rsync --link-dest` copy) is refused with the way out."""
    if entry.st_nlink > 1:
        raise PredictionRefused(
            ErrorCode.BAD_PREDICTION_FILE,
            f"{name} is a hard link ({entry.st_nlink} names for one file; not read: a "
            "prediction must be a file of its own, copy it rather than link it)",
        )


def _checked_target(
    path: Path, folder: Path | None, forbidden: Sequence[Path], *, one_name: bool | None = None
) -> tuple[str, os.stat_result]:
    """The real path of the prediction and its stat, once the entry is known to be safe
    (`folder` None: a file named on the command line, whose symlinks are the user's own).
    `one_name` (default: when `folder` is given) refuses a hard link (`_one_name`)."""
    name = path.name
    try:
        entry = os.lstat(path)
    except FileNotFoundError:
        raise PredictionRefused(ErrorCode.MISSING_PREDICTION, f"no {name}") from None
    except OSError as exc:
        raise PredictionRefused(ErrorCode.BAD_PREDICTION_FILE, f"{name}: {exc.strerror}") from exc
    try:
        target = os.path.realpath(path)
    except OSError as exc:  # a link swapped for a file (or a folder) while it was resolved
        raise PredictionRefused(ErrorCode.BAD_PREDICTION_FILE, f"{name}: {exc.strerror}") from exc
    if folder is not None:
        # The real path, not the entry: a folder on the way may be the link (`<id>/` to the
        # gold's `<id>/`), and the file inside it then is the gold file.
        how = "a symlink" if stat.S_ISLNK(entry.st_mode) else "reached through a symlink"
        named = os.path.abspath(path)  # a file the user named inside the gold is the user's
        for place in forbidden:
            real = os.path.realpath(place)
            if _within(target, real) and (how == "a symlink" or not _within(named, real)):
                raise PredictionRefused(
                    ErrorCode.BAD_PREDICTION_FILE,
                    f"{name} is {how} into the gold folder ({target}; not followed)",
                )
    if (
        stat.S_ISLNK(entry.st_mode)
        and folder is not None
        and not _within(target, os.path.realpath(folder))
    ):
        raise PredictionRefused(
            ErrorCode.BAD_PREDICTION_FILE,
            f"{name} is a symlink to {target}, outside the predictions folder (not followed)",
        )
    if stat.S_ISLNK(entry.st_mode):
        try:
            entry = os.stat(target)
        except OSError as exc:
            raise PredictionRefused(
                ErrorCode.BAD_PREDICTION_FILE, f"{name} is a symlink to {target}: {exc.strerror}"
            ) from exc
    kind = _kind(entry.st_mode)
    if kind is not None:
        raise PredictionRefused(
            ErrorCode.BAD_PREDICTION_FILE, f"{name} is a {kind}, not a regular file"
        )
    if any(_within(target, root) for root in _PSEUDO_ROOTS):
        root = next(r for r in _PSEUDO_ROOTS if _within(target, r))
        raise PredictionRefused(
            ErrorCode.BAD_PREDICTION_FILE, f"{name} is a {root} file ({target})"
        )
    if folder is not None if one_name is None else one_name:
        _one_name(name, entry)
    return target, entry


def _open(
    target: str, entry: os.stat_result, name: str, one_name: bool
) -> tuple[int, os.stat_result]:
    """A descriptor on exactly the file checked, and its `fstat`: no symlink, no blocking
    open, same inode (and, with `one_name`, still no second name: a link made since the
    check)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        raise PredictionRefused(ErrorCode.BAD_PREDICTION_FILE, f"{name}: {exc.strerror}") from exc
    now = os.fstat(fd)
    if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (entry.st_dev, entry.st_ino):
        os.close(fd)
        raise PredictionRefused(
            ErrorCode.BAD_PREDICTION_FILE, f"{name} changed while it was opened"
        )
    if one_name:
        try:
            _one_name(name, now)
        except PredictionRefused:
            os.close(fd)
            raise
    return fd, now


class _Scan:
    """One pass over the bytes: size, line ends, the longest line, the header's first line.

    The longest line is measured only in a block that could hold one over the bound: a
    smaller file is scanned with `bytes` methods alone, without importing NumPy."""

    def __init__(self, limits: ReadLimits, keep: bool, spool: BinaryIO | None = None) -> None:
        self.limits = limits
        self.keep = keep
        self.parts: list[bytes] = []
        self.spool = spool  # where the bytes of a file too big to keep go
        self.size = self.lines = self.run = self.longest = 0
        self.header = bytearray()  # the first line, until its end is seen
        self.header_done = False
        self.ends_with_newline = False
        self.error: BaseException | None = None
        self.opened: os.stat_result | None = None  # the descriptor's `fstat` at the open
        # Who closes the descriptor: the reader once the waiting side gave up on it.
        self.handover = threading.Lock()
        self.finished = self.abandoned = False

    def feed(self, block: bytes) -> None:
        self.size += len(block)
        if self.size > self.limits.max_bytes:
            raise PredictionRefused(
                ErrorCode.TOO_LARGE, f"more than {self.limits.max_bytes:,} bytes"
            )
        if self.keep:
            self.parts.append(block)
        elif self.spool is not None:
            self.spool.write(block)
        first = min((i for i in (block.find(b"\n"), block.find(b"\r")) if i >= 0), default=-1)
        if not self.header_done:
            self.header += block[:first] if first >= 0 else block
            self.header_done = first >= 0
        # "\r\n" is one line end; a lone "\r" or "\n" is one too (pandas' C parser)
        self.lines += block.count(b"\n") + block.count(b"\r") - block.count(b"\r\n")
        if self.run + len(block) > self.limits.max_line_bytes:  # a line may be too long
            self._measure_lines(block)
        elif first >= 0:
            self.run = len(block) - max(block.rfind(b"\n"), block.rfind(b"\r")) - 1
        else:
            self.run += len(block)
        self.ends_with_newline = bool(len(block)) and block[-1] in (10, 13)

    def close_spool(self) -> None:
        if self.spool is not None:
            self.spool.close()

    def _measure_lines(self, block: bytes) -> None:
        """The longest line so far, exactly (NumPy, as a block is up to 16 MiB)."""
        import numpy as np

        data = np.frombuffer(block, dtype=np.uint8)
        ends = np.flatnonzero((data == 10) | (data == 13))
        if len(ends):
            self.longest = max(self.longest, self.run + int(ends[0]))
            if len(ends) > 1:
                self.longest = max(self.longest, int(np.diff(ends).max()) - 1)
            self.run = len(block) - int(ends[-1]) - 1
        else:
            self.run += len(block)
        self.longest = max(self.longest, self.run)
        if self.longest > self.limits.max_line_bytes:
            raise PredictionRefused(
                ErrorCode.TOO_LARGE, f"a line longer than {self.limits.max_line_bytes:,} bytes"
            )


def _read_all(fd: int, scan: _Scan) -> None:
    try:
        while not scan.abandoned and (block := os.read(fd, _BLOCK)):
            scan.feed(block)
    except BaseException as exc:  # handed to the waiting thread
        scan.error = exc
    finally:
        with scan.handover:
            scan.finished = True
            if scan.abandoned:  # nobody waits any more: the descriptor is this thread's
                scan.parts.clear()
                scan.close_spool()
                os.close(fd)


def _abandon(fd: int, scan: _Scan) -> None:
    """Give up on a read past its deadline: the reader stops at its next block and closes
    the descriptor, or it is closed here if the reader has just finished."""
    with scan.handover:
        scan.abandoned = True
        if scan.finished:
            scan.close_spool()
            os.close(fd)


def _columns(header: bytes) -> int:
    """The header's fields: its commas plus one, unless quotes hide some commas."""
    if b'"' not in header:
        return header.count(b",") + 1
    text = header.decode("utf-8", errors="replace")
    try:
        return len(next(csv.reader([text])))
    except (csv.Error, StopIteration):
        return text.count(",") + 1


# Filesystems whose reads of a regular file cannot stall: no server, no user-space daemon.
_LOCAL_FILESYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "tmpfs", "ramfs", "f2fs", "jfs", "vfat", "exfat", "erofs"}
)


@functools.cache
def _local_devices() -> frozenset[int]:
    """Devices (`st_dev`) of this process's local-disk mounts, from /proc/self/mountinfo.

    A file on one is read on the calling thread; anything else (NFS, FUSE, a device this
    does not see, a system without mountinfo) on a helper thread with a deadline, since a
    hung server or a FUSE daemon can stall a read forever. A thread per file costs little
    at idle but a scheduling wait per file on a loaded machine.
    """
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return frozenset()
    devices = set()
    for line in lines:
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 3 or not rest or rest.split()[0] not in _LOCAL_FILESYSTEMS:
            continue
        major, _, minor = parts[2].partition(":")
        if major.isdigit() and minor.isdigit():
            devices.add(os.makedev(int(major), int(minor)))
    return frozenset(devices)


def _read(
    path: Path,
    folder: Path | None,
    limits: ReadLimits,
    forbidden: Sequence[Path],
    keep_below: int,
    *,
    spool: bool = False,
    one_name: bool | None = None,
) -> tuple[_Scan, int]:
    """The checks, the open and the bounded read, keeping the bytes of a file smaller than
    `keep_below` (and with `spool` a bigger one's in `scan.spool`); the caller closes the
    descriptor and the spool."""
    name = path.name
    single = folder is not None if one_name is None else one_name
    target, entry = _checked_target(path, folder, forbidden, one_name=single)
    if entry.st_size > limits.max_bytes:
        raise PredictionRefused(
            ErrorCode.TOO_LARGE, f"{name}: {entry.st_size:,} bytes (limit {limits.max_bytes:,})"
        )
    fd, opened = _open(target, entry, name, single)
    keep = entry.st_size < keep_below
    copy = None
    if spool and not keep:
        try:  # closed by the caller, or by the reader once the caller gave up on it
            import tempfile  # only for a file on a network mount

            copy = cast(BinaryIO, tempfile.TemporaryFile(prefix="querybench-prediction-"))  # noqa: SIM115
        except OSError as exc:
            os.close(fd)
            raise PredictionRefused(
                ErrorCode.BAD_PREDICTION_FILE, f"{name}: cannot copy it: {exc}"
            ) from exc
    scan = _Scan(limits, keep=keep, spool=copy)
    scan.opened = opened
    if entry.st_dev in _local_devices():
        _read_all(fd, scan)  # a local disk's read returns: no thread to hand it to
    else:
        reader = threading.Thread(target=_read_all, args=(fd, scan), daemon=True)
        reader.start()
        reader.join(limits.seconds)
        if reader.is_alive():  # a read that may never return: the thread closes fd when it does
            _abandon(fd, scan)
            raise PredictionRefused(
                ErrorCode.BAD_PREDICTION_FILE,
                f"{name}: reading did not finish within {limits.seconds:g} s",
            )
    if scan.error is None:
        return scan, fd
    scan.close_spool()
    os.close(fd)
    if isinstance(scan.error, PredictionRefused):
        raise PredictionRefused(scan.error.code, f"{name}: {scan.error}")
    if isinstance(scan.error, OSError):
        raise PredictionRefused(ErrorCode.BAD_PREDICTION_FILE, f"{name}: {scan.error.strerror}")
    if isinstance(scan.error, MemoryError):
        raise PredictionRefused(ErrorCode.TOO_LARGE, f"{name}: out of memory while reading")
    raise scan.error


def read_prediction_text(
    path: Path,
    folder: Path | None,
    limits: ReadLimits,
    forbidden: Sequence[Path] = (),
    *,
    one_name: bool | None = None,
) -> str:
    """A checked, bounded text prediction (e.g. `<id>.sql`, or with `folder` None a whole
    predictions file) as UTF-8, or `PredictionRefused`. `one_name`: see `_checked_target`."""
    scan, fd = _read(
        path, folder, limits, forbidden, keep_below=limits.max_bytes + 1, one_name=one_name
    )
    os.close(fd)
    try:
        return b"".join(scan.parts).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PredictionRefused(
            ErrorCode.BAD_PREDICTION_FILE,
            f"{path.name}: not UTF-8 text ({exc.reason} at byte {exc.start})",
        ) from exc


def checked_database(
    path: Path, folder: Path, limits: ReadLimits, forbidden: Sequence[Path] = ()
) -> Path:
    """The real path of a database prediction (`.duckdb`), which its engine opens by name
    and so cannot be handed a checked descriptor: the checks every prediction passes (a
    regular file, no link out of `folder` or into `forbidden`, no /proc, /sys or /dev file,
    at most `max_bytes`), and the same for the `.wal` beside it, which DuckDB replays."""
    target, entry = _checked_target(path, folder, forbidden)
    if entry.st_size > limits.max_bytes:
        raise PredictionRefused(
            ErrorCode.TOO_LARGE,
            f"{path.name}: {entry.st_size:,} bytes (limit {limits.max_bytes:,})",
        )
    wal = Path(target + ".wal")
    if os.path.lexists(wal):
        _, sidecar = _checked_target(wal, folder, forbidden)
        if entry.st_size + sidecar.st_size > limits.max_bytes:
            raise PredictionRefused(
                ErrorCode.TOO_LARGE,
                f"{path.name} and its {wal.name}: over {limits.max_bytes:,} bytes",
            )
    return Path(target)


# What `whole_file_text` calls a predictions file (held to `_one_name`).
PREDICTIONS = "predictions"
# One answer of a whole predictions file (a Spider 1.0 line, a BIRD entry) is bounded as a
# line of a result CSV is: past this, that instance is `too_large` (`oversized_answer`).
MAX_ANSWER_BYTES = ReadLimits.max_line_bytes
# A whole file's lines are not bounded as they are read: each answer is, on its own.
_WHOLE_FILE = ReadLimits(max_line_bytes=ReadLimits.max_bytes)


def oversized_answer(answer: str, limit: int = MAX_ANSWER_BYTES) -> str | None:
    """Why one answer of a whole predictions file is that instance's `too_large`, or None.
    The file is bounded as a whole (`ReadLimits.max_bytes`); one oversized answer in it
    fails its own instance, never the file."""
    if len(answer) * 4 <= limit:  # UTF-8 spends at most 4 bytes a character
        return None
    size = len(answer.encode("utf-8", "surrogatepass"))
    return None if size <= limit else f"the answer is {size:,} bytes (limit {limit:,})"


def whole_file_text(path: Path, what: str) -> str:
    """A whole input file named on the command line (the gold, a predictions file, the
    questions), read as a prediction is (regular, bounded in time and size, its lines not:
    see `oversized_answer`), or a `DataError` saying which file it is and why it cannot be
    read. A predictions file has one name, as every prediction (a hard link to the gold file
    would score as right); the gold and questions files are the user's own, links and all."""
    try:
        return read_prediction_text(path, None, _WHOLE_FILE, one_name=what == PREDICTIONS)
    except DataError as exc:
        missing = isinstance(exc, PredictionRefused) and exc.code == ErrorCode.MISSING_PREDICTION
        reason = "no such file" if missing else str(exc)
        raise DataError(f"cannot read the {what} file {path}: {reason}") from exc


@contextmanager
def open_prediction(
    path: Path, folder: Path, limits: ReadLimits, forbidden: Sequence[Path] = ()
) -> Iterator[Scanned]:
    """The checked, bounded result CSV at `path` (inside `folder`), or `PredictionRefused`."""
    name = path.name
    scan, fd = _read(path, folder, limits, forbidden, keep_below=LARGE_FILE_BYTES, spool=True)
    try:
        lines = scan.lines + (0 if scan.ends_with_newline or not scan.size else 1)
        columns = _columns(bytes(scan.header)) if scan.size else 0
        if columns > limits.max_columns:
            raise PredictionRefused(
                ErrorCode.TOO_LARGE, f"{name}: {columns:,} columns (limit {limits.max_columns:,})"
            )
        cells = columns * max(lines - 1, 0)
        if cells > limits.max_cells:
            raise PredictionRefused(
                ErrorCode.TOO_LARGE, f"{name}: about {cells:,} cells (limit {limits.max_cells:,})"
            )
        if scan.keep:
            assert scan.opened is not None
            read_between = (scan.opened, os.fstat(fd))
            yield Scanned(io.BytesIO(b"".join(scan.parts)), scan.size, lines, name, read_between)
            return
        assert scan.spool is not None
        scan.spool.seek(0)
        yield Scanned(scan.spool, scan.size, lines, name)
    finally:
        scan.close_spool()
        os.close(fd)


def check_result_shape(columns: int, rows: int, limits: ReadLimits) -> None:
    """The column and cell bounds for a result that comes from a query, not a file."""
    if columns > limits.max_columns:
        raise PredictionRefused(
            ErrorCode.TOO_LARGE, f"result has {columns:,} columns (limit {limits.max_columns:,})"
        )
    if columns * rows > limits.max_cells:
        raise PredictionRefused(
            ErrorCode.TOO_LARGE, f"result has {columns * rows:,} cells (limit {limits.max_cells:,})"
        )
