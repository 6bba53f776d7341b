"""Several candidates per task: unbiased pass@k and majority vote by execution result."""

from __future__ import annotations

from collections.abc import Sequence
from math import comb
from typing import Any


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al., 2021): the chance that k of the n samples, drawn without
    replacement, include at least one of the c correct ones."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def result_key(columns: int, rows: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
    """Execution results that denote the same answer share a key: the bag of rows, each row's
    cells sorted by text (so column order does not matter)."""
    normal = sorted(tuple(sorted(repr(v) for v in row)) for row in rows)
    return (columns, tuple(normal))


def majority_vote(keys: Sequence[tuple[Any, ...] | None]) -> int | None:
    """Index of the candidate whose result is the most common (ties: the earliest); None when
    no candidate ran. A `None` key is a candidate that failed to run and never wins."""
    counts: dict[tuple[Any, ...], int] = {}
    for key in keys:
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        return None
    best = max(counts.values())
    return next(i for i, key in enumerate(keys) if key is not None and counts[key] == best)
