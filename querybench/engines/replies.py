"""A child's reply read back by the parent: a pickle whose globals are only the values a reply
holds.

The child that ran untrusted SQL is untrusted in turn: a child taken over (through a driver or
engine bug) could send a pickle naming `os.system`, which a plain `pickle.loads` would call in
the scoring process. `ReplyReader.load` unpickles with `find_class` held to a list: builtins'
containers and scalars, the values drivers return (`decimal`, `datetime`, `uuid`,
`ipaddress`, `zoneinfo`, `pytz`, psycopg's ranges), the frames DuckDB answers are fetched as
(pandas, NumPy and the Arrow arrays behind pandas' strings, each Arrow array validated in full
as it is rebuilt), the engines' `Result`, `Table` and `Column`, and the engine errors of
`errors.py` (every `EngineError`, `ErrorCode`, `EngineErrorClass`); a work kind adds its own
reply classes (`Supervisor(extra_globals=...)`, the RL reward's verdicts). Anything else, a
dotted name (an attribute reached through an allowed class), or a pickle that does not load
is `pickle.UnpicklingError` with the reason, and the supervisor kills that child
(docs/security.md). Only globals are looked up by name: one `find_class` per distinct global a
reply names, resolved once a process.
"""

from __future__ import annotations

import importlib
import io
import pickle
import sys
from collections.abc import Callable, Iterable
from typing import Any

from querybench import errors

Global = tuple[str, str]

_VALUES: frozenset[Global] = frozenset(
    {
        ("builtins", "bytearray"),
        ("builtins", "complex"),
        ("builtins", "frozenset"),
        ("builtins", "range"),
        ("builtins", "set"),
        ("builtins", "slice"),
        ("decimal", "Decimal"),
        ("datetime", "date"),
        ("datetime", "datetime"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        ("uuid", "UUID"),
        ("uuid", "SafeUUID"),
        ("zoneinfo", "ZoneInfo"),
        ("ipaddress", "IPv4Address"),
        ("ipaddress", "IPv6Address"),
        ("ipaddress", "IPv4Network"),
        ("ipaddress", "IPv6Network"),
        ("ipaddress", "IPv4Interface"),
        ("ipaddress", "IPv6Interface"),
        ("psycopg.types.range", "Range"),
        ("psycopg.types.multirange", "Multirange"),
        # a multirange pickles its generic alias (`Multirange[T]`): an alias of allowed classes
        ("types", "GenericAlias"),
        ("psycopg.types.range", "T"),
        ("psycopg.types.multirange", "T"),
        # pytz's zones, where a driver gives them (its zone names checked by pytz itself)
        ("pytz", "_p"),
        ("pytz", "_UTC"),
        ("pytz", "FixedOffset"),
        ("querybench.engines.base", "Result"),
        ("querybench.engines.base", "Table"),
        ("querybench.engines.base", "Column"),
    }
)

# DataFrames as DuckDB's `fetchdf()` makes them (numeric, nullable, string, date and time
# columns), as they pickle under pandas 2 and 3 and NumPy 1 and 2.
_FRAMES: frozenset[Global] = frozenset(
    {
        ("numpy", "dtype"),
        ("numpy", "ndarray"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("pandas", "DataFrame"),
        ("pandas", "Series"),
        ("pandas", "Index"),
        ("pandas", "RangeIndex"),
        ("pandas", "NA"),
        ("pandas", "StringDtype"),
        ("pandas", "BooleanDtype"),
        ("pandas", "CategoricalDtype"),
        ("pandas", "DatetimeTZDtype"),
        ("pandas", "Categorical"),
        ("pandas", "Int8Dtype"),
        ("pandas", "Int16Dtype"),
        ("pandas", "Int32Dtype"),
        ("pandas", "Int64Dtype"),
        ("pandas", "UInt8Dtype"),
        ("pandas", "UInt16Dtype"),
        ("pandas", "UInt32Dtype"),
        ("pandas", "UInt64Dtype"),
        ("pandas", "Float32Dtype"),
        ("pandas", "Float64Dtype"),
        ("pandas.arrays", "ArrowStringArray"),
        ("pandas.arrays", "StringArray"),
        ("pandas.arrays", "BooleanArray"),
        ("pandas.arrays", "IntegerArray"),
        ("pandas.arrays", "FloatingArray"),
        ("pandas.arrays", "DatetimeArray"),
        ("pandas.arrays", "TimedeltaArray"),
        ("pandas.core.arrays.categorical", "Categorical"),
        ("pandas.core.indexes.base", "_new_Index"),
        ("pandas.core.internals.managers", "BlockManager"),
        ("pandas._libs.internals", "_unpickle_block"),
        ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"),
        ("pandas._libs.tslibs.nattype", "__nat_unpickle"),
        ("pandas._libs.tslibs.timestamps", "_unpickle_timestamp"),
        ("pandas._libs.tslibs.timedeltas", "_timedelta_unpickle"),
        ("pyarrow.lib", "py_buffer"),
        ("pyarrow.lib", "type_for_alias"),
    }
)

BASE_GLOBALS = _VALUES | _FRAMES


def _engine_error_class(name: str) -> bool:
    """Whether `errors.<name>` is one a reply holds: an `EngineError`, or the vocabulary it
    carries."""
    found = getattr(errors, name, None)
    if found is errors.ErrorCode or found is errors.EngineErrorClass:
        return True
    return isinstance(found, type) and issubclass(found, errors.EngineError)


def _attribute(owner: Any, name: str) -> Any:
    """`getattr` as a reply may use it: only for the one method a value pickles through
    (`ZoneInfo._unpickle`, the key's zone from the system's time zone data)."""
    zoneinfo = sys.modules.get("zoneinfo")
    if zoneinfo is not None and owner is zoneinfo.ZoneInfo and name == "_unpickle":
        return owner._unpickle
    raise pickle.UnpicklingError(f"getattr of {name!r} is not allowed in a reply")


def _restore_array(data: Any) -> Any:
    """An Arrow array rebuilt from its buffers (pyarrow's own unpickling), then validated in
    full: unchecked, offsets or lengths out of their buffers would be read out of bounds."""
    from pyarrow import lib

    array = lib._restore_array(data)
    try:
        array.validate(full=True)
    except Exception as exc:
        raise pickle.UnpicklingError(f"an Arrow array that does not hold: {exc}") from None
    return array


_SPECIAL: dict[Global, Callable[..., Any]] = {
    ("builtins", "getattr"): _attribute,
    ("pyarrow.lib", "_restore_array"): _restore_array,
}


class ReplyReader:
    """The globals one child's replies may name (`BASE_GLOBALS` and `extra`), and `load`."""

    def __init__(self, extra: Iterable[Global] = ()) -> None:
        self.allowed = BASE_GLOBALS | frozenset(extra)
        self._resolved: dict[Global, Any] = dict(_SPECIAL)
        reader = self

        class Unpickler(pickle.Unpickler):
            def find_class(self, module: str, name: str) -> Any:
                found = reader._resolved.get((module, name))
                return found if found is not None else reader.resolve(module, name)

        self._unpickler = Unpickler

    def resolve(self, module: str, name: str) -> Any:
        """The global `module.name` when a reply may hold it, else `UnpicklingError`."""
        allowed = (module, name) in self.allowed or (
            module == "querybench.errors" and "." not in name and _engine_error_class(name)
        )
        if not allowed:
            raise pickle.UnpicklingError(f"{module}.{name} is not a value a reply holds")
        found = getattr(importlib.import_module(module), name)
        self._resolved[(module, name)] = found
        return found

    def load(self, data: bytes) -> Any:
        """The reply pickled in `data`; `UnpicklingError` (or the error the malformed pickle
        raised) when it names anything else."""
        return self._unpickler(io.BytesIO(data)).load()
