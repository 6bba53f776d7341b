"""Gold results computed once and kept on disk, keyed by content rather than by name.

The key is sha256 of (engine kind, driver version, database file content hash, SQL text): a
database file edited in place, or a driver upgrade that could change results, is a new key.
Only successful results are stored; errors (timeouts above all) are always recomputed.

Files hold a pickle of plain values; they are read back with an unpickler that can only build
the value types the drivers return, so a planted file can fail to load but cannot run code.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import pickle
import sqlite3
import tempfile
import threading
import warnings
import zoneinfo
from collections.abc import Callable
from pathlib import Path
from typing import Any

from querybench.engines import Target, parse_target
from querybench.engines.base import Result
from querybench.engines.pool import QueryOutcome
from querybench.errors import EngineError

_MAGIC = b"querybench result cache v1\n"
_SAFE_GLOBALS = frozenset(
    {
        ("decimal", "Decimal"),
        ("datetime", "date"),
        ("datetime", "datetime"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        ("uuid", "UUID"),
        ("uuid", "SafeUUID"),
        ("zoneinfo", "ZoneInfo"),
    }
)
_CHUNK = 1 << 20

_fingerprints: dict[tuple[int, int, int, int, int], str] = {}
_fingerprints_lock = threading.Lock()


def default_cache_dir() -> Path:
    """`$QUERYBENCH_CACHE`, else `~/.cache/querybench`."""
    return Path(os.environ.get("QUERYBENCH_CACHE") or "~/.cache/querybench").expanduser()


def database_fingerprint(path: str | Path) -> str:
    """sha256 of the file's bytes, streamed; remembered while its size and times stay put."""
    stat = os.stat(path)
    # The file's identity (device, inode) rather than its resolved name: one stat per lookup,
    # no walk of the path's links. The ctime too: a file swapped in with its mtime preserved
    # is still noticed.
    memo_key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    with _fingerprints_lock:
        known = _fingerprints.get(memo_key)
    if known is not None:
        return known
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    fingerprint = digest.hexdigest()
    with _fingerprints_lock:
        _fingerprints[memo_key] = fingerprint
    return fingerprint


class ResultCache:
    """Results on disk under `directory/results/`, one file per key."""

    def __init__(self, directory: str | Path | None = None) -> None:
        root = default_cache_dir() if directory is None else Path(directory).expanduser()
        self.directory = root / "results"
        self._targets: dict[str, Target] = {}  # parsed once per database (the stat is not)

    def key(self, database: str | Path, sql: str) -> str:
        target = self._targets.get(str(database))
        if target is None:
            target = self._targets[str(database)] = parse_target(database)
        parts = [target.kind, _driver_version(target.kind), database_fingerprint(target.path), sql]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()

    def get(self, database: str | Path, sql: str) -> Result | None:
        path = self._path(self.key(database, sql))
        try:
            data = path.read_bytes()
        except OSError:
            return None
        return _load(data)

    def put(self, database: str | Path, sql: str, result: Result) -> None:
        try:
            data = _dump(result)
        except (pickle.PicklingError, TypeError, AttributeError):
            return  # a value the safe loader could not rebuild is simply not cached
        path = self._path(self.key(database, sql))
        fd, tmp = _create_temporary(path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get_or_compute(
        self,
        database: str | Path,
        sql: str,
        compute: Callable[[], QueryOutcome],
        *,
        key: str = "",
    ) -> QueryOutcome:
        """The cached result, else `compute()`, stored when it succeeded.

        `key` labels the outcome of a cache hit (a computed outcome keeps its own).
        """
        try:
            cached = self.get(database, sql)
        except (EngineError, OSError):
            return compute()  # no database to fingerprint: let compute report the error
        if cached is not None:
            return QueryOutcome(key, cached, None)
        outcome = compute()
        if outcome.result is not None:
            try:
                self.put(database, sql, outcome.result)
            except OSError as exc:  # a full or read-only cache costs speed, not the result
                warnings.warn(f"result cache not written: {exc}", RuntimeWarning, stacklevel=2)
        return outcome

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.pickle"


_temporaries = itertools.count()


def _create_temporary(folder: Path) -> tuple[int, str]:
    """A new file of this process's own in `folder`, open for writing (made on first need).

    Cheaper than `tempfile.mkstemp` for the hundreds of entries of a cold run: one `open`,
    the folder created only when it is missing, and a name unique to the process and thread
    (a clash, a stale file of a dead process, falls back to `mkstemp`).
    """
    name = str(folder / f".tmp-{os.getpid()}-{threading.get_ident()}-{next(_temporaries)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(name, flags, 0o600), name
    except FileNotFoundError:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        pass
    return tempfile.mkstemp(dir=folder, prefix=".tmp-")


def _driver_version(kind: str) -> str:
    if kind == "sqlite":
        return sqlite3.sqlite_version
    import duckdb

    return str(duckdb.__version__)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        # ZoneInfo pickles through `getattr`, which the safe loader must not allow.
        if isinstance(obj, zoneinfo.ZoneInfo):
            return zoneinfo.ZoneInfo, (obj.key,)
        return NotImplemented


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _SAFE_GLOBALS:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in the result cache")
        return super().find_class(module, name)


def _dump(result: Result) -> bytes:
    buffer = io.BytesIO()
    buffer.write(_MAGIC)
    payload = (list(result.columns), result.rows, result.elapsed_s, result.extra)
    _Pickler(buffer, protocol=5).dump(payload)
    return buffer.getvalue()


def _load(data: bytes) -> Result | None:
    """The stored result, or None for anything that is not a well-formed cache file."""
    if not data.startswith(_MAGIC):
        return None
    try:
        columns, rows, elapsed_s, extra = _SafeUnpickler(io.BytesIO(data[len(_MAGIC) :])).load()
        if not (isinstance(columns, list) and isinstance(rows, list) and isinstance(extra, dict)):
            return None
        return Result(tuple(columns), rows, float(elapsed_s), {**extra, "cached": True})
    except Exception:
        return None
