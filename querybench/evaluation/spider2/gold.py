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

if TYPE_CHECKING:  # pandas loads with the first gold file parsed, not with the gold folder
    from querybench.evaluation.spider2.large_result import ResultTable


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
    its parse kept in the parsed-CSV cache (`csv_cache`).
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
        self._frames: dict[int, ResultTable | DataError] = {}

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def unreadable(self) -> bool:
        """Whether an alternative read so far failed (a file may fail for a reason of the
        moment: a verdict that read it is not kept)."""
        return any(isinstance(frame, DataError) for frame in self._frames.values())

    @overload
    def __getitem__(self, index: int) -> ResultTable: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[ResultTable]: ...

    def __getitem__(self, index: int | slice) -> ResultTable | Sequence[ResultTable]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        if index not in self._frames:
            from querybench.evaluation.spider2 import csv_cache

            path = self.paths[index]
            try:
                if self.contents is None:
                    self._frames[index] = csv_cache.read_result_file(path, "gold")
                else:
                    digest = None if self.digests is None else self.digests[index]
                    data = self.contents[index]
                    self._frames[index] = csv_cache.parse(data, str(path), "gold", digest)
            except DataError as exc:  # kept: asked again, it fails again without a re-read
                self._frames[index] = exc
        frame = self._frames[index]
        if isinstance(frame, DataError):
            raise frame
        return frame
