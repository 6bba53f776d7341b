"""A plain, single-process pandas implementation of the official Spider 2.0 exec_result scorer.

Written from the official 2025-11 `evaluate.py` semantics (not copied), cell by cell in Python
as the original does. It is the baseline of `bench/bench_spider2_scoring.py` and the oracle the
agreement tests compare querybench's fast scorer with.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

import pandas as pd


def _normalise(value: Any) -> Any:
    return 0 if pd.isna(value) else value


def _sort_key(x: Any) -> tuple[bool, str, bool]:
    return (x is None, str(x), isinstance(x, (int, float)))


def _vectors_match(v1: list[Any], v2: list[Any], ignore_order: bool) -> bool:
    v1 = [_normalise(x) for x in v1]
    v2 = [_normalise(x) for x in v2]
    if ignore_order:
        v1, v2 = sorted(v1, key=_sort_key), sorted(v2, key=_sort_key)
    if len(v1) != len(v2):
        return False
    for a, b in zip(v1, v2, strict=False):
        if pd.isna(a) and pd.isna(b):
            continue
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if not math.isclose(float(a), float(b), abs_tol=1e-2):
                return False
        elif a != b:
            return False
    return True


def compare_table(
    pred: pd.DataFrame, gold: pd.DataFrame, condition_cols: Any, ignore_order: bool, variant: str
) -> int:
    selects = bool(condition_cols) if variant == "lite" else condition_cols != []
    if selects:
        if not isinstance(condition_cols, (list, tuple)):
            condition_cols = [condition_cols]
        gold = gold.iloc[:, condition_cols]
    gold_vectors = gold.transpose().values.tolist()
    pred_vectors = pred.transpose().values.tolist()
    for g in gold_vectors:
        if not any(_vectors_match(g, p, ignore_order) for p in pred_vectors):
            return 0
    return 1


def compare_multi(
    pred: pd.DataFrame,
    golds: list[pd.DataFrame],
    condition_cols: Any,
    ignore_order: bool,
    variant: str,
) -> int:
    if not golds:
        return 0
    if condition_cols in (None, [], [[]], [None]):
        per_gold: Any = [[] for _ in golds]
    elif len(golds) > 1 and not all(isinstance(c, list) for c in condition_cols):
        per_gold = [condition_cols for _ in golds]
    else:
        per_gold = condition_cols
    for i, gold in enumerate(golds):
        if compare_table(pred, gold, per_gold[i], ignore_order, variant):
            return 1
    return 0


def score_instance(
    pred_path: str, gold_dir: str, instance_id: str, spec: dict[str, Any], variant: str
) -> int:
    """exec_result mode for one instance; any exception scores 0, as officially."""
    try:
        return _against_gold(pd.read_csv(pred_path), gold_dir, instance_id, spec, variant)
    except Exception:
        return 0


def _against_gold(
    pred: pd.DataFrame, gold_dir: str, instance_id: str, spec: dict[str, Any], variant: str
) -> int:
    """The base gold file alone when it exists, else every `_<letter>` alternative in order."""
    base = os.path.join(gold_dir, f"{instance_id}.csv")
    if os.path.exists(base):
        return compare_table(
            pred, pd.read_csv(base), spec["condition_cols"], spec["ignore_order"], variant
        )
    pattern = re.compile(rf"^{re.escape(instance_id)}(_[a-z])?\.csv$")
    names = sorted(f for f in os.listdir(gold_dir) if pattern.match(f))
    golds = [pd.read_csv(os.path.join(gold_dir, n)) for n in names]
    return compare_multi(pred, golds, spec["condition_cols"], spec["ignore_order"], variant)


def official_sqlite_frame(db_path: str, sql: str) -> pd.DataFrame:
    """The official sql mode for local tasks: run on an in-memory copy, 500-row chunks to CSV,
    then read that CSV back (any error propagates)."""
    import io
    import sqlite3

    match = re.search(r"```sql\n(.*?)\n```", sql, re.DOTALL)
    if match:
        sql = match.group(1).strip()
    conn = sqlite3.connect(db_path)
    memory = sqlite3.connect(":memory:")
    conn.backup(memory)
    buffer = io.StringIO()
    try:
        for i, chunk in enumerate(pd.read_sql_query(sql, memory, chunksize=500)):
            chunk.to_csv(buffer, header=i == 0, index=False)
    finally:
        memory.close()
        conn.close()
    buffer.seek(0)
    return pd.read_csv(buffer)


def score_sql_instance(
    db_path: str, sql: str, gold_dir: str, instance_id: str, spec: dict[str, Any], variant: str
) -> int:
    """sql mode for one local instance; any exception scores 0, as officially."""
    try:
        pred = official_sqlite_frame(db_path, sql)
        return _against_gold(pred, gold_dir, instance_id, spec, variant)
    except Exception:
        return 0
