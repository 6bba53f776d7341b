"""Reading Spider 2.0 result CSVs exactly as the official scorers do.

The official `evaluate.py` reads every prediction and gold with a bare `pd.read_csv(path)`, and
its verdicts depend on the types pandas infers (an integer column with a gap becomes floats, a
column with one word becomes text, `NA`/`null`/`None` become missing). Matching those verdicts
bit for bit means parsing with the very same function, so this is the one place pandas is used.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt
import pandas as pd

from querybench.errors import DataError

# Part of the parsed-CSV cache's key (`csv_cache`): bump it with any change to what
# `read_result_csv` returns, and every cached parse is made again.
PARSER_VERSION = 1
_OPTION_LOCK = threading.Lock()


def read_result_csv(source: str | Path | BinaryIO, name: str | None = None) -> pd.DataFrame:
    """Parse one result CSV like the official scorer; any failure is a `DataError` with a reason.

    `source` is a path or an open binary file (parsed alike); `name` is the path errors say.
    """
    path = name if name is not None else source
    try:
        with _text_as_objects():
            return pd.read_csv(source)
    except FileNotFoundError as exc:
        raise DataError(f"{path}: file not found") from exc
    except pd.errors.EmptyDataError as exc:
        raise DataError(f"{path}: empty file (no header)") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except (pd.errors.ParserError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{path}: unreadable CSV ({first})") from exc


@contextlib.contextmanager
def _text_as_objects() -> Iterator[None]:
    """Text columns as plain object arrays of `str` (pandas 2's, and the official suite's,
    representation) rather than pandas 3's Arrow-backed `str` dtype: the same values, parsed
    about a third faster, since the scorers convert them to objects anyway. The switch is
    deprecated in pandas 3 and gone in 4, where this falls back to the default. The option is
    global, so one thread at a time parses (another's exit would restore it mid-parse)."""
    with _OPTION_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            pd.get_option("future.infer_string")
        except (KeyError, pd.errors.OptionError):
            yield  # pandas 4: text is always the `str` dtype
            return
        with pd.option_context("future.infer_string", False):
            yield


def column_arrays(frame: pd.DataFrame) -> list[npt.NDArray[Any]]:
    """Each column once as a NumPy array: numeric dtypes as they are, others as objects.

    Both scorings start from these, so pandas' per-column overhead is paid once per frame.
    A NumPy-backed column is taken straight from the frame's blocks (a read-only view: a
    `Series` per column costs more than most small results take to score); anything else goes
    through `Series.to_numpy`.
    """
    manager = getattr(frame, "_mgr", None)
    get = getattr(manager, "iget_values", None)
    out: list[npt.NDArray[Any]] = []
    for j in range(frame.shape[1]):
        values = get(j) if get is not None else None
        if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "biufO":
            view = values.view()
            view.flags.writeable = False
            out.append(view)
            continue
        series = frame.iloc[:, j]
        if series.dtype.kind in "biuf":
            out.append(series.to_numpy())
        else:
            out.append(series.to_numpy(dtype=object))
    return out


def interleaved_dtype(arrays: Sequence[npt.NDArray[Any]]) -> np.dtype[Any]:
    """The dtype `DataFrame.values` casts these columns to (pandas' `find_common_type`).

    Any non-numeric column, or booleans beside numbers, give object; otherwise NumPy's
    promotion (int64 beside float64 gives float64).
    """
    kinds = {a.dtype.kind for a in arrays}
    if not arrays or "O" in kinds or ("b" in kinds and kinds != {"b"}):
        return np.dtype(object)
    return np.result_type(*arrays)
