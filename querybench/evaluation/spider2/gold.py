"""The Spider 2.0 gold for scoring: the gold folder (`tasks/spider2_gold.py`) with its result
files parsed on first use."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, overload

from querybench.errors import DataError
from querybench.tasks.spider2_gold import (
    EASY_BELOW,
    HARD_FROM,
    Benchmark,
    EvalSpec,
    GoldFolder,
    default_gold_dir,
    difficulty_from_tokens,
    engine_family,
    eval_file_name,
)

__all__ = [
    "EASY_BELOW",
    "HARD_FROM",
    "Benchmark",
    "EvalSpec",
    "GoldFrames",
    "Spider2Gold",
    "default_gold_dir",
    "difficulty_from_tokens",
    "engine_family",
    "eval_file_name",
]

if TYPE_CHECKING:  # NumPy loads with the first gold file parsed, not with the gold folder
    from querybench.evaluation.spider2.large_result import CompactTable, ResultTable
    from querybench.evaluation.spider2.table import Table


class Spider2Gold(GoldFolder):
    """A gold folder whose result files the scorers read."""

    def load_results(
        self,
        instance_id: str,
        contents: Sequence[bytes] | None = None,
        digests: Sequence[bytes] | None = None,
    ) -> tuple[GoldFrames, bool]:
        """The instance's gold alternatives; `contents` their bytes, already read, if given
        (and `digests` their sha256, already made)."""
        paths, single = self.result_paths(instance_id)
        return GoldFrames(paths, contents, digests), single


class GoldFrames(Sequence["ResultTable"]):
    """Gold alternatives parsed on first use: scoring stops at the first one that matches.

    A big file comes as a `CompactTable` (see `large_result`), a small one as a DataFrame,
    its parse kept in the parsed-CSV cache (`csv_cache`); `tables` gives the same
    alternatives as the scorers read them (a small file as a `Table`: no frame, and no
    pandas for a plain file or a cache entry).
    """

    def __init__(
        self,
        paths: list[Path],
        contents: Sequence[bytes] | None = None,
        digests: Sequence[bytes] | None = None,
    ) -> None:
        self.paths = paths
        self.contents = contents  # the files' bytes, parsed instead of the files if given
        self.digests = digests  # and their sha256, not made again
        self._tables: dict[int, Table | CompactTable | DataError] = {}
        self.tables = GoldTables(self)

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def unreadable(self) -> bool:
        """Whether an alternative read so far failed (a file may fail for a reason of the
        moment: a verdict that read it is not kept)."""
        return any(isinstance(table, DataError) for table in self._tables.values())

    @overload
    def __getitem__(self, index: int) -> ResultTable: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[ResultTable]: ...

    def __getitem__(self, index: int | slice) -> ResultTable | Sequence[ResultTable]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        from querybench.evaluation.spider2.table import Table

        table = self.table(index)
        return table.frame() if isinstance(table, Table) else table

    def table(self, index: int) -> Table | CompactTable:
        """Alternative `index` as the scorers read it; its `DataError` if it is unreadable."""
        if index not in self._tables:
            from querybench.evaluation.spider2 import csv_cache

            path = self.paths[index]
            try:
                if self.contents is None:
                    self._tables[index] = csv_cache.read_result_table(path, "gold")
                else:
                    digest = None if self.digests is None else self.digests[index]
                    data = self.contents[index]
                    self._tables[index] = csv_cache.parse_table(data, str(path), "gold", digest)
            except DataError as exc:  # kept: asked again, it fails again without a re-read
                self._tables[index] = exc
        table = self._tables[index]
        if isinstance(table, DataError):
            raise table
        return table


class GoldTables(Sequence["Table | CompactTable"]):
    """A `GoldFrames`' alternatives as `GoldFrames.table` gives them."""

    def __init__(self, frames: GoldFrames) -> None:
        self._frames = frames

    def __len__(self) -> int:
        return len(self._frames)

    @overload
    def __getitem__(self, index: int) -> Table | CompactTable: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Table | CompactTable]: ...

    def __getitem__(
        self, index: int | slice
    ) -> Table | CompactTable | Sequence[Table | CompactTable]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        return self._frames.table(index)
