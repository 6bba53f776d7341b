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

Every entry lives in the content store (`querybench.store`, kind `RESULTS`: its sealing,
pruning, damage and concurrency rules, `<cache>/results/outcomes.sqlite3`): a run reads all its
gold in a few queries and writes what it computed in one transaction. Values are a pickle of
plain values, read back with an unpickler that can only build the value types the drivers
return (`cache_values`), so a planted entry can fail to load but cannot run code: a miss.

The content hash of a database file is remembered in the store too (`fingerprint <identity>`),
by the file's identity (device, inode, size, mtime and ctime in ns): a warm run does not read
every database again.
A database's state is its file and its sidecars (`EngineSpec.sidecars`: SQLite's `-wal` and
`-journal`, DuckDB's `.wal`), which readers apply on top of the file while they hold data:
rows committed to a `-wal` leave the file's bytes, size and times as they were. Such a
database is not cached at all, read or written (`UnsettledDatabase`, said once per file and
process), rather than keyed by its sidecars' bytes too: which frames of a `-wal` a reader
takes is decided by the `-shm` index beside it, which readers themselves rewrite, so no set
of bytes short of a copy taken under the writer's lock names that state.
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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

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
from querybench.file_digests import file_sha256
from querybench.store import Kind, Store, cache_root, open_store

if TYPE_CHECKING:  # the pool (and multiprocessing) loads only when a query must run
    import logging

    from querybench.engines.pool import QueryOutcome


def _log() -> logging.Logger:
    """This module's logger; `logging` is imported only when there is something to say (a
    warm `eval` never does, and it is 2 ms of its start-up)."""
    import logging

    return logging.getLogger(__name__)


# its own file before the content store (and the whole-run entries' table in it)
RESULTS = Kind(
    "results/outcomes.sqlite3", (), max_bytes=4 << 30, retired=("results/store.sqlite3",)
)
_FINGERPRINT = "fingerprint "  # the key of a database file's content hash, then its identity

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
    fingerprint = file_sha256(Path(path))  # a FIFO in a database's place is refused at once
    with _fingerprints_lock:
        _fingerprints[memo_key] = fingerprint
    return fingerprint


class ResultCache:
    """Results on disk in the content store under `directory` (else the cache root).

    Thread-safe; a process forked with an open cache opens its own connection on first use.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.root = cache_root() if directory is None else Path(directory).expanduser()
        self.directory = self.root / "results"
        self.path = self.root / RESULTS.file
        self._targets: dict[str, Target] = {}  # parsed once per database (the stat is not)
        self._lock = threading.Lock()
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
        found: dict[Q, Outcome] = {}
        for key, payload in self._entries(list(keys)).items():
            value = load_outcome(bytes(payload))
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
        """Store the results, with the content hashes computed since the last write, in one
        transaction; a value the safe loader could not rebuild is left out. `EngineError`
        when a database cannot be fingerprinted or is unsettled (nothing is written then);
        a store that cannot be written is said once and costs speed (`querybench.store`)."""
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
        with self._lock:
            fingerprints = [
                (_FINGERPRINT + k, v.encode()) for k, v in self._new_fingerprints.items()
            ]
            self._new_fingerprints.clear()
        if not rows and not fingerprints:
            return
        kept = self._store(create=True)
        if kept is not None:
            kept.put_many([*rows, *fingerprints])

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
            # unsettled since the lookup (already said), or gone: not cached
            with contextlib.suppress(EngineError, OSError):
                self.put(database, sql, outcome.result)
        return outcome

    def close(self) -> None:
        """Nothing to release: the store's connection is the process's (`open_store`)."""

    def fingerprint(self, path: str | Path) -> str:
        """The content hash a database file's keys are made of (see `_fingerprint`)."""
        return self._fingerprint(self._target(path))

    def _target(self, database: str | Path) -> Target:
        """The database's engine and file, parsed once per database (the stat is not)."""
        target = self._targets.get(str(database))
        if target is None:
            target = self._targets[str(database)] = parse_target(database)
        return target

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
        stored = self._entries([_FINGERPRINT + name]).get(_FINGERPRINT + name)
        fingerprint = bytes(stored).decode("ascii", "replace") if stored is not None else ""
        if len(fingerprint) == 64:
            with _fingerprints_lock:
                _fingerprints[identity] = fingerprint
            return fingerprint
        fingerprint = database_fingerprint(path)
        with self._lock:
            self._new_fingerprints[name] = fingerprint
        return fingerprint

    def _read(self, keys: list[str]) -> dict[str, Result]:
        found = {}
        for key, payload in self._entries(keys).items():
            result = load_result(bytes(payload))
            if result is not None:
                found[key] = result
        return found

    def _entries(self, keys: list[str]) -> dict[str, memoryview]:
        """The payloads of `keys` the store has; nothing when there is no store (a read makes
        none) or it cannot be read (a miss costs speed, not results)."""
        kept = self._store(create=False) if keys else None
        return {} if kept is None else kept.get_many(keys)

    def _store(self, *, create: bool) -> Store | None:
        return open_store(RESULTS, self.root, create=create)


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
