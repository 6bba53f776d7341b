"""The Spider 2.0 gold for scoring: the gold folder (`tasks/spider2_gold.py`) with its result
files parsed on first use."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import overload

from querybench.errors import DataError
from querybench.evaluation.csv_cache import read_result_file
from querybench.evaluation.large_result import ResultTable
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


class Spider2Gold(GoldFolder):
    """A gold folder whose result files the scorers read."""

    def load_results(self, instance_id: str) -> tuple[GoldFrames, bool]:
        paths, single = self.result_paths(instance_id)
        return GoldFrames(paths), single


class GoldFrames(Sequence[ResultTable]):
    """Gold alternatives parsed on first use: scoring stops at the first one that matches.

    A big file comes as a `CompactTable` (see `large_result`), a small one as a DataFrame,
    its parse kept in the parsed-CSV cache (`csv_cache`).
    """

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self._frames: dict[int, ResultTable | DataError] = {}

    def __len__(self) -> int:
        return len(self.paths)

    @overload
    def __getitem__(self, index: int) -> ResultTable: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[ResultTable]: ...

    def __getitem__(self, index: int | slice) -> ResultTable | Sequence[ResultTable]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        if index not in self._frames:
            try:
                self._frames[index] = read_result_file(self.paths[index], "gold")
            except DataError as exc:  # kept: asked again, it fails again without a re-read
                self._frames[index] = exc
        frame = self._frames[index]
        if isinstance(frame, DataError):
            raise frame
        return frame
