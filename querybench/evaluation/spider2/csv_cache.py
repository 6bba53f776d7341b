"""Parsed result CSVs kept on disk, keyed by their content and the parser, so a re-score
parses nothing.

Parsing a Spider 2.0 result CSV the official way (`result_csv.read_result_csv`, pandas) costs
two to three times what loading its parsed columns back costs. An entry's key is sha256 of the
parser's identity (`result_csv.PARSER_VERSION`, the pandas and NumPy versions) and the sha256
of the file's bytes, hashed on every read (once: the verdict key is made of the same digest): a
file edited in place, or a new parser, is a new key, and no name or timestamp is trusted.

An entry is `MAGIC`, then a pickle of plain values only (its key, names, row count, per column
a NumPy dtype and its bytes, or the list of its Python values), read back by an unpickler that
refuses every global, so a planted entry cannot run code; it is sealed and kept in the content
store (`querybench.store`, one kind per namespace, `KINDS`: its sealing, pruning, damage and
concurrency rules). An entry that fails any check (seal, magic, key, shape) is a miss: the CSV
is parsed again and the entry rewritten, never a wrong table. A run's new entries go in one
transaction at its end (`deferred_writes`). Within a process, bytes parsed once are not parsed
again while their frame is held: a prediction that is its gold's very bytes costs one parse.

Gold and predictions live in separate namespaces: predictions change from run to run, so each
namespace is pruned (the entries unused longest first) once it outgrows its 1 GiB. A prediction
whose verdicts the verdict store keeps is parsed with `keep=False`: those verdicts answer its
re-score. Set `QUERYBENCH_CSV_CACHE=0` to parse every file every time.
"""

from __future__ import annotations

import functools
import hashlib
import io
import logging
import os
import pickle
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from querybench import store
from querybench.evaluation import prediction_file
from querybench.file_digests import open_regular

if TYPE_CHECKING:  # pandas and NumPy load with the first parse or entry: a run whose every
    # verdict is known (verdict_cache) defers its writes here without importing them
    import numpy as np
    import pandas as pd

    from querybench.evaluation.spider2.large_result import ResultTable

log = logging.getLogger(__name__)

Namespace = Literal["gold", "prediction"]
Bytes = bytes | bytearray | memoryview

MAGIC = b"querybench parsed csv v1\n"
# Entries are tens of KiB: on 64 KiB pages most fit one page, and a run's write costs under
# half the CPU of 4 KiB pages' chains.
KINDS: dict[Namespace, store.Kind] = {
    namespace: store.Kind(
        f"parsed-csv/{namespace}.sqlite3",
        ("QUERYBENCH_CSV_CACHE",),
        max_bytes=1 << 30,
        page_bytes=1 << 16,
    )
    for namespace in ("gold", "prediction")
}
_NUMERIC_DTYPES = frozenset({"<i8", "<f8", "|b1", "<u8"})  # what read_csv gives, bar object


@functools.cache
def _key_prefix() -> bytes:
    """The parser's identity, the head of every key (imports pandas)."""
    import numpy as np
    import pandas as pd

    from querybench.evaluation.spider2.result_csv import PARSER_VERSION

    return f"result_csv {PARSER_VERSION} pandas {pd.__version__} numpy {np.__version__}\n".encode()


def enabled() -> bool:
    return KINDS["gold"].on()


def store_path(namespace: Namespace) -> Path:
    return KINDS[namespace].path()


def _store(namespace: Namespace) -> store.Store | None:
    """This process's connection to the namespace's store (`querybench.store.open_store`)."""
    return store.open_store(KINDS[namespace])


def _pending_entry(key: str) -> bytes | None:
    """An entry this process has made but not yet written, in whichever namespace."""
    for kept in store.own_stores():
        if (payload := kept.pending_payload(key)) is not None:
            return bytes(payload)
    return None


deferred_writes = store.deferred_writes
flush = store.flush


# Frames parsed in this process, by key, while something still holds them: a prediction
# whose bytes are its gold's (or two files of the same bytes) is parsed once. Only parses
# go here, never entries loaded from a store, and a frame's columns are handed out
# read-only (`column_arrays`), so whoever shares one sees exactly what the parser gave.
_parsed: weakref.WeakValueDictionary[str, pd.DataFrame] = weakref.WeakValueDictionary()


def read_result_file(path: Path, namespace: Namespace) -> ResultTable:
    """`large_result.read_result(path)`, a small file's parse taken from the cache."""
    from querybench.evaluation.spider2.large_result import read_result

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
    from querybench.evaluation.spider2.result_csv import read_result_csv

    if not enabled():
        return read_result_csv(io.BytesIO(data), name=name)
    key = _key(hashlib.sha256(data).digest() if digest is None else digest)
    kept = _store(namespace)
    frame = _parsed.get(key)
    if frame is not None:  # parsed here already: stored in this namespace too
        if keep and kept is not None and not kept.has(key):
            entry = _pending_entry(key) or _entry(frame, key)  # the other namespace's: same bytes
            if entry is not None:
                kept.put(key, entry)
        return frame
    stored = kept.get(key) if kept is not None else None
    if stored is not None:
        frame = _load(stored, key)
        if frame is not None:
            return frame
        log.debug("parsed-CSV cache entry %s is not valid; parsing %s again", key, name)
    frame = read_result_csv(io.BytesIO(data), name=name)
    _parsed[key] = frame
    if keep and kept is not None and (entry := _entry(frame, key)) is not None:
        kept.put(key, entry)
    return frame


def _key(digest: bytes) -> str:
    """An entry's key: the parser's identity and the sha256 of the file's bytes."""
    return hashlib.sha256(_key_prefix() + digest).hexdigest()


def _entry(frame: pd.DataFrame, key: str) -> bytes | None:
    """What the store seals under `key`: `MAGIC`, then the payload."""
    payload = _payload(frame, key)
    return None if payload is None else MAGIC + payload


def is_stored(path: Path, namespace: Namespace) -> bool | None:
    """Whether the namespace's store holds this file's parse; None when there is no telling
    without more than a read of a small regular file (a FIFO or device is never waited on)."""
    if not enabled() or (kept := _store(namespace)) is None:
        return None
    try:
        fd, info = open_regular(path, getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with open(fd, "rb") as f:
        if not 0 < info.st_size < prediction_file.LARGE_FILE_BYTES:
            return None
        try:
            data = f.read()
        except OSError:
            return None
    return kept.has(_key(hashlib.sha256(data).digest()))


def _payload(frame: pd.DataFrame, key: str) -> bytes | None:
    """The entry's payload, or None for a frame the loader could not rebuild exactly."""
    import numpy as np
    import pandas as pd

    from querybench.evaluation.spider2.result_csv import column_arrays

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


def _load(stored: memoryview, key: str) -> pd.DataFrame | None:
    """The frame of a well-formed entry for `key` (unsealed by the store), else None."""
    import numpy as np

    if stored[: len(MAGIC)] != MAGIC:
        return None
    payload = stored[len(MAGIC) :]
    try:
        stored_key, names, rows, columns = _PlainUnpickler(io.BytesIO(payload)).load()
    except Exception:  # sealed, so only a foreign entry ends here
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
