"""Perturbations of a result CSV: the ways a prediction typically differs from its gold."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

Perturbation = Callable[[pd.DataFrame, random.Random], pd.DataFrame]


def _numeric_columns(frame: pd.DataFrame) -> list[int]:
    return [j for j in range(frame.shape[1]) if frame.dtypes.iloc[j].kind in "if"]


def shuffle_rows(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    return frame.sample(frac=1.0, random_state=rng.randrange(2**31)).reset_index(drop=True)


def reorder_columns(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    order = list(range(frame.shape[1]))
    rng.shuffle(order)
    return frame.iloc[:, order]


def rename_columns(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    out = frame.copy()
    out.columns = [f"col_{j}" for j in range(frame.shape[1])]
    return out


def extra_column(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    out = frame.copy()
    out.insert(rng.randrange(frame.shape[1] + 1), "extra", range(len(frame)))
    return out


def drop_column(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    if frame.shape[1] < 2:
        return frame
    return frame.drop(columns=frame.columns[rng.randrange(frame.shape[1])])


def _jitter(frame: pd.DataFrame, rng: random.Random, size: float) -> pd.DataFrame:
    out = frame.copy()
    for j in _numeric_columns(frame):
        col = out.iloc[:, j].astype(float)
        out[out.columns[j]] = col + np.array([rng.uniform(-size, size) for _ in range(len(col))])
    return out


def jitter_inside(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    return _jitter(frame, rng, 0.004)


def jitter_beyond(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    return _jitter(frame, rng, 0.5)


def drop_row(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    if len(frame) == 0:
        return frame
    return frame.drop(index=frame.index[rng.randrange(len(frame))]).reset_index(drop=True)


def duplicate_row(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    if len(frame) == 0:
        return frame
    i = rng.randrange(len(frame))
    return pd.concat([frame, frame.iloc[[i]]], ignore_index=True)


def change_case(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    out = frame.copy()
    for j in range(frame.shape[1]):
        if frame.dtypes.iloc[j].kind not in "biuf":
            out[out.columns[j]] = frame.iloc[:, j].map(
                lambda v: v.upper() if isinstance(v, str) else v
            )
    return out


def missing_to_zero(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    out = frame.copy()
    if len(frame) and frame.shape[1]:
        out.iloc[rng.randrange(len(frame)), rng.randrange(frame.shape[1])] = None
    return out.astype(object).fillna(0) if rng.random() < 0.5 else out


def ints_as_floats(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    out = frame.copy()
    for j in _numeric_columns(frame):
        out[out.columns[j]] = frame.iloc[:, j].astype(float)
    return out


def floats_rounded(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    out = frame.copy()
    for j in _numeric_columns(frame):
        out[out.columns[j]] = frame.iloc[:, j].round(rng.choice([0, 1, 2, 3]))
    return out


def shuffle_columns_independently(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    out = frame.copy()
    for j in range(frame.shape[1]):
        values = list(frame.iloc[:, j])
        rng.shuffle(values)
        out[out.columns[j]] = values
    return out


def header_only(frame: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    return frame.iloc[:0]


PERTURBATIONS: dict[str, Perturbation] = {
    f.__name__: f
    for f in (
        shuffle_rows,
        reorder_columns,
        rename_columns,
        extra_column,
        drop_column,
        jitter_inside,
        jitter_beyond,
        drop_row,
        duplicate_row,
        change_case,
        missing_to_zero,
        ints_as_floats,
        floats_rounded,
        shuffle_columns_independently,
        header_only,
    )
}


def write_perturbed(gold_csv: Path, out_csv: Path, name: str, seed: int) -> None:
    """Write `gold_csv` perturbed by `name` to `out_csv` (special names write raw bytes)."""
    if name == "identity":
        out_csv.write_bytes(gold_csv.read_bytes())
    elif name == "binary":
        out_csv.write_bytes(bytes(random.Random(seed).randrange(256) for _ in range(512)))
    elif name == "empty_file":
        out_csv.write_bytes(b"")
    else:
        frame = pd.read_csv(gold_csv)
        PERTURBATIONS[name](frame, random.Random(seed)).to_csv(out_csv, index=False)


ALL_NAMES = ["identity", "binary", "empty_file", *PERTURBATIONS]
