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

An entry is the JSON of both verdicts, messages and details included, so a results file
written from the store is byte for byte the one scoring writes, sealed and kept in the content
store (`querybench.store`, kind `VERDICTS`: its sealing, pruning, damage and concurrency
rules); an entry that fails any check is a miss: the instance is scored again and the entry
rewritten.

`QUERYBENCH_VERDICT_CACHE=0` scores every instance every time; `QUERYBENCH_CSV_CACHE=0`, which
turns off the parse cache, turns this store off too.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from querybench import file_digests, store
from querybench.errors import ErrorCode
from querybench.evaluation import prediction_file
from querybench.evaluation.detail import VerdictDetail
from querybench.evaluation.spider2.verdicts import Verdicts
from querybench.evaluation.verdict import Verdict
from querybench.tasks.spider2_gold import EvalSpec

# The modules whose code decides a verdict (the scorers, the parser, the frames the parse cache
# rebuilds, the verdict types); `tests/test_verdict_cache.py` holds this to the import graph.
SCORER_MODULES = tuple(
    f"querybench.{name}"
    for name in (
        "benchmarks.eval_options",  # the read limits' defaults
        "errors",
        "evaluation.spider2.csv_cache",
        "evaluation.detail",
        "evaluation.spider2.large_order",
        "evaluation.spider2.large_result",
        "evaluation.spider2.large_scoring",
        "evaluation.prediction_file",
        "evaluation.record",
        "evaluation.spider2.record_floats",
        "evaluation.spider2.result_csv",
        "evaluation.spider2.simple_csv",
        "evaluation.spider1.exact",
        "tasks.spider1_sql",
        "tasks.spider1_tokens",
        "evaluation.spider2.instance",
        "evaluation.spider2.evaluate",
        "evaluation.spider2.gold",
        "evaluation.spider2.official",
        "evaluation.spider2.strict",
        "evaluation.spider2.table",
        "evaluation.spider2.verdicts",
        "evaluation.verdict",
        "evaluation.spider2.verdict_cache",
        "store",
    )
)
LIBRARIES = ("numpy", "pandas", "pyarrow")
VERDICTS = store.Kind(
    "verdicts/spider2.sqlite3",
    ("QUERYBENCH_VERDICT_CACHE", "QUERYBENCH_CSV_CACHE"),
    max_bytes=256 << 20,
    batch=256,
)
_NOT_KEPT = (
    ErrorCode.SCORER_ERROR,
    ErrorCode.TOO_LARGE,
)  # what an exception of the moment may have made


def enabled() -> bool:
    return VERDICTS.on()


def store_path() -> Path:
    return VERDICTS.path()


@functools.cache
def scorer_identity() -> bytes | None:
    """sha256 of the scorer modules' source and the libraries' versions; None when a source
    cannot be read (then nothing is stored or looked up)."""
    from querybench.versions import installed_version

    digest = hashlib.sha256()
    if not store.add_sources(digest, SCORER_MODULES):
        return None
    for library in LIBRARIES:
        digest.update(f"{library} {installed_version(library) or 'absent'}\n".encode())
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
                before = os.fstat(f.fileno())
                if before.st_size >= prediction_file.LARGE_FILE_BYTES:
                    return None
                golds.append(f.read())
                gold_digests.append(hashlib.sha256(golds[-1]).digest())
                file_digests.remember(before, os.fstat(f.fileno()), gold_digests[-1])
        except OSError:
            return None
        digest.update(gold_digests[-1])
    prediction_digest = hashlib.sha256(prediction).digest()
    digest.update(prediction_digest)
    return Keyed(digest.hexdigest(), tuple(golds), tuple(gold_digests), prediction_digest)


def lookup(key: str) -> Verdicts | None:
    """The stored verdicts of `key`; None if absent or not a well-formed entry for it."""
    kept = store.open_store(VERDICTS)
    payload = kept.get(key) if kept is not None else None
    return None if payload is None else _decoded(payload)


def remember(key: str, verdicts: Verdicts) -> None:
    """Keep `verdicts` under `key` unless one is a scorer error or ran out of memory (held
    and written in batches: `flush` writes the rest); the caller keeps none that read an
    unreadable gold."""
    if any(v.error in _NOT_KEPT for v in (verdicts.official, verdicts.strict)):
        return
    kept = store.open_store(VERDICTS)
    if kept is not None:
        kept.put(key, _encoded(verdicts))


def flush() -> None:
    """Write the entries this process has not written yet."""
    kept = store.open_store(VERDICTS)
    if kept is not None:
        kept.flush()


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


def _encoded(verdicts: Verdicts) -> bytes:
    return json.dumps([_verdict_json(verdicts.official), _verdict_json(verdicts.strict)]).encode()


def _decoded(payload: memoryview) -> Verdicts | None:
    try:
        official, strict = json.loads(bytes(payload))
        return Verdicts(_verdict(official), _verdict(strict))
    except Exception:  # sealed, so only a foreign or older entry ends here
        return None
