"""The memory a query child may take, capped by the OS, and the engines' own limits below it.

A query child (`child.py`) runs a model's or a submission's SQL: its time is bounded by the
parent's deadline and its result by the row and byte caps, but a single statement can still
build a huge intermediate (a cross join sorted, a `string_agg` of a billion rows, SQLite's
`group_concat`) long before any row reaches the cap. The child therefore lowers its own
`RLIMIT_DATA` (the heap and every private writable mapping: what the engines allocate) to
`query_memory_bytes()`. `RLIMIT_AS` is not used: DuckDB and its allocator reserve address
space far beyond what they touch, so an address-space cap fails honest queries first.

Past the cap an allocation fails: Python raises `MemoryError`, SQLite answers `SQLITE_NOMEM`
(a `MemoryError` too), DuckDB its `OutOfMemoryException`; each becomes `QueryOutOfMemory`
(`too_large`) with the cap in its words (`out_of_memory`). DuckDB's own `memory_limit` is set
below the cap (`duckdb_memory_limit`), so DuckDB refuses cleanly before the OS refuses it.
"""

from __future__ import annotations

import resource

from querybench.engines.base import positive_int_env
from querybench.errors import QueryOutOfMemory

QUERY_MEMORY_ENV = "QUERYBENCH_QUERY_MEMORY_BYTES"
# Room for the engines, pandas and pyarrow imported in the child (about 0.3 GiB) and for any
# gold query of the benchmarks (the largest seen keep well under 2 GiB), on a 24 GiB machine
# that runs a child per core.
DEFAULT_QUERY_MEMORY_BYTES = 8 * 1024**3
# DuckDB's buffer pool is given this share of the cap: the rest is what it allocates outside
# the pool, Python's objects of the result and the pickled reply.
_DUCKDB_SHARE = 0.5
# DuckDB's default limit outside a capped child (the engines' previous default).
_DUCKDB_UNCAPPED = "4GB"


def query_memory_bytes() -> int:
    """The memory cap of a query child: `$QUERYBENCH_QUERY_MEMORY_BYTES`, else 8 GiB."""
    cap = positive_int_env(QUERY_MEMORY_ENV)
    return DEFAULT_QUERY_MEMORY_BYTES if cap is None else cap


def cap_memory(cap: int | None = None) -> int:
    """Lower this process's `RLIMIT_DATA` so that it may take `cap` bytes (default
    `query_memory_bytes()`) beyond what it holds now (a forkserver's child: the engines,
    pandas and pyarrow, some 0.25 GiB; a child forked from a large parent: that parent's
    heap), never above the hard limit it already has; the cap now in force."""
    wanted = query_memory_bytes() if cap is None else cap
    limit = _data_bytes() + wanted
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY and limit > hard:
        wanted, limit = max(0, wanted - (limit - hard)), hard
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    _CAP[0] = wanted
    return wanted


_CAP: list[int | None] = [None]


def memory_cap() -> int | None:
    """The cap `cap_memory` set in this process, None when it set none."""
    return _CAP[0]


def _data_bytes() -> int:
    """What this process's data segment holds now (`VmData`), 0 where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def duckdb_memory_limit() -> str:
    """DuckDB's `memory_limit` here: half the memory cap where `cap_memory` set one (a query
    child), else DuckDB's usual 4 GB."""
    cap = memory_cap()
    if cap is None:
        return _DUCKDB_UNCAPPED
    return f"{max(1, int(cap * _DUCKDB_SHARE) // 1024)}KiB"


def below_cap(default_bytes: int) -> int:
    """An engine's own memory limit of `default_bytes` (SQLite's heap limit), lowered to half
    the memory cap where `cap_memory` set one, so the engine refuses before the OS does."""
    cap = memory_cap()
    return default_bytes if cap is None else max(1, min(default_bytes, int(cap * _DUCKDB_SHARE)))


def out_of_memory(detail: str = "") -> QueryOutOfMemory:
    """The error of a query that ran out of memory, naming the cap in force."""
    cap = memory_cap()
    where = (
        f"past the query memory cap of {cap:,} bytes (set {QUERY_MEMORY_ENV} to change it)"
        if cap is not None
        else "out of memory"
    )
    said = f": {detail.splitlines()[0]}" if detail.strip() else ""
    return QueryOutOfMemory(f"the query ran {where}{said}")
