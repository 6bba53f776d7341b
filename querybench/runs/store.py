"""The append-only record store: one JSON line per finished instance in RUNDIR/records.jsonl.

Each record is written with a single `write` on an O_APPEND descriptor and flushed to disk, so a
crash or Ctrl-C leaves whole lines only, at worst one torn last line, which reading skips. A
later record for the same instance (a rerun of a failed instance) supersedes the earlier one.

One writer per run folder: `RunLock` holds an exclusive `flock` on RUNDIR/run.lock for the whole
run, so a second run on the same folder fails at once; the kernel drops the lock when its holder
dies, even by SIGKILL, so a stale lock never blocks a resume.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from querybench import json_input
from querybench.declared import checked_values
from querybench.errors import DataError, ErrorCode, RunFolderBusy

log = logging.getLogger(__name__)

RECORDS = "records.jsonl"
LOCK = "run.lock"


class RunLock:
    """`with RunLock(run_dir):` the exclusive right to write `run_dir`; the holder's pid is
    written in the lock file so the refusal can name it."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            kind = "a file, not a folder" if folder.exists() and not folder.is_dir() else exc
            raise DataError(f"cannot use {folder} as a run folder: {kind}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise RunFolderBusy(
                f"{self.path.parent} is in use by another querybench run (pid {holder}); "
                "wait for it to end or use another --out folder"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


class RecordStatus(StrEnum):
    """Whether the model answered (`ok`) or the instance ended without an answer (`error`,
    with the record's `error` code); a `StrEnum`, so each member is its JSON string."""

    OK = "ok"
    ERROR = "error"


@dataclass(frozen=True)
class InstanceRecord:
    instance_id: str
    status: RecordStatus
    error: ErrorCode | None = None  # model_error, context_error, ...
    message: str | None = None
    prompt_hash: str | None = None
    replies: tuple[str, ...] = ()
    sqls: tuple[str | None, ...] = ()  # extracted from each reply
    sql: str | None = None  # the prediction submitted (majority vote when n > 1)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    context_s: float = 0.0
    model_s: float = 0.0
    total_s: float = 0.0
    attempts: int = 0
    cached: int = 0  # replies served from the response cache
    retried_for: tuple[str, ...] = ()
    truncation: dict[str, int] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # An error that is no answer at all (connection, timeout, 5xx, 429 after every retry): a
    # re-run asks again by default, while an answer that came back unusable needs
    # `--retry-failed`.
    transient: bool = False

    @property
    def ok(self) -> bool:
        return self.status == RecordStatus.OK

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("replies", "sqls", "retried_for"):
            out[key] = list(out[key])
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> InstanceRecord:
        """The inverse of `to_json`; `ValueError` for a status or error code that is not one,
        or for a line that is no object, `TypeError` for a field of the wrong type."""
        if not isinstance(data, dict):
            raise ValueError(f"not a JSON object but {type(data).__name__}")
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for key in ("replies", "sqls", "retried_for"):
            known[key] = tuple(known.get(key) or ())
        known = checked_values(cls, known)  # an `OptionError` (a TypeError) for a wrong type
        known["status"] = RecordStatus(known.get("status", ""))
        if known.get("error") is not None:
            known["error"] = ErrorCode(known["error"])
        return cls(**known)


class RecordStore:
    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / RECORDS

    def load(self) -> dict[str, InstanceRecord]:
        """The latest record of each instance; a torn or foreign line is skipped."""
        records: dict[str, InstanceRecord] = {}
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return records
        for line in text.split("\n"):
            if not line.strip():
                continue
            try:
                record = InstanceRecord.from_json(json_input.loads(line))
            except (ValueError, TypeError) as exc:  # a torn line: its instance is done again
                log.debug("%s: unreadable record line skipped: %s", self.path, exc)
                continue
            records[record.instance_id] = record
        return records

    def append(self, record: InstanceRecord) -> None:
        line = json.dumps(record.to_json(), ensure_ascii=False) + "\n"
        data = line.encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            self._heal(fd)
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write to {self.path}: {written} of {len(data)} bytes")
            os.fsync(fd)
        finally:
            os.close(fd)

    def _heal(self, fd: int) -> None:
        """After a torn last line, start on a fresh line so the next record stays whole."""
        size = os.fstat(fd).st_size
        if size == 0:
            return
        with self.path.open("rb") as f:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                os.write(fd, b"\n")
