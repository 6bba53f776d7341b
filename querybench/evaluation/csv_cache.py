"""Parsed result CSVs kept on disk, keyed by their content and the parser, so a re-score
parses nothing.

Parsing a Spider 2.0 result CSV the official way (`result_csv.read_result_csv`, pandas) costs
about ten times what loading its parsed columns back costs. An entry's key is sha256 of the
parser's identity (`result_csv.PARSER_VERSION`, the pandas and NumPy versions) and the file's
bytes, hashed on every read: a file edited in place, or a new parser, is a new key, and no
name or timestamp is trusted.

An entry is `MAGIC`, the sha256 of its payload, then the payload: a pickle of plain values
only (names, row count, per column a NumPy dtype and its bytes, or the list of its Python
values), read back by an unpickler that refuses every global, so a planted file cannot run
code. A file that fails any check (magic, digest, key, shape) is a miss: the CSV is parsed
again and the entry rewritten, never a wrong table. Entries are written to a temporary file
and renamed into place, so concurrent runs only ever see whole entries (two writers of one key
write the same bytes).

Gold and predictions live in separate namespaces: predictions change from run to run, so each
namespace is pruned (oldest first) once it outgrows `MAX_NAMESPACE_BYTES`. Set
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
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from querybench.engines.cache import default_cache_dir
from querybench.evaluation import large_result
from querybench.evaluation.large_result import ResultTable, read_result
from querybench.evaluation.result_csv import PARSER_VERSION, read_result_csv

log = logging.getLogger(__name__)

Namespace = Literal["gold", "prediction"]
Bytes = bytes | bytearray | memoryview

MAGIC = b"querybench parsed csv v1\n"
MAX_NAMESPACE_BYTES = 1 << 30
_DIGEST = 32
_NUMERIC_DTYPES = frozenset({"<i8", "<f8", "|b1", "<u8"})  # what read_csv gives, bar object
_PARSER_ID = f"result_csv {PARSER_VERSION} pandas {pd.__version__} numpy {np.__version__}"
_KEY_PREFIX = _PARSER_ID.encode() + b"\n"
_TOUCH_AFTER_S = 86_400
_pruned: set[Path] = set()  # namespaces checked for size by this process


def enabled() -> bool:
    return os.environ.get("QUERYBENCH_CSV_CACHE", "1").strip().lower() not in ("0", "off", "no")


def cache_folder(namespace: Namespace) -> Path:
    return Path(_folder(namespace, os.environ.get("QUERYBENCH_CACHE")))


@functools.cache
def _folder(namespace: Namespace, cache_setting: str | None) -> str:
    """The namespace's folder for this `$QUERYBENCH_CACHE` (looked up once per value)."""
    return str(default_cache_dir() / "parsed-csv" / namespace)


def read_result_file(path: Path, namespace: Namespace) -> ResultTable:
    """`large_result.read_result(path)`, a small file's parse taken from the cache."""
    if not enabled():
        return read_result(path)
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size >= large_result.LARGE_FILE_BYTES:
                data = None  # a big file is read a chunk at a time, never whole
            else:
                data = f.read()
    except OSError:
        data = None  # `read_result` says why in its error
    if data is None:
        return read_result(path)
    return parse(data, str(path), namespace)


def parse(data: Bytes, name: str, namespace: Namespace) -> pd.DataFrame:
    """`read_result_csv` of these bytes (`name` is what errors say), from the cache if there.

    Errors are never cached: an unreadable file is parsed, and fails, every time.
    """
    if not enabled():
        return read_result_csv(io.BytesIO(data), name=name)
    key = hashlib.sha256(_KEY_PREFIX + memoryview(data)).hexdigest()
    path = Path(_folder(namespace, os.environ.get("QUERYBENCH_CACHE")), key[:2], f"{key}.pickle")
    stored = _read_entry(path)
    if stored is not None:
        frame = _load(stored, key)
        if frame is not None:
            return frame
        log.debug("parsed-CSV cache entry %s is not valid; parsing %s again", path, name)
    frame = read_result_csv(io.BytesIO(data), name=name)
    payload = _payload(frame, key)
    if payload is not None:
        try:
            _store(path, payload)
        except OSError as exc:  # a full or read-only cache costs speed, never the result
            log.warning("parsed-CSV cache not written (%s): %s", path, exc)
    return frame


def _payload(frame: pd.DataFrame, key: str) -> bytes | None:
    """The entry's payload, or None for a frame the loader could not rebuild exactly."""
    index = frame.index
    if not isinstance(index, pd.RangeIndex) or index.start != 0 or index.step != 1:
        return None  # an implicit index column: rare, parsed every time
    names = list(frame.columns)
    if frame.columns.dtype != object or not all(type(n) is str for n in names):
        return None
    columns: list[tuple[str, Any]] = []
    for j, dtype in enumerate(frame.dtypes):
        if not isinstance(dtype, np.dtype):
            return None  # an extension dtype (pandas' own `str`): not rebuilt from NumPy
        values = frame.iloc[:, j].to_numpy()
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


def _store(path: Path, payload: bytes) -> None:
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    _prune_once(folder.parent)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_entry(path: Path) -> bytes | None:
    """The entry's bytes, None if absent; an entry not used for a day is marked used now, so
    pruning removes the entries unused the longest."""
    try:
        with open(path, "rb") as f:
            modified = os.fstat(f.fileno()).st_mtime
            stored = f.read()
    except OSError:
        return None
    if modified < time.time() - _TOUCH_AFTER_S:
        with contextlib.suppress(OSError):  # a read-only cache still serves
            os.utime(path)
    return stored


class _PlainUnpickler(pickle.Unpickler):
    """Builds only pickle's own types (str, int, float, bool, None, bytearray, list, tuple)."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"{module}.{name}: no globals in a parsed-CSV entry")


def _load(stored: bytes, key: str) -> pd.DataFrame | None:
    """The frame of a well-formed entry for `key`, else None."""
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
    columns = pd.Index(names, dtype=object)
    frame: pd.DataFrame = pd.DataFrame._from_arrays(  # type: ignore[attr-defined]
        arrays, columns=columns, index=pd.RangeIndex(rows), verify_integrity=False
    )
    return frame


def _prune_once(namespace: Path) -> None:
    """Oldest entries removed once the namespace holds over `MAX_NAMESPACE_BYTES` (checked at
    the first write of each process)."""
    if namespace in _pruned:
        return
    _pruned.add(namespace)
    entries: list[tuple[float, int, str]] = []
    for shard in os.scandir(namespace):
        if not shard.is_dir(follow_symlinks=False):
            continue
        for entry in os.scandir(shard.path):
            try:
                stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            entries.append((stat.st_mtime, stat.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    if total <= MAX_NAMESPACE_BYTES:
        return
    for _, size, path in sorted(entries):
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        if total <= MAX_NAMESPACE_BYTES * 3 // 4:
            break
