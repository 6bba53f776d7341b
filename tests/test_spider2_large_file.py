"""The large-file path (chunked reading into compact columns, compact scoring), forced on small
generated tables and checked against the whole-file path and the reference scorer."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.official_baseline import compare_table
from querybench.errors import DataError, ErrorCode
from querybench.evaluation import prediction_file
from querybench.evaluation.spider2 import large_order, large_result, large_scoring, official, strict
from querybench.evaluation.spider2.gold import EvalSpec
from querybench.evaluation.spider2.instance import score_frame
from querybench.evaluation.spider2.large_result import CompactTable, read_compact, read_result
from querybench.evaluation.spider2.result_csv import column_arrays, read_result_csv


def force_large_path(
    mp: pytest.MonkeyPatch, read_rows: int, chunk_rows: int, window_rows: int, ranges: int
) -> None:
    """Every file read in compact chunks of `read_rows`, scored in small steps."""
    mp.setattr(prediction_file, "LARGE_FILE_BYTES", 0)
    mp.setattr(large_result, "READ_CHUNK_ROWS", read_rows)
    mp.setattr(large_scoring, "CHUNK_ROWS", chunk_rows)
    mp.setattr(large_scoring, "BUCKET_BITS", 1)
    mp.setattr(large_order, "WINDOW_ROWS", window_rows)
    mp.setattr(large_order, "RANGES", ranges)


@pytest.fixture
def forced() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        force_large_path(mp, read_rows=2, chunk_rows=2, window_rows=3, ranges=3)
        yield


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def scores(pred: object, gold: object, cols: object, ignore_order: bool) -> tuple[object, ...]:
    spec = EvalSpec("local001", cols, ignore_order)
    v = score_frame(pred, [gold], True, spec, "lite")  # type: ignore[arg-type]
    return v.official.score, v.official.error, v.strict.score, v.strict.error


NUMBER = st.one_of(
    st.integers(-12, 12).map(str),
    st.floats(-20, 20, allow_nan=False).map(lambda f: repr(round(f, 3))),
    st.sampled_from(["", "1.0", "-0.0", "0", "inf", "-inf", "1e3", "2.5", "2.504", "9", "10"]),
)
WORD = st.sampled_from(["", "a", "b", "A", "x y", "north", "é", "-x"])


@st.composite
def csv_table(draw: st.DrawFn, n_rows: int) -> str:
    kinds = draw(st.lists(st.sampled_from(["num", "int", "text"]), min_size=1, max_size=3))
    cells = {"num": NUMBER, "int": st.integers(-5, 5).map(str), "text": WORD}
    lines = [",".join(f"c{j}" for j in range(len(kinds)))]
    for _ in range(n_rows):
        lines.append(",".join(draw(cells[k]) for k in kinds))
    return "\n".join(lines) + "\n"


def derived(data: st.DataObject, gold_text: str) -> str:
    header, *rows = gold_text.splitlines()
    how = data.draw(st.sampled_from(["same", "shuffled", "one_changed", "columns", "dropped"]))
    if how == "shuffled":
        rows = data.draw(st.permutations(rows))
    elif how == "one_changed" and rows:
        i = data.draw(st.integers(0, len(rows) - 1))
        rows[i] = ",".join(data.draw(st.sampled_from(["7.5", "a", "3"])) for _ in header.split(","))
    elif how == "columns":
        width = len(header.split(","))
        order = data.draw(st.permutations(range(width)))
        extra = data.draw(st.booleans())
        table = [line.split(",") for line in [header, *rows]]
        table = [[r[j] for j in order] + ([r[0]] if extra else []) for r in table]
        header, *rows = [",".join(r) for r in table]
    elif how == "dropped" and rows:
        rows = rows[:-1]
    return "\n".join([header, *rows]) + "\n"


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    data=st.data(),
    ignore_order=st.booleans(),
    cols=st.sampled_from([[], [0], [1], [0, 1], 0]),
)
def test_large_path_verdicts_equal_exact_path_and_reference(
    forced: None,
    tmp_path_factory: pytest.TempPathFactory,
    data: st.DataObject,
    ignore_order: bool,
    cols: object,
) -> None:
    root = tmp_path_factory.mktemp("t")
    gold_text = data.draw(csv_table(data.draw(st.integers(1, 9))))
    gold_path = write(root / "gold.csv", gold_text)
    pred_path = write(root / "pred.csv", derived(data, gold_text))
    exact_pred, exact_gold = read_result_csv(pred_path), read_result_csv(gold_path)
    expected = scores(exact_pred, exact_gold, cols, ignore_order)
    compact_pred, compact_gold = read_result(pred_path), read_result(gold_path)
    assert scores(compact_pred, compact_gold, cols, ignore_order) == expected
    assert scores(compact_pred, exact_gold, cols, ignore_order) == expected
    assert scores(exact_pred, compact_gold, cols, ignore_order) == expected
    width = len(gold_text.splitlines()[0].split(","))
    if isinstance(cols, list) and any(c >= width for c in cols):
        # `gold.iloc[:, cols]` past the gold's columns: officially the instance scores 0
        with pytest.raises(IndexError):
            compare_table(exact_pred, exact_gold, cols, ignore_order, "lite")
        spec = EvalSpec("local001", cols, ignore_order)
        official = score_frame(exact_pred, [exact_gold], True, spec, "lite").official
        assert (official.score, official.error) == (0.0, ErrorCode.GOLD_ERROR)
        assert "official comparison failed: IndexError" in str(official.message)
        return
    reference = compare_table(exact_pred, exact_gold, cols, ignore_order, "lite")
    assert expected[0] == reference
    assert (expected[1] is None) == (reference == 1)


def _table(rows: list[tuple[object, ...]], header: str = "id,value,label") -> str:
    return header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows)


def test_large_path_on_a_bigger_table(forced: None, tmp_path: Path) -> None:
    rng = random.Random(1)
    words = ["north", "south", "east", "west"]
    gold = [(i, round(rng.uniform(0, 1000), 3), rng.choice(words)) for i in range(300)]
    gold[7] = (7, "", "")  # gaps in the float and text columns
    shuffled = gold[:]
    rng.shuffle(shuffled)
    nudged = [(i, v + 0.004 if isinstance(v, float) else v, w) for i, v, w in gold]
    swapped = [(i, v, gold[(k + 1) % 300][2]) for k, (i, v, _) in enumerate(gold)]
    cases = [(shuffled, True), (shuffled, False), (gold, False), (nudged, True)]
    cases += [(swapped, True), (swapped, False), ([*gold[:-1], (1, 1.0, "east")], True)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(large_result, "READ_CHUNK_ROWS", 37)
        mp.setattr(large_scoring, "CHUNK_ROWS", 50)
        gold_path = write(tmp_path / "gold.csv", _table(gold))
        for rows, ignore_order in cases:
            pred_path = write(tmp_path / "pred.csv", _table(rows))
            compact_pred, compact_gold = read_result(pred_path), read_result(gold_path)
            assert isinstance(compact_pred, CompactTable)
            assert isinstance(compact_gold, CompactTable)
            exact_pred, exact_gold = read_result_csv(pred_path), read_result_csv(gold_path)
            got = scores(compact_pred, compact_gold, [], ignore_order)
            assert got == scores(exact_pred, exact_gold, [], ignore_order)
            assert got[0] == compare_table(exact_pred, exact_gold, [], ignore_order, "lite")


ACCEPTED = [
    "a,b\n1,x\n2,y\n3,\n4,z\n",  # text with a gap
    "a,b\n1,1.5\n2,2\n3,4\n4,5\n",  # a chunk of ints beside floats -> float64
    "a,b\n1,\n2,\n3,y\n4,x\n",  # an all-missing chunk in a text column
    "a,b\n1,\n2,\n3,4\n4,5\n",  # ints with gaps -> float64
    "a,b\n1,2\n3,4\n5,6\n",
    # floats pandas 2.2 (the record) reads otherwise than pandas 3, in every chunk
    "a,b\n1,0.1234567890123456789\n2,1.5\n3,123456789.12345678901\n4,2.5e-300\n",
    "a,b\n1,1\n2,\n3,0.30000000000000004441\n4,9.87654321012345678e22\n",
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_compact_values_equal_whole_file_values(tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "t.csv", text)
    compact = read_compact(path, 2)
    assert compact is not None
    expected = column_arrays(read_result_csv(path))
    got = column_arrays(compact.to_frame())
    for e, g in zip(expected, got, strict=True):
        assert e.dtype == g.dtype
        assert pd.Series(e).equals(pd.Series(g))


FALLBACK = [
    "a,b\n1,x\n2,y\n3,1st\n",  # text that could be typed as a number
    "a,b\n1,x\n2,y\n3,True\n4,z\n",  # a boolean spelling
    "a,b\n1,x\n2,y\n3,4\n5,6\n",  # text in one chunk, numbers in another
    "a,b\n1,True\n2,False\n",  # booleans
    "a\n1,x\n2,y\n",  # implicit index
    "a,b\n1,18446744073709551615\n2,3\n",  # uint64
    "a,b\n1,9007199254740993\n2,3\n3,0.5\n",  # an int >= 2**53 beside floats
    "a,b\n1,x\n2,y\n3,z,w\n",  # too many fields
    "a,b\n",  # no rows
]


@pytest.mark.parametrize("text", FALLBACK)
def test_fallback_to_whole_file_parse(forced: None, tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "t.csv", text)
    assert read_compact(path, 2) is None
    try:
        expected: object = read_result_csv(path)
    except DataError as exc:
        with pytest.raises(DataError) as got:
            read_result(path)
        assert str(got.value) == str(exc)
        return
    result = read_result(path)
    assert isinstance(result, pd.DataFrame)
    assert result.equals(expected)


def test_small_files_stay_on_the_whole_file_path(tmp_path: Path) -> None:
    path = write(tmp_path / "t.csv", "a,b\n1,x\n")
    assert isinstance(read_result(path), pd.DataFrame)


def test_exact_rows_and_missing_text(tmp_path: Path) -> None:
    path = write(tmp_path / "t.csv", "a,b\n1,y\n2,\n3,x\n")
    compact = read_compact(path, 2)
    assert compact is not None
    assert compact.exact(1, np.array([2, 0])).tolist() == ["x", "y"]
    assert pd.isna(compact.exact(1)[1])


def _near_miss_table(rng: random.Random, rows: int, gaps: bool) -> list[list[object]]:
    """id (int, duplicated), value (3 decimals, repeated values, gaps), label (text, gaps),
    count (int, some cells float-typed by a gap)."""
    words = ["north", "south", "east", "west", "é"]
    table: list[list[object]] = []
    for i in range(rows):
        value: object = round(rng.choice([rng.uniform(0, 50), rng.uniform(-1, 1), 9.0]), 3)
        label: object = rng.choice(words)
        count: object = rng.randint(-3, 3)
        if gaps and i % 97 == 5:
            value, label, count = "", "", ""
        table.append([i // 2, value, label, count])
    return table


def _nudged(table: list[list[object]], rng: random.Random, delta: float, cells: int) -> None:
    numbers = [r for r in table if isinstance(r[1], float)]
    for row in rng.sample(numbers, cells):
        row[1] = round(float(row[1]) + delta, 6)  # type: ignore[arg-type]


NEAR_MISSES = [
    (0.004, 1),  # within the 0.01 tolerance
    (-0.009, 3),
    (0.011, 1),  # just beyond it
    (0.5, 1),
    (0.004, 40),  # many within: sorted positions shift
    (0.0, 0),
]


@pytest.mark.parametrize(("delta", "cells"), NEAR_MISSES)
@pytest.mark.parametrize("rows", [60, 3_100])  # 3,100: past strict's one-to-one search
def test_near_misses_on_the_sorted_path_equal_exact_path_and_reference(
    tmp_path: Path, delta: float, cells: int, rows: int
) -> None:
    rng = random.Random(f"{delta}{cells}{rows}")
    gold = _near_miss_table(rng, rows, gaps=True)
    pred = [row[:] for row in gold]
    _nudged(pred, rng, delta, cells)
    rng.shuffle(pred)
    header = "id,value,label,count"
    gold_path = write(tmp_path / "gold.csv", _table([tuple(r) for r in gold], header))
    pred_path = write(tmp_path / "pred.csv", _table([tuple(r) for r in pred], header))
    in_order_path = write(
        tmp_path / "in_order.csv", _table([tuple(r) for r in sorted(pred, key=_id_key)], header)
    )
    with pytest.MonkeyPatch.context() as mp:
        force_large_path(mp, read_rows=997, chunk_rows=64, window_rows=50, ranges=7)
        exact_gold = read_result_csv(gold_path)
        compact_gold = read_result(gold_path)
        assert isinstance(compact_gold, CompactTable)
        for path in (pred_path, in_order_path):
            compact_pred, exact_pred = read_result(path), read_result_csv(path)
            assert isinstance(compact_pred, CompactTable)
            for cols in ([], [1], [0, 1], [2, 1]):
                for ignore_order in (True, False):
                    expected = scores(exact_pred, exact_gold, cols, ignore_order)
                    got = scores(compact_pred, compact_gold, cols, ignore_order)
                    assert got == expected, (path.name, cols, ignore_order)
                    reference = compare_table(exact_pred, exact_gold, cols, ignore_order, "lite")
                    assert got[0] == reference


def _id_key(row: list[object]) -> tuple[object, ...]:
    return (row[0], str(row[1]), str(row[2]), str(row[3]))


def test_near_miss_never_compares_more_than_a_window(
    forced: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past strict's one-to-one search every exact comparison sees one window, not whole columns."""
    rng = random.Random(3)
    gold = _near_miss_table(rng, 3_200, gaps=True)
    pred = [row[:] for row in gold]
    _nudged(pred, rng, 0.004, 5)
    rng.shuffle(pred)
    header = "id,value,label,count"
    compact_gold = read_result(write(tmp_path / "g.csv", _table([tuple(r) for r in gold], header)))
    compact_pred = read_result(write(tmp_path / "p.csv", _table([tuple(r) for r in pred], header)))
    monkeypatch.setattr(large_order, "WINDOW_ROWS", 100)
    monkeypatch.setattr(large_result, "READ_CHUNK_ROWS", 1000)
    seen: list[int] = []
    exact_official, exact_strict = official.vectors_match, strict.cells_equal

    def official_window(gold: Any, pred: Any, ignore_order: bool) -> bool:
        seen.append(len(gold))
        return exact_official(gold, pred, ignore_order)

    def strict_window(a: Any, b: Any, ia: Any, ib: Any) -> Any:
        seen.append(len(ia))
        return exact_strict(a, b, ia, ib)

    monkeypatch.setattr(official, "vectors_match", official_window)
    monkeypatch.setattr(strict, "cells_equal", strict_window)
    assert scores(compact_pred, compact_gold, [], True) == (1.0, None, 1.0, None)
    assert seen and max(seen) == 100


@pytest.mark.parametrize("ranges", [1, 3, 64])
def test_sorted_runs_are_the_exact_scorers_order(tmp_path: Path, ranges: int) -> None:
    rng = random.Random(ranges)
    rows = [tuple(r) for r in _near_miss_table(rng, 700, gaps=True)]
    rows += [(5, 9.995, "a", 1), (5, 10.004, "a", 1), (6, 1e-05, "b", 0), (6, -0.0, "b", 0)]
    path = write(tmp_path / "t.csv", _table(rows, "id,value,label,count"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(prediction_file, "LARGE_FILE_BYTES", 0)
        mp.setattr(large_order, "WINDOW_ROWS", 31)
        mp.setattr(large_order, "RANGES", ranges)
        table, frame = read_result(path), read_result_csv(path)
        assert isinstance(table, CompactTable)
        exact = official.official_columns(frame)
        dtype = large_scoring._official_dtype(table, range(4))
        for j in (0, 1, 3):
            runs = list(large_scoring._official_sorted(table, j, dtype))
            assert np.concatenate(runs).tolist() == exact[j].order().tolist()
        pair = large_scoring._Pair(table, table)
        for cols in ([0, 1, 2, 3], [2, 1], [1], [3, 2, 0], [2]):
            runs = list(pair._strict_order(table, cols))
            expected = strict._sort_rows(strict.strict_columns(frame.iloc[:, cols]))
            assert np.concatenate(runs).tolist() == expected.tolist()


def test_official_sorts_by_text_not_by_number(forced: None, tmp_path: Path) -> None:
    """Sorted by str, 10.004 comes before 9.995 and meets 10.0; 9.995 then meets 10.009, 0.014
    away: officially no match, though sorted by number both pairs are within 0.01."""
    filler = [(i, float(100 + i)) for i in range(40)]
    gold = [*filler, (40, 9.995), (41, 10.004)]
    pred = [*filler, (40, 10.0), (41, 10.009)]
    gold_path = write(tmp_path / "g.csv", _table(gold, "id,value"))
    pred_path = write(tmp_path / "p.csv", _table(pred[::-1], "id,value"))
    compact = read_result(pred_path), read_result(gold_path)
    assert scores(*compact, [1], True) == (0.0, ErrorCode.WRONG_RESULT, 1.0, None)
    exact = read_result_csv(pred_path), read_result_csv(gold_path)
    assert compare_table(*exact, [1], True, "lite") == 0


def _cut_at_dot(text: str) -> int:
    """`str_order_key`'s rule, on the real `str(x)`: up to the first '.', at most 8 bytes."""
    text = text[: text.index(".") + 1] if "." in text else text
    return int.from_bytes(text[:8].encode().ljust(8, b"\0"), "big")


def test_str_order_key_is_the_cut_of_str() -> None:
    rng = random.Random(0)
    floats = [0.0, -0.0, 1e-4, 9.999e-5, 1e16, 9999999999999998.0, 123.456, -1234567.5]
    floats += [12345678.5, np.inf, -np.inf, 5e-324, 0.5, 1.0, 10.0, 99.99, 1e300, np.nan]
    floats += [rng.uniform(-1e6, 1e6) for _ in range(500)]
    floats += [10 ** rng.uniform(-8, 20) * rng.choice([1, -1]) for _ in range(500)]
    floats += [rng.choice([-1, 1]) * rng.random() for _ in range(500)]  # one integer part: 0
    floats += [rng.choice([-1, 1]) * (rng.randint(10, 999) + rng.random()) for _ in range(500)]
    floats += [round(rng.uniform(1, 3), 2) for _ in range(100)]
    key, simple = large_order.str_order_key(np.array(floats))
    texts = ["0" if f != f else repr(f) for f in floats]  # a missing float is the integer 0
    cuts = [_cut_at_dot(t) for t in texts]
    widths = [8 * (8 - min(8, t.index(".") + 1)) if "." in t else 0 for t in texts]
    assert [k >> w << w for k, w in zip(key.tolist(), widths, strict=True)] == cuts
    assert simple.tolist() == [t == "0" or ("e" not in t and 0 <= t.find(".") < 8) for t in texts]
    keys = [key.tolist()[i] for i in sorted(range(len(texts)), key=lambda i: texts[i])]
    assert keys == sorted(keys)  # never decreasing in str order
    ints = [0, -1, 7, 12345678, -1234567, 123456789, 10**18 - 1, -(10**18), 2**63 - 1, -(2**63)]
    ints += [rng.randint(-(10**12), 10**12) for _ in range(500)]
    key, simple = large_order.str_order_key(np.array(ints, dtype=np.int64))
    assert key.tolist() == [_cut_at_dot(str(i)) for i in ints]
    assert simple.tolist() == [len(str(i)) <= 8 for i in ints]


def test_one_integer_part_still_splits_into_ranges(tmp_path: Path) -> None:
    """Values in (-1, 1) all cut to "0." or "-0.": the fraction's bits keep the ranges apart."""
    rng = random.Random(5)
    rows = [(i, round(rng.uniform(-1, 1), 4)) for i in range(2000)]
    path = write(tmp_path / "t.csv", _table(rows, "id,value"))
    with pytest.MonkeyPatch.context() as mp:
        force_large_path(mp, read_rows=500, chunk_rows=64, window_rows=64, ranges=8)
        table, frame = read_result(path), read_result_csv(path)
        assert isinstance(table, CompactTable)
        runs = list(large_scoring._official_sorted(table, 1, np.dtype(np.float64)))
    assert np.concatenate(runs).tolist() == official.official_columns(frame)[1].order().tolist()
    assert len(runs) == 8 and max(len(r) for r in runs) < 2000 // 4
