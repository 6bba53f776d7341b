"""Text sorted, ranked and fingerprinted for both Spider 2.0 comparisons, as NumPy would have."""

from __future__ import annotations

import subprocess
import sys
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from querybench.evaluation.spider2 import official, strict
from querybench.evaluation.spider2.official import (
    stable_text_order,
    text_fingerprint,
    text_ranks,
)

TEXTS = st.lists(
    st.sampled_from(
        ["", "a", "b", "A", "é", "z\x00", "10", "9", "1.0", "日本", "\U0001f600", "a "]
    ),
    max_size=600,
)


def _objects(items: list[str]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


@given(TEXTS)
def test_the_order_is_numpys_stable_argsort(items: list[str]) -> None:
    texts = _objects(items)
    assert stable_text_order(texts).tolist() == np.argsort(texts, kind="stable").tolist()


@given(TEXTS)
def test_the_ranks_are_numpys_unique_inverse(items: list[str]) -> None:
    texts = _objects(items)
    assert text_ranks(texts).tolist() == np.unique(texts, return_inverse=True)[1].tolist()


def test_text_arrow_cannot_take_is_sorted_by_numpy() -> None:
    texts = _objects(["\ud800", "b", "a"] * 100)  # a lone surrogate has no UTF-8
    assert stable_text_order(texts).tolist() == np.argsort(texts, kind="stable").tolist()
    assert text_ranks(texts).tolist() == np.unique(texts, return_inverse=True)[1].tolist()


@given(TEXTS, st.randoms())
def test_equal_multisets_have_equal_fingerprints(items: list[str], rng: object) -> None:
    shuffled = list(items)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    assert text_fingerprint(_objects(items)) == text_fingerprint(_objects(shuffled))


def _official(values: list[object]) -> official.OfficialColumn:
    return official.official_columns([_objects(values)])[0]


def _strict(values: list[object]) -> strict.StrictColumn:
    return strict.strict_columns([_objects(values)])[0]


CELLS = st.lists(
    st.one_of(st.sampled_from(["a", "b", "", "0", "1"]), st.integers(-3, 3), st.none()),
    min_size=1,
    max_size=12,
)


def _verdicts(gold: list[object], pred: list[object], ignore_order: bool) -> tuple[bool, bool]:
    g_official, p_official = _official(gold), _official(pred)
    return (
        official.vectors_match(g_official, p_official, ignore_order),
        strict.strict_table_match([_strict(pred)], [_strict(gold)], ignore_order),
    )


@pytest.mark.parametrize("ignore_order", [True, False])
@given(gold=CELLS, pred=CELLS)
def test_the_fingerprint_never_changes_a_column_verdict(
    gold: list[object], pred: list[object], ignore_order: bool
) -> None:
    """Each comparison gives what it gives when every fingerprint is equal (no shortcut)."""
    n = min(len(gold), len(pred))
    fast = _verdicts(gold[:n], pred[:n], ignore_order)
    equal = property(lambda self: 0)
    with (
        mock.patch.object(official.OfficialColumn, "fingerprint", equal),
        mock.patch.object(strict.StrictColumn, "fingerprint", equal),
    ):
        assert _verdicts(gold[:n], pred[:n], ignore_order) == fast


def test_a_text_differing_in_one_cell_fails_by_its_fingerprint() -> None:
    gold, pred = _official(["b", "a", "c"]), _official(["c", "a", "d"])
    assert gold.fingerprint != pred.fingerprint
    assert not official.vectors_match(gold, pred, ignore_order=True)
    assert pred._order is None  # decided without sorting


def test_sorting_by_arrow_leaves_pandas_unloaded() -> None:
    """Arrow sorts and ranks a column's texts without loading pandas (a third of a second of a
    scoring worker's CPU): `pa.array` and `to_numpy` would ask it about their input."""
    script = """
import sys
import numpy as np
from querybench.evaluation.spider2 import official
texts = np.empty(1000, dtype=object)
texts[:] = [f"t{i * 7919 % 1009}" for i in range(1000)]
order = official.stable_text_order(texts)
ranks = official.text_ranks(texts)
assert order.tolist() == np.argsort(texts, kind="stable").tolist()
assert ranks.tolist() == np.unique(texts, return_inverse=True)[1].tolist()
assert order.dtype == ranks.dtype == np.intp
print("pyarrow" in sys.modules, "pandas" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["True", "False"], done.stderr
