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
import importlib.util
import io
import logging
import os
import pickle
import re
import sys
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from querybench import store
from querybench.errors import DataError, NotRegularFile
from querybench.evaluation import prediction_file
from querybench.file_digests import open_regular

if TYPE_CHECKING:  # pandas loads with the first file `simple_csv` does not read, never with
    # an entry; a run whose every verdict is known (verdict_cache) imports neither it nor NumPy
    import pandas as pd

    from querybench.evaluation.spider2.large_result import CompactTable, ResultTable
    from querybench.evaluation.spider2.table import Table

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
    """The parser's identity, the head of every key (pandas' version read, not imported)."""
    import numpy as np

    from querybench.evaluation.spider2.table import PARSER_VERSION

    pandas = _pandas_version()
    return f"result_csv {PARSER_VERSION} pandas {pandas} numpy {np.__version__}\n".encode()


_VERSION_LINE = re.compile(r'^__version__\s*=\s*"([^"\n]+)"', re.MULTILINE)


def _pandas_version() -> str:
    """`pandas.__version__`, from the file it is imported from (`pandas/_version_meson.py`)
    rather than by importing pandas (a fifth of a second); by the import where that file is
    not there (a build of another kind) or pandas is loaded already."""
    loaded = sys.modules.get("pandas")
    if loaded is None:
        spec = importlib.util.find_spec("pandas")
        if spec is not None and spec.origin is not None:
            try:
                text = (Path(spec.origin).parent / "_version_meson.py").read_text("utf-8")
            except (OSError, UnicodeError):
                text = ""
            if (match := _VERSION_LINE.search(text)) is not None:
                return match.group(1)
    import pandas as pd

    return str(pd.__version__)


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


# Tables parsed in this process, by key, while something still holds them: a prediction
# whose bytes are its gold's (or two files of the same bytes) is parsed once. Only parses
# go here, never entries loaded from a store, and a table's columns are read-only, so
# whoever shares one sees exactly what the parser gave. `parse` hands out the frame of such
# a table: held alone, it keeps the parse shared (`_parsed_frames`).
_parsed: weakref.WeakValueDictionary[str, Table] = weakref.WeakValueDictionary()
_parsed_frames: weakref.WeakValueDictionary[str, pd.DataFrame] = weakref.WeakValueDictionary()


def read_result_file(path: Path, namespace: Namespace) -> ResultTable:
    """`large_result.read_result(path)`, a small file's parse taken from the cache."""
    from querybench.evaluation.spider2.table import Table

    table = read_result_table(path, namespace)
    return _frame_of(table) if isinstance(table, Table) else table


def read_result_table(path: Path, namespace: Namespace) -> Table | CompactTable:
    """`read_result_file` as the scorers read it: a small file as a `Table` (pandas not
    imported for a plain file or a cache entry), a big one as a `CompactTable`."""
    data = _small_file(path, whole=enabled())
    if data is None:
        return _as_table(_read_result(path))
    return parse_table(data, str(path), namespace)


def _small_file(path: Path, *, whole: bool) -> bytes | None:
    """`path`'s bytes (`whole`) when it is a regular file under `LARGE_FILE_BYTES`, else None
    (a big file is read a chunk at a time; a missing one `read_result` reports), once it is
    known to be a regular file: `DataError` for a FIFO or a device, which pandas' open by name
    would wait on for ever."""
    try:
        fd, info = open_regular(path)
    except NotRegularFile:
        raise DataError(f"{path}: cannot read the result: not a regular file") from None
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not whole or info.st_size >= prediction_file.LARGE_FILE_BYTES:
            return None
        return f.read()


def _read_result(path: Path) -> ResultTable:
    from querybench.evaluation.spider2.large_result import read_result

    return read_result(path)


def _as_table(result: ResultTable) -> Table | CompactTable:
    from querybench.evaluation.spider2.large_result import CompactTable
    from querybench.evaluation.spider2.table import Table

    return result if isinstance(result, CompactTable) else Table.of_frame(result)


def parse(
    data: Bytes, name: str, namespace: Namespace, digest: bytes | None = None, keep: bool = True
) -> pd.DataFrame:
    """`read_result_csv` of these bytes, as `parse_table` finds or makes them."""
    return _frame_of(parse_table(data, name, namespace, digest, keep))


def _frame_of(table: Table) -> pd.DataFrame:
    frame = table.frame()
    for key, parsed in list(_parsed.items()):
        if parsed is table:  # a parse of this process: its frame alone keeps it shared
            _parsed_frames[key] = frame
    return frame


def parse_table(
    data: Bytes, name: str, namespace: Namespace, digest: bytes | None = None, keep: bool = True
) -> Table:
    """`read_result_csv` of these bytes as a `Table` (`name` is what errors say), from the
    cache if there, or from this process's own parse of the same bytes. `digest`: their
    sha256, if the caller has it (a verdict key is made of it: a file is hashed once).
    `keep=False`: a new parse is not stored in this namespace (the caller stores what it
    makes of it: a prediction's verdicts), though this process still shares it.

    Errors are never cached: an unreadable file is parsed, and fails, every time.
    """
    if not enabled():
        return _read_table(data, name)
    key = _key(hashlib.sha256(data).digest() if digest is None else digest)
    kept = _store(namespace)
    table = _shared(key)
    if table is not None:  # parsed here already: stored in this namespace too
        if keep and kept is not None and not kept.has(key):
            entry = _pending_entry(key) or _entry(table, key)  # the other namespace's: same bytes
            if entry is not None:
                kept.put(key, entry)
        return table
    stored = kept.get(key) if kept is not None else None
    if stored is not None:
        table = _load(stored, key)
        if table is not None:
            return table
        log.debug("parsed-CSV cache entry %s is not valid; parsing %s again", key, name)
    table = _read_table(data, name)
    _parsed[key] = table
    if keep and kept is not None and (entry := _entry(table, key)) is not None:
        kept.put(key, entry)
    return table


def _shared(key: str) -> Table | None:
    """This process's parse of the bytes of `key`, if something still holds it."""
    table = _parsed.get(key)
    if table is None and (frame := _parsed_frames.get(key)) is not None:
        from querybench.evaluation.spider2.table import Table

        table = _parsed[key] = Table.of_frame(frame)
    return table


def _read_table(data: Bytes, name: str) -> Table:
    """`read_result_csv(data)` as a `Table`: a plain file (`simple_csv`) without pandas."""
    from querybench.evaluation.spider2.simple_csv import read_simple
    from querybench.evaluation.spider2.table import Table

    raw = bytes(data)
    try:
        plain = read_simple(raw)
    except Exception:  # `read_result_csv` tries it again and says what failed
        plain, tried = None, False
    else:
        tried = True
    if plain is not None:
        names, arrays = plain
        return Table(names, arrays, len(arrays[0]))
    from querybench.evaluation.spider2.result_csv import read_result_csv

    return Table.of_frame(read_result_csv(io.BytesIO(raw), name=name, simple=not tried))


def _key(digest: bytes) -> str:
    """An entry's key: the parser's identity and the sha256 of the file's bytes."""
    return hashlib.sha256(_key_prefix() + digest).hexdigest()


def _entry(table: Table, key: str) -> bytes | None:
    """What the store seals under `key`: `MAGIC`, then the payload."""
    payload = _payload(table, key)
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


def _payload(table: Table, key: str) -> bytes | None:
    """The entry's payload, or None for a table the loader could not rebuild exactly."""
    frame = table._frame
    if frame is not None:  # pandas' parse: only a frame `Table.frame` would build again
        import numpy as np
        import pandas as pd

        index = frame.index
        if not isinstance(index, pd.RangeIndex) or index.start != 0 or index.step != 1:
            return None  # an implicit index column: rare, parsed every time
        if frame.columns.dtype != object:
            return None
        if not all(isinstance(dtype, np.dtype) for dtype in frame.dtypes):
            return None  # an extension dtype (pandas' own `str`): not rebuilt from NumPy
    names = list(table.names)
    if not all(type(n) is str for n in names):
        return None
    columns: list[tuple[str, Any]] = []
    for values in table.arrays:
        dtype = values.dtype
        if dtype.kind == "O":
            columns.append(("O", values.tolist()))
        elif dtype.str in _NUMERIC_DTYPES:
            columns.append((dtype.str, bytearray(values.tobytes())))
        else:
            return None
    try:
        return pickle.dumps((key, names, table.rows, columns), protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None


class _PlainUnpickler(pickle.Unpickler):
    """Builds only pickle's own types (str, int, float, bool, None, bytearray, list, tuple)."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"{module}.{name}: no globals in a parsed-CSV entry")


def _load(stored: memoryview, key: str) -> Table | None:
    """The table of a well-formed entry for `key` (unsealed by the store), else None."""
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
    from querybench.evaluation.spider2.table import Table

    return Table(names, arrays, rows)
