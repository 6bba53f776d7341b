"""Parsed result CSVs kept on disk, keyed by their content and the parser, so a re-score
parses nothing.

Parsing a Spider 2.0 result CSV the official way (`result_csv.read_result_csv`, pandas) costs
two to three times what loading its parsed columns back costs. An entry's key is sha256 of the
parser's identity (`result_csv.PARSER_VERSION`, the pandas and NumPy versions) and the sha256
of the file's bytes, hashed on every read (once: the verdict key is made of the same digest): a
file edited in place, or a new parser, is a new key, and no name or timestamp is trusted.

An entry is `MAGIC`, the sha256 of its payload, then the payload: a pickle of plain values
only (names, row count, per column a NumPy dtype and its bytes, or the list of its Python
values), read back by an unpickler that refuses every global, so a planted entry cannot run
code. An entry that fails any check (magic, digest, key, shape) is a miss: the CSV is parsed
again and the entry rewritten, never a wrong table. Entries live in one SQLite file per
namespace (`_Store`), whose transactions keep concurrent runs whole (two writers of one key
write the same bytes); a run's new entries go in one transaction at its end
(`deferred_writes`). Within a process, bytes parsed once are not parsed again while their frame
is held: a prediction that is its gold's very bytes costs one parse.

Gold and predictions live in separate namespaces: predictions change from run to run, so each
namespace is pruned (oldest first) once it outgrows `MAX_NAMESPACE_BYTES`. A prediction whose
verdicts the verdict store keeps is parsed with `keep=False`: those verdicts answer its
re-score. Set
`QUERYBENCH_CSV_CACHE=0` to parse every file every time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import logging
import os
import pickle
import sqlite3
import stat
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from querybench.evaluation import prediction_file
from querybench.store import cache_root, warn_unusable

if TYPE_CHECKING:  # pandas and NumPy load with the first parse or entry: a run whose every
    # verdict is known (verdict_cache) defers its writes here without importing them
    import numpy as np
    import pandas as pd

    from querybench.evaluation.large_result import ResultTable

log = logging.getLogger(__name__)

Namespace = Literal["gold", "prediction"]
Bytes = bytes | bytearray | memoryview

MAGIC = b"querybench parsed csv v1\n"
MAX_NAMESPACE_BYTES = 1 << 30
PAGE_BYTES = 1 << 16  # a new store's page size
WAL_BYTES = 4 << 20  # the write-ahead log checkpointed past this (SQLite's default, in bytes)
_DIGEST = 32
_NUMERIC_DTYPES = frozenset({"<i8", "<f8", "|b1", "<u8"})  # what read_csv gives, bar object
_TOUCH_AFTER_S = 86_400


@functools.cache
def _key_prefix() -> bytes:
    """The parser's identity, the head of every key (imports pandas)."""
    import numpy as np
    import pandas as pd

    from querybench.evaluation.result_csv import PARSER_VERSION

    return f"result_csv {PARSER_VERSION} pandas {pd.__version__} numpy {np.__version__}\n".encode()


def enabled() -> bool:
    return os.environ.get("QUERYBENCH_CSV_CACHE", "1").strip().lower() not in ("0", "off", "no")


def store_path(namespace: Namespace) -> Path:
    return cache_root() / "parsed-csv" / f"{namespace}.sqlite3"


class _Store:
    """A namespace's entries in one SQLite file: a run's hundreds of new entries cost one
    small transaction each rather than a file each (ten times the CPU on this machine's disk),
    and SQLite's locking keeps concurrent runs whole."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        # Entries are tens of KiB: on 64 KiB pages (a new file's; an old one keeps its own)
        # most fit one page, and a run's write costs under half the CPU of 4 KiB pages' chains.
        self.db.execute(f"PRAGMA page_size={PAGE_BYTES}")
        self.db.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
        page = self.db.execute("PRAGMA page_size").fetchone()[0]
        self.db.execute(f"PRAGMA wal_autocheckpoint={max(1, WAL_BYTES // page)}")
        self.db.execute("PRAGMA synchronous=NORMAL")  # a crash may lose entries, never corrupt
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS entries "
            "(key TEXT PRIMARY KEY, data BLOB NOT NULL, used REAL NOT NULL)"
        )
        self.lock = threading.Lock()
        self.pruned = False
        self.pending: dict[str, bytes] = {}  # entries not yet written (`deferred_writes`)
        self.pending_bytes = 0

    def get(self, key: str) -> bytes | None:
        """The entry, None if absent; one unused for a day is marked used (pruning removes the
        entries unused the longest)."""
        now = time.time()
        try:
            with self.lock:
                if key in self.pending:
                    return self.pending[key]
                row = self.db.execute(
                    "SELECT data, used FROM entries WHERE key = ?", (key,)
                ).fetchone()
                if row is not None and row[1] < now - _TOUCH_AFTER_S:
                    with contextlib.suppress(sqlite3.Error):  # a read-only store still serves
                        self.db.execute("UPDATE entries SET used = ? WHERE key = ?", (now, key))
        except sqlite3.Error as exc:
            warn_unusable(log, self.path, exc)
            return None
        return None if row is None else bytes(row[0])

    def has(self, key: str) -> bool:
        try:
            with self.lock:
                if key in self.pending:
                    return True
                row = self.db.execute("SELECT 1 FROM entries WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            return False
        return row is not None

    def put(self, key: str, entry: bytes) -> None:
        """Stored now, or with the others at the end of `deferred_writes`."""
        with self.lock:
            self.pending[key] = entry
            self.pending_bytes += len(entry)
            if not _deferring() or self.pending_bytes >= _PENDING_MAX_BYTES:
                self._write_pending()

    def flush(self) -> None:
        with self.lock:
            self._write_pending()

    def _write_pending(self) -> None:
        """The pending entries in one transaction (one lock taken, one WAL sync, however many:
        two processes filling one store no longer queue for it entry by entry)."""
        rows = [(key, entry, time.time()) for key, entry in self.pending.items()]
        self.pending.clear()
        self.pending_bytes = 0
        if not rows:
            return
        try:
            if not self.pruned:
                self.pruned = True
                self._prune()
            with self.db:  # BEGIN ... COMMIT, or ROLLBACK on an error
                self.db.execute("BEGIN IMMEDIATE")
                self.db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?)", rows)
        except sqlite3.Error as exc:  # a full or read-only cache costs speed, never the result
            warn_unusable(log, self.path, exc)

    def _prune(self) -> None:
        """Oldest entries removed once the store outgrows `MAX_NAMESPACE_BYTES` (checked at
        each process's first write; freed pages are reused, so the file stays near that)."""
        pages, size = (self.db.execute(f"PRAGMA {p}").fetchone()[0] for p in _SIZE_PRAGMAS)
        excess = pages * size - MAX_NAMESPACE_BYTES * 3 // 4
        if pages * size <= MAX_NAMESPACE_BYTES:
            return
        doomed = []
        for key, length in self.db.execute("SELECT key, length(data) FROM entries ORDER BY used"):
            doomed.append((key,))
            excess -= length
            if excess <= 0:
                break
        self.db.executemany("DELETE FROM entries WHERE key = ?", doomed)


_SIZE_PRAGMAS = ("page_count", "page_size")
_PENDING_MAX_BYTES = 16 << 20  # deferred entries held in memory before they are written
_stores: dict[tuple[str, int], _Store | None] = {}
_stores_lock = threading.Lock()
_store_names: dict[tuple[str | None, str | None, str], str] = {}  # where the cache is -> file
_deferral = (0, 0)  # (the process, its open `deferred_writes` blocks, in any thread)
_deferral_lock = threading.Lock()


@contextlib.contextmanager
def deferred_writes() -> Iterator[None]:
    """New entries written together when the last open block ends (or past
    `_PENDING_MAX_BYTES`), not one transaction each: what a run scoring hundreds of files wraps
    its reads in. A fork of a deferring process writes through until it opens its own block."""
    global _deferral
    pid = os.getpid()
    with _deferral_lock:
        owner, depth = _deferral
        _deferral = (pid, depth + 1 if owner == pid else 1)
    try:
        yield
    finally:
        with _deferral_lock:
            owner, depth = _deferral
            _deferral = (owner, depth - 1)
        if depth == 1:
            flush()


def _deferring() -> bool:
    owner, depth = _deferral
    return owner == os.getpid() and depth > 0


def flush() -> None:
    """Write this process's pending entries."""
    for store in _own_stores():
        store.flush()


def _pending_entry(key: str) -> bytes | None:
    """An entry this process has made but not yet written, in whichever namespace."""
    for store in _own_stores():
        if (entry := store.pending.get(key)) is not None:
            return entry
    return None


def _own_stores() -> list[_Store]:
    """This process's stores (a parent's, copied into a fork, and its pending entries with
    them, are not its own)."""
    pid = os.getpid()
    with _stores_lock:
        return [s for (_, owner), s in _stores.items() if owner == pid and s is not None]


def _store(namespace: Namespace) -> _Store | None:
    """This process's connection to the namespace's store (a forked worker opens its own:
    a SQLite connection must not cross a fork); None when the store cannot be opened."""
    where = (os.environ.get("QUERYBENCH_CACHE"), os.environ.get("HOME"), namespace)
    if (name := _store_names.get(where)) is None:  # a path built per file cost 20 µs each
        name = _store_names[where] = str(store_path(namespace))
    handle = (name, os.getpid())
    with _stores_lock:
        if handle not in _stores:
            path = Path(name)
            try:
                _stores[handle] = _Store(path)
            except (OSError, sqlite3.Error) as exc:
                warn_unusable(log, path, exc)
                _stores[handle] = None
        return _stores[handle]


# Frames parsed in this process, by key, while something still holds them: a prediction
# whose bytes are its gold's (or two files of the same bytes) is parsed once. Only parses
# go here, never entries loaded from a store, and a frame's columns are handed out
# read-only (`column_arrays`), so whoever shares one sees exactly what the parser gave.
_parsed: weakref.WeakValueDictionary[str, pd.DataFrame] = weakref.WeakValueDictionary()


def read_result_file(path: Path, namespace: Namespace) -> ResultTable:
    """`large_result.read_result(path)`, a small file's parse taken from the cache."""
    from querybench.evaluation.large_result import read_result

    if not enabled():
        return read_result(path)
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size >= prediction_file.LARGE_FILE_BYTES:
                data = None  # a big file is read a chunk at a time, never whole
            else:
                data = f.read()
    except OSError:
        data = None  # `read_result` says why in its error
    if data is None:
        return read_result(path)
    return parse(data, str(path), namespace)


def parse(
    data: Bytes, name: str, namespace: Namespace, digest: bytes | None = None, keep: bool = True
) -> pd.DataFrame:
    """`read_result_csv` of these bytes (`name` is what errors say), from the cache if there,
    or from this process's own parse of the same bytes. `digest`: their sha256, if the caller
    has it (a verdict key is made of it: a file is hashed once). `keep=False`: a new parse is
    not stored in this namespace (the caller stores what it makes of it: a prediction's
    verdicts), though this process still shares it.

    Errors are never cached: an unreadable file is parsed, and fails, every time.
    """
    from querybench.evaluation.result_csv import read_result_csv

    if not enabled():
        return read_result_csv(io.BytesIO(data), name=name)
    key = _key(hashlib.sha256(data).digest() if digest is None else digest)
    store = _store(namespace)
    frame = _parsed.get(key)
    if frame is not None:  # parsed here already: stored in this namespace too
        if keep and store is not None and not store.has(key):
            entry = _pending_entry(key) or _entry(frame, key)  # the other namespace's: same bytes
            if entry is not None:
                store.put(key, entry)
        return frame
    stored = store.get(key) if store is not None else None
    if stored is not None:
        frame = _load(stored, key)
        if frame is not None:
            return frame
        log.debug("parsed-CSV cache entry %s is not valid; parsing %s again", key, name)
    frame = read_result_csv(io.BytesIO(data), name=name)
    _parsed[key] = frame
    if keep and store is not None and (entry := _entry(frame, key)) is not None:
        store.put(key, entry)
    return frame


def _key(digest: bytes) -> str:
    """An entry's key: the parser's identity and the sha256 of the file's bytes."""
    return hashlib.sha256(_key_prefix() + digest).hexdigest()


def _entry(frame: pd.DataFrame, key: str) -> bytes | None:
    payload = _payload(frame, key)
    return None if payload is None else MAGIC + hashlib.sha256(payload).digest() + payload


def is_stored(path: Path, namespace: Namespace) -> bool | None:
    """Whether the namespace's store holds this file's parse; None when there is no telling
    without more than a read of a small regular file (a FIFO or device is never waited on)."""
    if not enabled() or (store := _store(namespace)) is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with open(fd, "rb") as f:
        info = os.fstat(fd)
        large = prediction_file.LARGE_FILE_BYTES
        if not stat.S_ISREG(info.st_mode) or not 0 < info.st_size < large:
            return None
        try:
            data = f.read()
        except OSError:
            return None
    return store.has(_key(hashlib.sha256(data).digest()))


def _payload(frame: pd.DataFrame, key: str) -> bytes | None:
    """The entry's payload, or None for a frame the loader could not rebuild exactly."""
    import numpy as np
    import pandas as pd

    from querybench.evaluation.result_csv import column_arrays

    index = frame.index
    if not isinstance(index, pd.RangeIndex) or index.start != 0 or index.step != 1:
        return None  # an implicit index column: rare, parsed every time
    names = list(frame.columns)
    if frame.columns.dtype != object or not all(type(n) is str for n in names):
        return None
    columns: list[tuple[str, Any]] = []
    for dtype, values in zip(frame.dtypes, column_arrays(frame), strict=True):
        if not isinstance(dtype, np.dtype):
            return None  # an extension dtype (pandas' own `str`): not rebuilt from NumPy
        if dtype.kind == "O":
            columns.append(("O", values.tolist()))
        elif dtype.str in _NUMERIC_DTYPES:
            columns.append((dtype.str, bytearray(values.tobytes())))
        else:
            return None
    try:
        return pickle.dumps((key, names, len(frame), columns), protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None


class _PlainUnpickler(pickle.Unpickler):
    """Builds only pickle's own types (str, int, float, bool, None, bytearray, list, tuple)."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"{module}.{name}: no globals in a parsed-CSV entry")


def _load(stored: bytes, key: str) -> pd.DataFrame | None:
    """The frame of a well-formed entry for `key`, else None."""
    import numpy as np

    head = len(MAGIC) + _DIGEST
    if not stored.startswith(MAGIC) or len(stored) < head:
        return None
    payload = memoryview(stored)[head:]
    if hashlib.sha256(payload).digest() != stored[len(MAGIC) : head]:
        return None
    try:
        stored_key, names, rows, columns = _PlainUnpickler(io.BytesIO(payload)).load()
    except Exception:  # digest-checked, so only a foreign file ends here
        return None
    if stored_key != key or type(rows) is not int or len(names) != len(columns):
        return None
    arrays = []
    for dtype, values in columns:
        if dtype == "O" and type(values) is list and len(values) == rows:
            array = np.empty(rows, dtype=object)
            array[:] = values
        elif dtype in _NUMERIC_DTYPES and type(values) is bytearray:
            array = np.frombuffer(values, dtype=np.dtype(dtype))
            if len(array) != rows:
                return None
        else:
            return None
        arrays.append(array)
    return _frame(arrays, names, rows)


def _frame(arrays: list[np.ndarray[Any, Any]], names: list[str], rows: int) -> pd.DataFrame:
    """The frame `read_csv` gave: these columns under these (possibly repeated) names.

    Built without pandas' checks, which also infer pandas 3's `str` dtype for text columns:
    `_load` has checked each array's type and length, and text stays plain objects.
    """
    import pandas as pd

    columns = pd.Index(names, dtype=object)
    frame: pd.DataFrame = pd.DataFrame._from_arrays(  # type: ignore[attr-defined]
        arrays, columns=columns, index=pd.RangeIndex(rows), verify_integrity=False
    )
    return frame
