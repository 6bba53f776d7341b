"""Query outcomes (gold and predictions) computed once and kept on disk, keyed by content.

The key is sha256 of (engine kind, driver version (SQLite's with its compile options), result
byte cap, database file content hash, SQL text): a database file edited in place, or a driver
upgrade or another build that could change results, is a new key. A successful result is
whole (a capped query fails instead), so it serves any row cap it fits under, checked on read.
Besides results, `get_outcomes` / `put_outcomes` keep a query's deterministic failure (bad
SQL, a refused statement) with its exact message, under a key that adds the row cap (a query
can fail past row n only when it gets there); a timeout, a cap, a killed or crashed child,
anything environmental is never stored, nor is any outcome of a query that may read the clock,
a random draw, the file's path or the engine's settings (`cache_values.volatile`).

Every entry lives in one SQLite file (`<cache>/results/store.sqlite3`, WAL mode): a run reads
all its gold in one query and writes what it computed in one transaction, where one file per
result cost a syscall or three per entry and about 1 ms per created file on a VM disk.
SQLite's locking keeps concurrent runs (and the RL reward's worker processes) safe. Values are a
pickle of plain values, read back with an unpickler that can only build the value types the
drivers return, so a planted entry can fail to load but cannot run code; such an entry, or a
store that is not a database at all, is a miss (the store is set aside and started afresh).

The content hash of a database file is remembered in the store too, by the file's identity
(device, inode, size, mtime and ctime in ns): a warm run does not read every database again.
A database's state is its file and its sidecars (`EngineSpec.sidecars`: SQLite's `-wal` and
`-journal`, DuckDB's `.wal`), which readers apply on top of the file while they hold data:
rows committed to a `-wal` leave the file's bytes, size and times as they were. Such a
database is not cached at all, read or written (`UnsettledDatabase`, said once per file and
process), rather than keyed by its sidecars' bytes too: which frames of a `-wal` a reader
takes is decided by the `-shm` index beside it, which readers themselves rewrite, so no set
of bytes short of a copy taken under the writer's lock names that state.
So are whole BIRD runs (`get_run` / `put_run`, `evaluation/bird_run_cache.py`), in a table the
first such write makes, through the same connection as the run's outcomes: a cold run creates
and syncs one file.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import pickle
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from querybench.engines import Target, parse_target
from querybench.engines.base import Result, max_result_bytes
from querybench.engines.cache_values import (
    Outcome,
    dump_error,
    dump_result,
    load_outcome,
    load_result,
    storable_error,
    volatile,
)
from querybench.engines.registry import kind_spec
from querybench.errors import EngineError, UnsettledDatabase
from querybench.store import cache_root, warn_unusable

if TYPE_CHECKING:  # the pool (and multiprocessing) loads only when a query must run
    import logging

    from querybench.engines.pool import QueryOutcome


def _log() -> logging.Logger:
    """This module's logger; `logging` is imported only when there is something to say (a
    warm `eval` never does, and it is 2 ms of its start-up)."""
    import logging

    return logging.getLogger(__name__)


_CHUNK = 1 << 20
_STORE = "store.sqlite3"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS fingerprints (identity TEXT PRIMARY KEY, sha256 TEXT NOT NULL)"
    " WITHOUT ROWID;"
)
# Whole runs' entries (`evaluation/bird_run_cache.py`), the table made by their first write.
_RUNS = (
    "CREATE TABLE IF NOT EXISTS runs"
    " (key TEXT PRIMARY KEY, entry BLOB NOT NULL, written REAL NOT NULL) WITHOUT ROWID"
)
_KEYS_PER_SELECT = 500  # below SQLite's oldest bound on bound parameters (999)

Identity = tuple[int, int, int, int, int]
Query = tuple[str | Path, str]  # (database, SQL)
Q = TypeVar("Q", bound=Query)

_fingerprints: dict[Identity, str] = {}
_fingerprints_lock = threading.Lock()


def _identity(path: str | Path) -> Identity:
    # The file's identity (device, inode) rather than its resolved name: one stat per lookup,
    # no walk of the path's links. The ctime too: a file swapped in with its mtime preserved
    # is still noticed.
    stat = os.stat(path)
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


_said_unsettled: set[tuple[str, int]] = set()


def sidecars_with_data(target: Target) -> list[Path]:
    """The sidecars of a database file (its engine's `EngineSpec.sidecars`) that hold data: a
    missing or empty one holds none."""
    held = []
    for suffix in kind_spec(target.kind).sidecars:
        sidecar = Path(f"{target.path}{suffix}")
        try:
            size = sidecar.stat().st_size
        except FileNotFoundError:
            continue
        if size:
            held.append(sidecar)
    return held


def require_settled(target: Target) -> None:
    """Raise `UnsettledDatabase` when a sidecar of the database holds data (an empty one, as
    a read-only reader of a WAL database leaves behind, holds none); said once per file and
    process, since every lookup and write of a run asks again."""
    held = [sidecar.name for sidecar in sidecars_with_data(target)]
    if not held:
        return
    message = (
        f"{target.path}: {' and '.join(held)} holds changes not yet in the file (a writer's, "
        "or left by a crash); results on this database are not cached"
    )
    if (str(target.path), os.getpid()) not in _said_unsettled:
        _said_unsettled.add((str(target.path), os.getpid()))
        _log().warning("%s", message)
    raise UnsettledDatabase(message)


def database_fingerprint(path: str | Path) -> str:
    """sha256 of the file's bytes, streamed; remembered while its size and times stay put."""
    memo_key = _identity(path)
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
    """Results on disk in one SQLite store under `directory` (`directory/store.sqlite3`).

    Thread-safe; a process forked with an open cache reopens the store on first use.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        root = cache_root() if directory is None else Path(directory).expanduser()
        self.directory = root / "results"
        self.path = self.directory / _STORE
        self._targets: dict[str, Target] = {}  # parsed once per database (the stat is not)
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        self._new_fingerprints: dict[str, str] = {}  # identity -> sha256, not yet stored

    def key(self, database: str | Path, sql: str) -> str:
        return self._key(database, sql, [])

    def _key(
        self,
        database: str | Path,
        sql: str,
        more: list[object],
        seen: dict[str, str] | None = None,
    ) -> str:
        """The key: sha256 of the JSON list of the database's part, `sql` and `more`; `seen`
        keeps each database's part, as JSON text, across one bulk call (one `stat` of the file
        per call, not per query)."""
        head = None if seen is None else seen.get(str(database))
        if head is None:
            target = self._target(database)
            kind = target.kind
            fingerprint = self._fingerprint(target)
            parts = [kind, _driver_version(kind), max_result_bytes(), fingerprint]
            head = json.dumps(parts)[:-1] + ", "  # the list's text up to its next item
            if seen is not None:
                seen[str(database)] = head
        tail = ", " + json.dumps(more)[1:] if more else "]"
        return hashlib.sha256((head + json.dumps(sql) + tail).encode()).hexdigest()

    def get(self, database: str | Path, sql: str) -> Result | None:
        if volatile(sql):
            return None
        key = self.key(database, sql)
        return self._read([key]).get(key)

    def get_many(self, queries: Iterable[Q]) -> dict[Q, Result]:
        """The cached result of each query that has one, read in one pass over the store;
        a query whose database cannot be fingerprinted (missing, a server, unsettled) or
        whose rows are of the moment (`volatile`: never stored, nor read if an older version
        stored it) is left out."""
        keys: dict[str, list[Q]] = {}
        for query in queries:
            if volatile(query[1]):
                continue
            try:
                keys.setdefault(self.key(*query), []).append(query)
            except (EngineError, OSError):
                continue
        found = self._read(list(keys))
        return {query: found[key] for key, same in keys.items() if key in found for query in same}

    def get_outcomes(self, queries: Iterable[Q], *, max_rows: int | None) -> dict[Q, Outcome]:
        """`get_many` with the stored failures too, for queries run under `max_rows`: a
        result with more rows than that is left out (the capped query would fail)."""
        keys: dict[str, list[Q]] = {}
        seen: dict[str, str] = {}
        for query in queries:
            try:
                database, sql = query
                if volatile(sql):
                    continue
                keys.setdefault(self._key(database, sql, [], seen), []).append(query)
                failed = self._key(database, sql, ["error", max_rows], seen)
                keys.setdefault(failed, []).append(query)
            except (EngineError, OSError):
                continue
        rows = self._select("SELECT key, value FROM results WHERE key IN", list(keys))
        found: dict[Q, Outcome] = {}
        for key, data in rows.items():
            value = load_outcome(data) if isinstance(data, bytes) else None
            if isinstance(value, Result) and max_rows is not None and len(value.rows) > max_rows:
                continue
            if value is not None:
                found |= dict.fromkeys(keys[key], value)
        return found

    def put_outcomes(
        self, items: Iterable[tuple[Query, Outcome]], *, max_rows: int | None, max_bytes: int
    ) -> None:
        """`put_many` of results and deterministic failures (`storable_error`) run under
        `max_rows`; an entry over `max_bytes`, or of a database that cannot be fingerprinted
        (a server, a file gone), is left out."""
        rows = []
        seen: dict[str, str] = {}
        for (database, sql), outcome in items:
            if volatile(sql):
                continue
            try:
                if isinstance(outcome, Result):
                    data = dump_result(outcome)
                    if len(data) <= max_bytes:
                        rows.append((self._key(database, sql, [], seen), data))
                elif storable_error(outcome):
                    key = self._key(database, sql, ["error", max_rows], seen)
                    rows.append((key, dump_error(outcome)))
            except (pickle.PicklingError, TypeError, AttributeError, EngineError, OSError):
                continue
        self._write(rows)

    def put(self, database: str | Path, sql: str, result: Result) -> None:
        self.put_many([((database, sql), result)])

    def put_many(self, items: Iterable[tuple[Query, Result]]) -> None:
        """Store the results in one transaction; a value the safe loader could not rebuild is
        left out. Raises `OSError` when the store cannot be written, `EngineError` when a
        database cannot be fingerprinted or is unsettled (nothing is written then)."""
        rows = []
        seen: dict[str, str] = {}
        for (database, sql), result in items:
            if volatile(sql):
                continue
            try:
                data = dump_result(result)
            except (pickle.PicklingError, TypeError, AttributeError):
                continue
            rows.append((self._key(database, sql, [], seen), data))
        self._write(rows)

    def _write(self, rows: list[tuple[str, bytes]]) -> None:
        if not rows and not self._new_fingerprints:
            return
        self._transaction(
            lambda db: db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?)", rows)
        )

    def _transaction(self, write: Callable[[sqlite3.Connection], object]) -> None:
        """`write`, then the content hashes computed since the last write, in one transaction
        (the store made first if need be); `OSError` when the store cannot be written."""
        with self._lock:
            try:
                db = self._connect(create=True)
                assert db is not None
                db.execute("BEGIN IMMEDIATE")
                try:
                    write(db)
                    db.executemany(
                        "INSERT OR REPLACE INTO fingerprints VALUES (?, ?)",
                        self._new_fingerprints.items(),
                    )
                    db.execute("COMMIT")
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                self._new_fingerprints.clear()
            except sqlite3.Error as exc:
                raise OSError(f"{self.path}: {exc}") from exc

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
        from querybench.engines.pool import QueryOutcome

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
                warn_unusable(_log(), self.path, exc)
            except EngineError:  # unsettled since the lookup: not cached, already said
                pass
        return outcome

    def close(self) -> None:
        with self._lock:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db = None

    def fingerprint(self, path: str | Path) -> str:
        """The content hash a database file's keys are made of (see `_fingerprint`)."""
        return self._fingerprint(self._target(path))

    def _target(self, database: str | Path) -> Target:
        """The database's engine and file, parsed once per database (the stat is not)."""
        target = self._targets.get(str(database))
        if target is None:
            target = self._targets[str(database)] = parse_target(database)
        return target

    def get_run(self, key: str) -> bytes | None:
        """The entry of a whole run (`evaluation/bird_run_cache.py`), if the store has one."""
        found = self._select("SELECT key, entry FROM runs WHERE key IN", [key])
        value = found.get(key)
        return value if isinstance(value, bytes) else None

    def put_run(self, key: str, entry: bytes, *, keep: int) -> None:
        """Store a whole run's entry, with the content hashes computed meanwhile, keeping the
        `keep` newest entries; `OSError` when the store cannot be written. The table is made
        here, so a store that is only read (a shared read-only cache) never needs a write."""

        def write(db: sqlite3.Connection) -> None:
            db.execute(_RUNS)
            db.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?)", (key, entry, time.time()))
            db.execute(
                "DELETE FROM runs WHERE key NOT IN "
                "(SELECT key FROM runs ORDER BY written DESC LIMIT ?)",
                (keep,),
            )

        self._transaction(write)

    def _fingerprint(self, target: Target) -> str:
        """`database_fingerprint`, looked up in the store (by the file's identity) before the
        file is read; a new one is stored with the next write. `UnsettledDatabase` when the
        file is not the database's whole state (`require_settled`)."""
        require_settled(target)
        path = target.path
        identity = _identity(path)
        with _fingerprints_lock:
            known = _fingerprints.get(identity)
        if known is not None:
            return known
        name = ":".join(map(str, identity))
        stored = self._select("SELECT identity, sha256 FROM fingerprints WHERE identity IN", [name])
        fingerprint = stored.get(name)
        if isinstance(fingerprint, str) and len(fingerprint) == 64:
            with _fingerprints_lock:
                _fingerprints[identity] = fingerprint
            return fingerprint
        fingerprint = database_fingerprint(path)
        with self._lock:
            self._new_fingerprints[name] = fingerprint
        return fingerprint

    def _read(self, keys: list[str]) -> dict[str, Result]:
        rows = self._select("SELECT key, value FROM results WHERE key IN", keys)
        found = {}
        for key, data in rows.items():
            result = load_result(data) if isinstance(data, bytes) else None
            if result is not None:
                found[key] = result
        return found

    def _select(self, head: str, names: list[str]) -> dict[str, Any]:
        """`head (?, ?, ...)` over `names` in chunks; nothing when there is no store (or it
        cannot be read: a miss costs speed, not results)."""
        found: dict[str, Any] = {}
        if not names:
            return found
        with self._lock:
            try:
                db = self._connect(create=False)
                if db is None:
                    return found
                for i in range(0, len(names), _KEYS_PER_SELECT):
                    chunk = names[i : i + _KEYS_PER_SELECT]
                    marks = ",".join("?" * len(chunk))
                    found.update(db.execute(f"{head} ({marks})", chunk).fetchall())
            except sqlite3.Error as exc:
                _log().debug("result cache %s not read: %s", self.path, exc)
        return found

    def _connect(self, *, create: bool) -> sqlite3.Connection | None:
        """The store's connection (lock held), opened on first use in this process; None
        when there is no store yet and `create` is false."""
        if self._db is not None and self._pid == os.getpid():
            return self._db
        self._db = None  # a connection inherited through fork is never used
        if not create and not self.path.is_file():
            return None
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            db = _open_store(self.path)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):
                raise  # locked, read-only, ...: not a damaged store
            try:
                os.replace(self.path, self.path.with_name(f"{_STORE}.damaged"))
            except OSError:
                raise exc from None  # not set aside (a read-only folder): unusable as it is
            _log().warning("result cache %s is damaged (%s): starting a new one", self.path, exc)
            db = _open_store(self.path)
        self._db, self._pid = db, os.getpid()
        return db


def _open_store(path: Path) -> sqlite3.Connection:
    if not path.exists():
        _create_store(path)
    db = sqlite3.connect(path, timeout=60.0, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")  # WAL keeps the store whole on a crash
        db.executescript(_SCHEMA)
    except BaseException:
        db.close()
        raise
    return db


def _create_store(path: Path) -> None:
    """An empty store in WAL mode put at `path` whole: made in a private file with no journal
    and no sync, then linked to its name (a store another process linked first is kept).
    SQLite making it in place syncs a rollback journal, the folder and the file, four
    fdatasyncs (10-30 ms on a VM disk) before a cold run's first write. Nothing is lost to a
    crash: the first write's checkpoint syncs the file and the folder, and a file left
    unreadable is set aside as damaged, as any other. Where links cannot be made, SQLite
    makes the store itself."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.new")
    try:
        with contextlib.closing(sqlite3.connect(partial, isolation_level=None)) as db:
            db.execute("PRAGMA journal_mode=OFF")
            db.execute("PRAGMA synchronous=OFF")
            db.executescript(_SCHEMA)
            db.execute("PRAGMA journal_mode=WAL")
        os.link(partial, path)
    except (OSError, sqlite3.Error):  # linked first by another, or no links here
        pass
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()


def _driver_version(kind: str) -> str:
    if kind == "sqlite":
        return sqlite_build()
    import duckdb

    return str(duckdb.__version__)


@functools.cache
def sqlite_build() -> str:
    """SQLite's version and a digest of its compile options: two builds of one version (a
    system Python's, conda's) differ in the functions they have (math, JSON), so in what a
    query returns or whether it fails (`no such function: sqrt`)."""
    options = json.dumps(_sqlite_compile_options()).encode()
    return f"{sqlite3.sqlite_version} {hashlib.sha256(options).hexdigest()[:16]}"


def _sqlite_compile_options() -> list[str]:
    with contextlib.closing(sqlite3.connect(":memory:")) as db:
        return sorted(str(row[0]) for row in db.execute("PRAGMA compile_options"))
