"""The append-only record store: one JSON line per finished instance in RUNDIR/records.jsonl.

Each record is written with a single `write` on an O_APPEND descriptor and flushed to disk, so a
crash or Ctrl-C leaves whole lines only, at worst one torn last line, which reading skips. A
later record for the same instance (a `--retry-failed` rerun) supersedes the earlier one.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RECORDS = "records.jsonl"


@dataclass(frozen=True)
class InstanceRecord:
    instance_id: str
    status: str  # "ok": the model answered; "error": see `error`
    error: str | None = None  # model_error, context_error, ...
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

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("replies", "sqls", "retried_for"):
            out[key] = list(out[key])
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> InstanceRecord:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for key in ("replies", "sqls", "retried_for"):
            known[key] = tuple(known.get(key) or ())
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
                record = InstanceRecord.from_json(json.loads(line))
            except (ValueError, TypeError):
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
