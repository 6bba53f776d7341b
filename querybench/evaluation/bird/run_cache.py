"""A whole BIRD run's results kept by everything they depend on, so that re-scoring unchanged
inputs parses no question, computes no result key and compares no rows.

With every query's outcome in the result cache, a run is a pure function of the questions
file's and the predictions file's text, the options (`db_dir` as given, the metrics, the
question subset, the per-query timeout: a shorter one may stop a query the kept run waited
for), the databases' content and the code. An entry's key is sha256 of the first
three and of the code: the source bytes of `SCORER_MODULES` (read from disk, never imported),
SQLite's build and the result byte cap. The databases are checked on every lookup: the entry
lists each database the run looked at, with its content hash as the result cache keys it
(`ResultCache.fingerprint`: the file's identity, else its bytes), or as absent; one that
differs now, or has appeared or gone, makes the entry a miss; one whose sidecar holds data
(`engines.cache.require_settled`) has no content hash, so a run over it is never kept. The
hashes are taken before the run and must still hold after it, so a database edited while it
was read is never recorded.

Only a run whose every outcome the result cache would serve is stored: no timeout, cap, crash
or other failure of the moment, no query that may read the clock or a random draw
(`cache_values.volatile`), no R-VES (timed), no server (`db_url`). Entries are JSON (the
results as `InstanceResult.to_json` writes them) kept in the content store (`querybench.store`,
kind `RUNS`, a table of the result cache's file: its sealing, pruning, damage and
concurrency rules); one that fails a check is a miss, and the run is scored again and the entry
rewritten. `QUERYBENCH_VERDICT_CACHE=0` turns it off.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from querybench import store
from querybench.engines.base import Result, max_result_bytes
from querybench.engines.cache import RESULTS, ResultCache, sqlite_build
from querybench.engines.cache_values import storable_error, volatile
from querybench.errors import EngineError
from querybench.evaluation.record import InstanceResult

# The modules whose code decides a BIRD verdict; `tests/test_bird_run_cache.py` holds this to
# the import graph of `evaluation.bird.evaluate`.
SCORER_MODULES = tuple(
    f"querybench.{name}"
    for name in (
        "benchmarks.eval_options",  # the read limits' defaults (an answer's bound)
        "errors",
        "engines.cache",
        "engines.cache_values",
        "evaluation.bird.evaluate",
        "evaluation.bird.metrics",
        "evaluation.bird.run_cache",
        "evaluation.detail",
        "evaluation.execution",
        "evaluation.prediction_file",
        "evaluation.record",
        "evaluation.row_keys",
        "evaluation.spider1.exact",
        "tasks.spider1_sql",
        "tasks.spider1_tokens",
        "evaluation.sql_extract",
        "evaluation.verdict",
        "store",
    )
)
# Beside the run's outcomes, in their file: a file of its own cost a cold run its creation,
# checkpoint and syncs (4 more fdatasyncs).
RUNS = store.Kind(RESULTS.file, ("QUERYBENCH_VERDICT_CACHE",), max_bytes=128 << 20, table="runs")


@functools.cache
def scorer_identity() -> bytes | None:
    """sha256 of the scorer modules' source; None when one cannot be read (then nothing is
    stored or looked up)."""
    digest = hashlib.sha256()
    return digest.digest() if store.add_sources(digest, SCORER_MODULES) else None


def run_key(
    questions: str,
    predictions: str,
    *,
    db_dir: str | Path,
    metrics: Sequence[str],
    instance_ids: Collection[str] | None,
    timeout: float | None,
) -> str | None:
    """The key of a run over these files' text and options; None when the store is off."""
    if not RUNS.on():
        return None
    identity = scorer_identity()
    if identity is None:
        return None
    subset = None if instance_ids is None else sorted(instance_ids)
    options = [sqlite_build(), max_result_bytes(), str(db_dir), list(metrics), subset, timeout]
    digest = hashlib.sha256(identity)
    digest.update(json.dumps(options).encode() + b"\n")
    for text in (questions, predictions):
        digest.update(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
    return digest.hexdigest()


def lookup(key: str, cache: ResultCache) -> list[InstanceResult] | None:
    """The stored results of `key`, if its databases are as they were; None otherwise."""
    kept = store.open_store(RUNS, cache.root, create=False)
    payload = kept.get(key) if kept is not None else None
    if payload is None:
        return None
    try:
        data = json.loads(bytes(payload))
        stored = {str(where): fingerprint for where, fingerprint in data["databases"]}
        if database_contents(stored, cache) != stored:
            return None
        return [InstanceResult.from_json(item) for item in data["results"]]
    except Exception:  # digest-checked, so only a foreign or older entry ends here
        return None


def storable(
    jobs: Iterable[tuple[Path | str, str]], outcomes: Iterable[Result | EngineError]
) -> bool:
    """Whether a run of these queries and outcomes is what the result cache alone decides."""
    return not any(volatile(sql) for sql in {sql for _, sql in jobs}) and all(
        isinstance(outcome, Result) or storable_error(outcome) for outcome in outcomes
    )


def remember(
    key: str,
    contents: Mapping[str, str | None],
    results: Sequence[InstanceResult],
    cache: ResultCache,
) -> None:
    """Keep `results` under `key` with `contents`, the databases' content hashes taken before
    the run (`database_contents`), if they are still those now: a database edited while the
    run read it is never recorded with results of its old content. A database present but
    unreadable keeps the run out too. A store that cannot be written costs speed only."""
    if database_contents(contents, cache) != contents:
        return
    if any(fp is None and Path(where).is_file() for where, fp in contents.items()):
        return  # present but unreadable: its outcomes were not the cache's to decide
    kept = store.open_store(RUNS, cache.root)
    if kept is None:
        return
    results_json = [r.to_json() for r in results]
    entry = {"databases": sorted(contents.items()), "results": results_json}
    kept.put_many([(key, json.dumps(entry).encode())])


def database_contents(databases: Iterable[str | Path], cache: ResultCache) -> dict[str, str | None]:
    """Each database file's content hash as the result cache keys it; None for a file that is
    not there (or cannot be read)."""
    found: dict[str, str | None] = {}
    for where in map(str, databases):
        try:
            found[where] = cache.fingerprint(where) if Path(where).is_file() else None
        except (EngineError, OSError):
            found[where] = None
    return found
