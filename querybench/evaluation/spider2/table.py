"""A parsed result CSV as the scorers read it: its column names, one read-only NumPy array per
column (numeric dtypes as they are, anything else as objects: `column_arrays`) and
its row count, without pandas.

A plain CSV (`simple_csv`) and an entry of the parsed-CSV cache (`csv_cache`) become a `Table`
straight from their arrays, so a run whose files are all of that kind never imports pandas
(or pyarrow). A file pandas parsed keeps its frame beside its arrays; the others build theirs
(`Table.frame`, importing pandas) only where a step needs pandas' own behaviour (a projection
of the gold by odd `condition_cols`, errors and all).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pandas as pd

# Part of the parsed-CSV cache's key (`csv_cache`): bump it with any change to what
# `result_csv.read_result_csv` returns, and every cached parse is made again.
PARSER_VERSION = 2


class Table:
    """Columns of one parsed result: `names[j]` is column j's name, `arrays[j]` its values."""

    __slots__ = ("__weakref__", "_frame", "arrays", "names", "rows")

    def __init__(
        self,
        names: list[Any],
        arrays: list[npt.NDArray[Any]],
        rows: int,
        frame: pd.DataFrame | None = None,
    ) -> None:
        for array in arrays:
            array.flags.writeable = False  # shared by both scorings and every alternative
        self.names = names
        self.arrays = arrays
        self.rows = rows
        self._frame = frame

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows, len(self.arrays)

    @classmethod
    def of_frame(cls, frame: pd.DataFrame) -> Table:
        """A frame's columns (`column_arrays`), the frame kept as it is."""
        return cls(list(frame.columns), column_arrays(frame), len(frame), frame)

    def frame(self) -> pd.DataFrame:
        """The DataFrame `read_csv` gave: pandas' parse itself, else one built without pandas'
        checks or inference (which would make text pandas 3's `str` dtype) from these arrays
        under these names, with a `RangeIndex`."""
        if self._frame is None:
            import pandas as pd

            self._frame = pd.DataFrame._from_arrays(  # type: ignore[attr-defined]
                self.arrays,
                columns=pd.Index(self.names, dtype=object),
                index=pd.RangeIndex(self.rows),
                verify_integrity=False,
            )
        return self._frame


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


_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})


def is_missing(value: Any) -> bool:
    """`pd.isna(value)` of one cell: None and NaN; pandas decides for a type of its own."""
    kind = type(value)
    if kind is str or kind is int or kind is bool:
        return False
    if kind is float:
        return bool(value != value)
    if value is None:
        return True
    import pandas as pd

    return bool(pd.isna(value))


def missing_and_text(values: npt.NDArray[np.object_]) -> tuple[npt.NDArray[np.bool_], bool]:
    """`pd.isna(values)` of an object column, and whether every other cell is text
    (`pd.api.types.infer_dtype(values[~missing], skipna=False)` is "string" or "empty").

    Worked out here for the cells a parse gives (str, int, float, bool, None); any other
    type, and pandas decides.
    """
    items = values.tolist()
    types = set(map(type, items))
    if types <= {str, float}:  # text with gaps, as read_csv gives it (or floats)
        if float not in types:
            return np.zeros(len(items), dtype=bool), True
        missing: npt.NDArray[np.bool_] = np.not_equal(values, values).astype(bool, copy=False)
        floats = sum(type(v) is float for v in items)
        return missing, floats == int(missing.sum())
    if types <= _PLAIN_TYPES:
        gaps = [v is None or (type(v) is float and v != v) for v in items]
        text = all(type(v) is str for v, gap in zip(items, gaps, strict=True) if not gap)
        return np.array(gaps, dtype=bool), text
    import pandas as pd

    missing = pd.isna(values)
    inferred = pd.api.types.infer_dtype(values[~missing], skipna=False)
    return missing, inferred in ("string", "empty")
