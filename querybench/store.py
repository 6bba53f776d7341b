"""The one content store: what querybench computes once and keeps on disk, and how.

- Location: `$QUERYBENCH_CACHE`, else `~/.cache/querybench` (`cache_root`); a kind of entry
  (`Kind`: query outcomes, parsed gold CSVs, parsed predictions, Spider 2.0 verdicts, whole
  BIRD runs) lives in one SQLite file under it (or under a root its caller names); a kind
  written with another shares its file, in a table of its own (`Kind.table`).
- Off-switch: `switched_on(*variables)`: a variable set to 0, off or no turns its caches off.
- Keying: an entry's key is made of everything that decides its value, by content: the bytes
  of the inputs, the source bytes of the code that decides it (`add_sources`, read from disk,
  never imported), the libraries' versions; never a name, a size or a timestamp.
- Sealing: an entry is the sha256 of its key and payload, then the payload (`seal`); one whose
  digest does not match the key it is read under (damaged, planted, moved) is a miss (`unseal`).
- Pruning: a store past its kind's `max_bytes` (its file, or a shared file's table's entries)
  drops the entries unused longest, down to three quarters of it, checked at each process's
  first write; an entry unused for a day is marked used when read.
- Creation: a new store is made whole in a private file, with no journal and no sync, then
  linked to its name (one another process linked first is kept): SQLite making it in place
  syncs a journal, the folder and the file, 10-30 ms on a VM disk, before a cold run's first
  write. Where links cannot be made, SQLite makes it in place.
- Damage: a store that is not a database is set aside (`<file>.damaged`) and started afresh; a
  read-only, full or foreign one is warned of once per cache folder and process
  (`warn_unusable`) and costs speed only, never a value: a read that fails is a miss, a write
  that fails is dropped.
- Concurrency: WAL mode (readers never wait for a writer), writes in `BEGIN IMMEDIATE`
  transactions; two writers of one key write the same bytes. New entries are held and written
  together (`Kind.batch` of them, a `put_many`'s, or inside `deferred_writes` when the last
  block ends), so a run's hundreds of entries cost a few commits; `get_many` reads hundreds
  in a few queries.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging
    from hashlib import _Hash

OFF_WORDS = ("0", "off", "no")
_DIGEST = 32
_TABLE = "sealed"  # a kind's table unless it shares another's file (`Kind.table`)
_TOUCH_AFTER_S = 86_400
_PENDING_MAX_BYTES = 16 << 20  # held entries written past this, deferring or not
_KEYS_PER_SELECT = 500  # below SQLite's oldest bound on bound parameters (999)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS {} (key TEXT PRIMARY KEY, entry BLOB NOT NULL, used REAL NOT NULL)"
)


def _log() -> logging.Logger:
    import logging  # only when there is something to say

    return logging.getLogger(__name__)


def cache_root() -> Path:
    """`$QUERYBENCH_CACHE`, else `~/.cache/querybench`."""
    return Path(os.environ.get("QUERYBENCH_CACHE") or "~/.cache/querybench").expanduser()


def switched_on(*variables: str) -> bool:
    """False when any of these environment variables says 0, off or no."""
    return all(os.environ.get(name, "1").strip().lower() not in OFF_WORDS for name in variables)


def add_sources(digest: _Hash, modules: Sequence[str]) -> bool:
    """Feed each module's name, length and source (read from disk, never imported) to
    `digest`, so that editing the code makes every entry it decided a miss; False when one
    cannot be read (then nothing should be stored or looked up)."""
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            return False
        try:
            source = Path(spec.origin).read_bytes()
        except OSError:
            return False
        digest.update(f"{name} {len(source)}\n".encode())
        digest.update(source)
    return True


def _digest(key: str, payload: bytes | memoryview) -> bytes:
    digest = hashlib.sha256(key.encode())
    digest.update(b"\0")
    digest.update(payload)
    return digest.digest()


def seal(key: str, payload: bytes) -> bytes:
    """The entry of `payload` under `key`: the sha256 of both, then the payload."""
    return _digest(key, payload) + payload


def unseal(entry: bytes, key: str) -> memoryview | None:
    """The payload `seal` put under `key`; None when the entry is not that."""
    view = memoryview(entry)
    payload = view[_DIGEST:]
    return payload if len(entry) > _DIGEST and _digest(key, payload) == entry[:_DIGEST] else None


_warned: set[tuple[str, int]] = set()


def warn_unusable(log: logging.Logger, path: Path, exc: BaseException) -> None:
    """One warning per cache folder and process, whichever of its stores fails first: a
    read-only, full or foreign cache costs speed, never a verdict."""
    root = str(path.parent.parent)  # <cache>/<kind's folder>/<file>
    if (root, os.getpid()) in _warned:
        return
    _warned.add((root, os.getpid()))
    cause = exc.__cause__ if isinstance(exc.__cause__, sqlite3.Error) else exc
    environmental = isinstance(cause, OSError) or any(
        word in str(cause) for word in ("readonly", "full", "disk I/O", "unable to open", "locked")
    )
    hint = (
        "set QUERYBENCH_CACHE to a writable folder with room"
        if environmental
        else f"delete {path} to start afresh"  # corrupt, or another version's layout
    )
    log.warning("cache %s unusable, scoring without it (slower; %s): %s", path, hint, exc)


@dataclass(frozen=True)
class Kind:
    """A kind of entry: its file under the cache root, the switches that turn it off, its
    bound on disk and how many new entries are held before they are written."""

    file: str
    switches: tuple[str, ...]
    max_bytes: int
    batch: int = 1
    page_bytes: int = 4096  # a new store's page size
    # Its table: a kind written with another (a run's outcomes and its whole-run entry) can
    # share that one's file, so a cold run creates, checkpoints and syncs one file, not two.
    table: str = _TABLE
    wal_bytes: int = 4 << 20  # its write-ahead log checkpointed past this
    # files an earlier layout of this kind left under the cache root, removed (with their
    # sidecars) when its store is made, so an upgrade leaves no dead cache behind
    retired: tuple[str, ...] = ()

    def path(self) -> Path:
        return cache_root() / self.file

    def on(self) -> bool:
        return switched_on(*self.switches)


class Store:
    """One kind's entries in one SQLite file, keyed and sealed as the module says."""

    def __init__(self, path: Path, kind: Kind) -> None:
        self.path = path
        self.kind = kind
        self.lock = threading.Lock()
        self.pruned = False
        self.pending: dict[str, bytes] = {}  # sealed entries not yet written
        self.pending_bytes = 0
        self._touch = f"UPDATE {kind.table} SET used = ? WHERE key = ?"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = self._open()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):
                raise  # locked, read-only, ...: not a damaged store
            try:
                os.replace(path, path.with_name(f"{path.name}.damaged"))
            except OSError:
                raise exc from None  # not set aside (a read-only folder): unusable as it is
            _log().warning("cache %s is damaged (%s): starting a new one", path, exc)
            self.db = self._open()

    def _open(self) -> sqlite3.Connection:
        if not self.path.exists():
            self._create()
        elif not self.path.is_file():  # a FIFO would hold the open for ever: damage
            raise sqlite3.DatabaseError(f"{self.path} is not a regular file")
        for suffix in ("-wal", "-shm", "-journal"):
            # SQLite opens these by name too; one that is no regular file holds none of the
            # store's changes, so it goes and SQLite makes its own.
            sidecar = self.path.with_name(self.path.name + suffix)
            with contextlib.suppress(FileNotFoundError):
                if not stat.S_ISREG(os.stat(sidecar).st_mode):
                    os.unlink(sidecar)
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        try:
            db.execute(f"PRAGMA page_size={self.kind.page_bytes}")  # a new file's only
            db.execute("PRAGMA journal_mode=WAL")
            page = db.execute("PRAGMA page_size").fetchone()[0]
            db.execute(f"PRAGMA wal_autocheckpoint={max(1, self.kind.wal_bytes // page)}")
            db.execute("PRAGMA synchronous=NORMAL")  # a crash may lose entries, never corrupt
            db.execute(_SCHEMA.format(self.kind.table))
        except BaseException:
            db.close()
            raise
        return db

    def _create(self) -> None:
        """An empty store in WAL mode put at its path whole (the module's Creation)."""
        path = self.path
        partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.new")
        try:
            with contextlib.closing(sqlite3.connect(partial, isolation_level=None)) as db:
                db.execute(f"PRAGMA page_size={self.kind.page_bytes}")
                db.execute("PRAGMA journal_mode=OFF")
                db.execute("PRAGMA synchronous=OFF")
                db.execute(_SCHEMA.format(self.kind.table))
                db.execute("PRAGMA journal_mode=WAL")
            os.link(partial, path)
        except (OSError, sqlite3.Error):  # linked first by another, or no links here
            pass
        finally:
            with contextlib.suppress(OSError):
                partial.unlink()
        root = path.parents[len(Path(self.kind.file).parts) - 1]
        for name in self.kind.retired:
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(OSError):
                    (root / f"{name}{suffix}").unlink()

    def get_many(self, keys: Sequence[str]) -> dict[str, memoryview]:
        """`get` of each key, read in a few queries; the keys with a whole entry."""
        now = time.time()
        found: dict[str, memoryview] = {}
        entries: dict[str, object] = {}
        try:
            with self.lock:
                wanted = []
                for key in keys:
                    held = self.pending.get(key)
                    if held is None:
                        wanted.append(key)
                    else:
                        entries[key] = held
                stale = []
                for i in range(0, len(wanted), _KEYS_PER_SELECT):
                    chunk = wanted[i : i + _KEYS_PER_SELECT]
                    marks = ",".join("?" * len(chunk))
                    query = f"SELECT key, entry, used FROM {self.kind.table} WHERE key IN ({marks})"
                    for key, entry, used in self.db.execute(query, chunk):
                        entries[key] = entry
                        if isinstance(used, float | int) and used < now - _TOUCH_AFTER_S:
                            stale.append((now, key))
                if stale:
                    with contextlib.suppress(sqlite3.Error), self.db:  # a read-only one serves
                        self.db.execute("BEGIN")
                        self.db.executemany(self._touch, stale)
        except sqlite3.Error as exc:
            warn_unusable(_log(), self.path, exc)
            return found
        for key, entry in entries.items():
            payload = unseal(entry, key) if isinstance(entry, bytes) else None
            if payload is not None:
                found[key] = payload
            else:
                _log().debug("cache entry %s in %s is not whole: a miss", key, self.path)
        return found

    def get(self, key: str) -> memoryview | None:
        """The payload under `key`; None if absent or not a whole entry of this key."""
        now = time.time()
        try:
            with self.lock:
                entry = self.pending.get(key)
                if entry is None:
                    row = self.db.execute(
                        f"SELECT entry, used FROM {self.kind.table} WHERE key = ?", (key,)
                    ).fetchone()
                    if row is None:
                        return None
                    entry = row[0]
                    if isinstance(row[1], float | int) and row[1] < now - _TOUCH_AFTER_S:
                        with contextlib.suppress(sqlite3.Error):  # a read-only store serves
                            self.db.execute(self._touch, (now, key))
        except sqlite3.Error as exc:
            warn_unusable(_log(), self.path, exc)
            return None
        if not isinstance(entry, bytes):  # a store some other program made: a miss
            return None
        payload = unseal(entry, key)
        if payload is None:
            _log().debug("cache entry %s in %s is not whole: a miss", key, self.path)
        return payload

    def has(self, key: str) -> bool:
        try:
            with self.lock:
                if key in self.pending:
                    return True
                query = f"SELECT 1 FROM {self.kind.table} WHERE key = ?"
                row = self.db.execute(query, (key,)).fetchone()
        except sqlite3.Error:
            return False
        return row is not None

    def pending_payload(self, key: str) -> memoryview | None:
        """A payload held for writing under `key`, if any."""
        entry = self.pending.get(key)
        return None if entry is None else memoryview(entry)[_DIGEST:]

    def put(self, key: str, payload: bytes) -> None:
        """Held, then written with the others (`Kind.batch`, `deferred_writes`, `flush`)."""
        entry = seal(key, payload)
        with self.lock:
            self.pending[key] = entry
            self.pending_bytes += len(entry)
            due = len(self.pending) >= self.kind.batch and not _deferring()
            if due or self.pending_bytes >= _PENDING_MAX_BYTES:
                self._write_pending()

    def put_many(self, items: Iterable[tuple[str, bytes]]) -> None:
        """Each entry held, then all those held written together now (or when the last
        `deferred_writes` block ends)."""
        entries = [(key, seal(key, payload)) for key, payload in items]
        with self.lock:
            for key, entry in entries:
                self.pending[key] = entry
                self.pending_bytes += len(entry)
            if not _deferring() or self.pending_bytes >= _PENDING_MAX_BYTES:
                self._write_pending()

    def hold(self, key: str, payload: bytes) -> None:
        """`put`, written with the next write (or `flush`), never on its own."""
        entry = seal(key, payload)
        with self.lock:
            self.pending[key] = entry
            self.pending_bytes += len(entry)

    def flush(self) -> None:
        with self.lock:
            self._write_pending()

    def _write_pending(self) -> None:
        """The held entries in one transaction, the write lock taken first: a deferred one
        that reads (the prune check) loses its insert, SQLITE_BUSY with no wait, if another
        process commits in between."""
        now = time.time()
        rows = [(key, entry, now) for key, entry in self.pending.items()]
        self.pending.clear()
        self.pending_bytes = 0
        if not rows:
            return
        try:
            with self.db:  # BEGIN ... COMMIT, or ROLLBACK on an error
                self.db.execute("BEGIN IMMEDIATE")
                if not self.pruned:
                    self.pruned = True
                    self._prune()
                insert = f"INSERT OR REPLACE INTO {self.kind.table} VALUES (?, ?, ?)"
                self.db.executemany(insert, rows)
        except sqlite3.Error as exc:  # a full or read-only cache costs speed, never a value
            warn_unusable(_log(), self.path, exc)

    def _prune(self) -> None:
        """The entries unused longest deleted, down to three quarters of `max_bytes`, once the
        file outgrows it (freed pages are reused, so the file stays near that)."""
        table = self.kind.table
        if table == _TABLE:  # the file's own kind: its size
            pages, size = (self.db.execute(f"PRAGMA {p}").fetchone()[0] for p in _SIZE_PRAGMAS)
            held = pages * size
        else:  # a kind beside another in its file: its entries' (their lengths, not read)
            held = self.db.execute(f"SELECT coalesce(sum(length(entry)), 0) FROM {table}")
            held = held.fetchone()[0]
        if held <= self.kind.max_bytes:
            return
        excess = held - self.kind.max_bytes * 3 // 4
        doomed = []
        for key, length in self.db.execute(f"SELECT key, length(entry) FROM {table} ORDER BY used"):
            doomed.append((key,))
            excess -= length
            if excess <= 0:
                break
        self.db.executemany(f"DELETE FROM {table} WHERE key = ?", doomed)


_SIZE_PRAGMAS = ("page_count", "page_size")
_stores: dict[tuple[str, str, int], Store | None] = {}
_stores_lock = threading.Lock()
_paths: dict[tuple[str | None, str | None, Kind, Path | None], str] = {}  # the cache -> file
_deferral = (0, 0)  # (the process, its open `deferred_writes` blocks, in any thread)
_deferral_lock = threading.Lock()


def open_store(kind: Kind, root: Path | None = None, *, create: bool = True) -> Store | None:
    """This process's connection to the kind's store under `root`, else the current cache
    root (a forked worker opens its own: a SQLite connection must not cross a fork); None
    when it is switched off or cannot be opened (said once, `warn_unusable`), or when there
    is no store yet and `create` is false (a read makes none)."""
    if not kind.on():
        return None
    where = (os.environ.get("QUERYBENCH_CACHE"), os.environ.get("HOME"), kind, root)
    if (name := _paths.get(where)) is None:  # a path built per lookup cost 20 µs each
        name = _paths[where] = str(kind.path() if root is None else root / kind.file)
    handle = (name, kind.table, os.getpid())
    with _stores_lock:
        if handle not in _stores:
            if not create and not os.path.exists(name):
                return None
            path = Path(name)
            try:
                _stores[handle] = Store(path, kind)
            except (OSError, sqlite3.Error) as exc:
                warn_unusable(_log(), path, exc)
                _stores[handle] = None
        return _stores[handle]


def own_stores() -> list[Store]:
    """This process's stores (a parent's, copied into a fork, and its held entries with them,
    are not its own)."""
    pid = os.getpid()
    with _stores_lock:
        return [s for (_, _, owner), s in _stores.items() if owner == pid and s is not None]


def flush() -> None:
    """Write this process's held entries, in every store."""
    for store in own_stores():
        store.flush()


@contextlib.contextmanager
def deferred_writes() -> Iterator[None]:
    """New entries written together when the last open block ends (or past 16 MiB held), not
    a transaction per batch: what a run scoring hundreds of files wraps its reads in. A fork of
    a deferring process writes through until it opens its own block."""
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
