"""Spider 2.0 exec_result verdicts kept on disk by everything they depend on, so a warm
re-score reads and hashes each file once and parses, compares and imports pandas for nothing.

Scoring an instance is a pure function of the prediction's bytes, the instance's gold files
(names, order and bytes), its eval config line (`condition_cols`, `ignore_order`), the
benchmark (lite and snow read `condition_cols` differently) and the code: the scorers' own and
the parser's libraries. An entry's key is sha256 of all of them: the code as the source bytes
of `SCORER_MODULES` (read from disk, never imported) and the installed versions of
`LIBRARIES`; the files by their bytes, read and hashed on every run (no name, size or mtime
is trusted). Both verdicts are stored, so `--scoring` only chooses between them.

Only what the comparison alone decides is stored: both verdicts a pass or `wrong_result`. A
refused or unparsable prediction, a gold error, a scorer error or running out of memory is
scored again every time, as is a prediction of `LARGE_FILE_BYTES` or more (spooled, not kept).

An entry is the sha256 of its payload, then the payload: the JSON of its key and both verdicts,
messages and details included, so a results file written from the store is byte for byte the
one scoring writes. An entry that fails any check is a miss: the instance is scored again and
the entry rewritten. Entries live in one SQLite file (WAL: readers never wait for a writer; two
writers of one key write the same bytes), new ones written `WRITE_BATCH` to a transaction, the
oldest written deleted once the file outgrows `MAX_STORE_BYTES`.

`QUERYBENCH_VERDICT_CACHE=0` scores every instance every time; `QUERYBENCH_CSV_CACHE=0`, which
turns off the parse cache, turns this store off too.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from querybench.engines.cache import default_cache_dir, warn_unusable
from querybench.errors import ErrorCode
from querybench.evaluation import prediction_file
from querybench.evaluation.detail import VerdictDetail
from querybench.evaluation.kept_entries import add_sources, sealed, unsealed
from querybench.evaluation.spider2_verdicts import Verdicts
from querybench.evaluation.verdict import Verdict
from querybench.tasks.spider2_gold import EvalSpec

log = logging.getLogger(__name__)

# The modules whose code decides a verdict (the scorers, the parser, the frames the parse cache
# rebuilds, the verdict types); `tests/test_verdict_cache.py` holds this to the import graph.
SCORER_MODULES = tuple(
    f"querybench.{name}"
    for name in (
        "errors",
        "evaluation.csv_cache",
        "evaluation.detail",
        "evaluation.large_order",
        "evaluation.large_result",
        "evaluation.large_scoring",
        "evaluation.prediction_file",
        "evaluation.record",
        "evaluation.result_csv",
        "evaluation.kept_entries",
        "evaluation.spider1_exact",
        "evaluation.spider1_sql",
        "evaluation.spider1_tokens",
        "evaluation.spider2",
        "evaluation.spider2_eval",
        "evaluation.spider2_gold",
        "evaluation.spider2_official",
        "evaluation.spider2_strict",
        "evaluation.spider2_verdicts",
        "evaluation.verdict",
        "evaluation.verdict_cache",
    )
)
LIBRARIES = ("numpy", "pandas", "pyarrow")
WRITE_BATCH = 256
MAX_STORE_BYTES = 256 << 20
_OFF = ("0", "off", "no")
_NOT_KEPT = (
    ErrorCode.SCORER_ERROR,
    ErrorCode.TOO_LARGE,
)  # what an exception of the moment may have made


def enabled() -> bool:
    return all(
        os.environ.get(name, "1").strip().lower() not in _OFF
        for name in ("QUERYBENCH_VERDICT_CACHE", "QUERYBENCH_CSV_CACHE")
    )


def store_path() -> Path:
    return default_cache_dir() / "verdicts" / "spider2.sqlite3"


@functools.cache
def scorer_identity() -> bytes | None:
    """sha256 of the scorer modules' source and the libraries' versions; None when a source
    cannot be read (then nothing is stored or looked up)."""
    from importlib import metadata  # 10 ms: only once a verdict is looked up

    digest = hashlib.sha256()
    if not add_sources(digest, SCORER_MODULES):
        return None
    for library in LIBRARIES:
        try:
            version = metadata.version(library)
        except metadata.PackageNotFoundError:
            version = "absent"
        digest.update(f"{library} {version}\n".encode())
    return digest.digest()


@dataclass(frozen=True)
class Keyed:
    """An instance's verdict key and the gold files' bytes it was made of: the scorer parses
    these very bytes, so a gold file rewritten meanwhile cannot be stored under this key. The
    sha256 of each file's bytes, the key's parts, are the parsed-CSV cache's too."""

    key: str
    gold_bytes: tuple[bytes, ...]
    gold_digests: tuple[bytes, ...]
    prediction_digest: bytes


def instance_key(
    benchmark: str,
    spec: EvalSpec,
    gold_paths: Sequence[Path],
    single: bool,
    prediction: bytes | bytearray | memoryview,
) -> Keyed | None:
    """The key of one instance's verdicts; None when it gets none (the store is off, the
    scorer's source cannot be read, a gold file is unreadable, which scoring reports, or of
    `LARGE_FILE_BYTES` or more, which is read a chunk at a time, never whole)."""
    identity = scorer_identity() if enabled() else None
    if identity is None:
        return None
    digest = hashlib.sha256(identity)
    config = [benchmark, spec.instance_id, spec.condition_cols, spec.ignore_order, single]
    digest.update(json.dumps([*config, [p.name for p in gold_paths]]).encode() + b"\n")
    golds, gold_digests = [], []
    for path in gold_paths:
        try:
            with open(path, "rb") as f:
                if os.fstat(f.fileno()).st_size >= prediction_file.LARGE_FILE_BYTES:
                    return None
                golds.append(f.read())
        except OSError:
            return None
        gold_digests.append(hashlib.sha256(golds[-1]).digest())
        digest.update(gold_digests[-1])
    prediction_digest = hashlib.sha256(prediction).digest()
    digest.update(prediction_digest)
    return Keyed(digest.hexdigest(), tuple(golds), tuple(gold_digests), prediction_digest)


def lookup(key: str) -> Verdicts | None:
    """The stored verdicts of `key`; None if absent or not a well-formed entry for it."""
    store = _store()
    entry = store.get(key) if store is not None else None
    if entry is None:
        return None
    verdicts = _decoded(entry, key)
    if verdicts is None:
        log.debug("verdict cache entry %s is not valid; scoring again", key)
    return verdicts


def remember(key: str, verdicts: Verdicts) -> None:
    """Keep `verdicts` under `key` unless one is a scorer error or ran out of memory (written
    in batches: `flush` writes the rest); the caller keeps none that read an unreadable gold."""
    if any(v.error in _NOT_KEPT for v in (verdicts.official, verdicts.strict)):
        return
    store = _store()
    if store is not None:
        store.add(key, _encoded(key, verdicts))


def flush() -> None:
    """Write the entries this process has not written yet."""
    store = _store()
    if store is not None:
        store.write()


def _verdict_json(verdict: Verdict) -> list[Any]:
    detail = None if verdict.detail is None else verdict.detail.to_json()
    return [verdict.score, verdict.error, verdict.message, detail]


def _verdict(fields: Any) -> Verdict:
    score, error, message, detail = fields
    if type(score) is not float or not (message is None or type(message) is str):
        raise TypeError("not a stored verdict")
    return Verdict(
        score,
        None if error is None else ErrorCode(error),
        message,
        None if detail is None else VerdictDetail.from_json(detail),
    )


def _encoded(key: str, verdicts: Verdicts) -> bytes:
    return sealed(
        key, {"verdicts": [_verdict_json(verdicts.official), _verdict_json(verdicts.strict)]}
    )


def _decoded(entry: bytes, key: str) -> Verdicts | None:
    data = unsealed(entry, key)
    if data is None:
        return None
    try:
        official, strict = data["verdicts"]
        return Verdicts(_verdict(official), _verdict(strict))
    except Exception:  # digest-checked, so only a foreign or older entry ends here
        return None


class _Store:
    """The entries in one SQLite file, new ones held until `WRITE_BATCH` of them (or `write`)
    go in one transaction: a cold run's hundreds of entries cost a few commits."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # a crash may lose entries, never corrupt
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS verdicts "
            "(key TEXT PRIMARY KEY, entry BLOB NOT NULL, written REAL NOT NULL)"
        )
        self.lock = threading.Lock()
        self.pending: list[tuple[str, bytes, float]] = []
        self.pruned = False

    def get(self, key: str) -> bytes | None:
        try:
            with self.lock:
                row = self.db.execute("SELECT entry FROM verdicts WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            warn_unusable(log, store_path(), exc)
            return None
        # a store some other program made may hold text, a number or NULL there: a miss
        return row[0] if row is not None and isinstance(row[0], bytes) else None

    def add(self, key: str, entry: bytes) -> None:
        with self.lock:
            self.pending.append((key, entry, time.time()))
            full = len(self.pending) >= WRITE_BATCH
        if full:
            self.write()

    def write(self) -> None:
        with self.lock:
            pending, self.pending = self.pending, []
            if not pending:
                return
            try:
                with self.db:  # one transaction, the write lock taken first: a deferred
                    # one that reads (the prune check) loses its insert, SQLITE_BUSY with no
                    # wait, if another process commits in between (two workers of one run)
                    self.db.execute("BEGIN IMMEDIATE")
                    if not self.pruned:
                        self.pruned = True
                        self._prune()
                    self.db.executemany("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?)", pending)
            except sqlite3.Error as exc:  # a full or read-only cache costs speed, never a verdict
                warn_unusable(log, store_path(), exc)

    def _prune(self) -> None:
        """The oldest written quarter deleted once the file outgrows `MAX_STORE_BYTES`
        (checked at each process's first write; freed pages are reused)."""
        pages, size = (self.db.execute(f"PRAGMA {p}").fetchone()[0] for p in _SIZE_PRAGMAS)
        if pages * size > MAX_STORE_BYTES:
            self.db.execute(
                "DELETE FROM verdicts WHERE key IN (SELECT key FROM verdicts ORDER BY written "
                "LIMIT (SELECT count(*) / 4 + 1 FROM verdicts))"
            )


_SIZE_PRAGMAS = ("page_count", "page_size")


def _store() -> _Store | None:
    """This process's connection to the store (a forked worker opens its own); None when the
    store cannot be opened."""
    return _store_at(str(store_path()), os.getpid())


@functools.cache
def _store_at(path: str, pid: int) -> _Store | None:
    try:
        return _Store(Path(path))
    except (OSError, sqlite3.Error) as exc:
        warn_unusable(log, Path(path), exc)
        return None
