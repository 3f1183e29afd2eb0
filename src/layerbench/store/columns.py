"""Columns of the samples and monitor frames built from codes: a text repeated on a million rows is stored once.

A run's samples repeat a few texts endlessly (a cell's labels on every one of its samples, a metric's
name and unit on every trial), so the frame keeps each text column as a categorical: the distinct texts,
and per row an index into them. Reading it so took 1.3 s where joining the texts onto every row in
SQLite and converting them in pandas took 5.3 s (1M samples).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd


def categorical(values: Sequence[str | None], rows: np.ndarray) -> pd.Categorical:
    """``values[rows]`` as a categorical whose categories are sorted (so the column sorts as text does);
    a None becomes a missing value, as SQL's NULL reads back."""
    codes, texts = pd.factorize(np.asarray(values, dtype=object), sort=True)
    return pd.Categorical.from_codes(codes[rows], categories=pd.Index(texts, dtype="str"))


def positions(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Where each of ``wanted`` is in ``keys`` (distinct; every wanted key among them)."""
    if len(wanted) and not len(keys):
        raise ValueError("a key is missing from the table it refers to: the table is empty")
    order = np.argsort(keys, kind="stable")
    at = np.searchsorted(keys, wanted, sorter=order)
    found = order[np.minimum(at, len(keys) - 1)]  # a key past the last one points at the last, then fails below
    if len(wanted) and not np.array_equal(keys[found], wanted):
        raise ValueError("a key is missing from the table it refers to")
    return found


SAMPLE_COLUMNS = [
    "run_id", "cell_id", "label", "stack_label", "workload", "is_baseline", "baseline_cell_id",
    "trial_id", "repetition", "metric", "value", "unit", "direction", "job",
]  # fmt: skip
CELL_COLUMNS = ("cell_id", "label", "stack_label", "workload", "baseline_cell_id")
KIND_COLUMNS = ("metric", "unit", "direction", "job")


def samples(
    run_id: str,
    kinds: list[tuple[Any, ...]],
    cells: list[tuple[Any, ...]],
    trials: list[tuple[Any, ...]],
    rows: list[tuple[Any, ...]],
) -> pd.DataFrame:
    """The samples frame from its parts: ``rows`` (trial id, value, kind) point into ``trials`` (id, cell id,
    repetition), which point into ``cells`` (CELL_COLUMNS, then is_baseline); ``kinds``: (kind, KIND_COLUMNS)."""
    if not rows:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in SAMPLE_COLUMNS})
    numbers = np.array(rows)  # one float array: 4x faster than a column at a time; exact for ids below 2**53
    trial_ids = numbers[:, 0].astype(np.int64)
    trial_of = positions(np.array([t[0] for t in trials]), trial_ids)
    cell_of = positions(np.array([c[0] for c in cells]), np.array([t[1] for t in trials]))[trial_of]
    kind_of = positions(np.array([k[0] for k in kinds]), numbers[:, 2].astype(np.int64))
    frame = {
        "run_id": categorical([run_id], np.zeros(len(rows), dtype=np.intp)),
        **{name: categorical([c[i] for c in cells], cell_of) for i, name in enumerate(CELL_COLUMNS)},
        "is_baseline": np.array([c[-1] for c in cells], dtype=np.int64)[cell_of],
        "trial_id": trial_ids,
        "repetition": np.array([t[2] for t in trials], dtype=np.int64)[trial_of],
        **{name: categorical([k[i] for k in kinds], kind_of) for i, name in enumerate(KIND_COLUMNS, 1)},
        "value": numbers[:, 1],
    }
    return pd.DataFrame({name: frame[name] for name in SAMPLE_COLUMNS})


MONITOR_COLUMNS = ["cell_id", "trial_id", "t", "series", "value", "unit"]


def monitor(kinds: list[tuple[Any, ...]], trials: list[tuple[Any, ...]], rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    """The monitor frame from its parts: ``rows`` (trial id, t, value, kind) point into ``trials`` (id, cell id)
    and ``kinds`` (kind, series, unit)."""
    if not rows:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in MONITOR_COLUMNS})
    numbers = np.array(rows)
    trial_ids = numbers[:, 0].astype(np.int64)
    trial_of = positions(np.array([t[0] for t in trials]), trial_ids)
    kind_of = positions(np.array([k[0] for k in kinds]), numbers[:, 3].astype(np.int64))
    frame = {
        "cell_id": categorical([t[1] for t in trials], trial_of),
        "trial_id": trial_ids,
        "t": numbers[:, 1],
        "series": categorical([k[1] for k in kinds], kind_of),
        "value": numbers[:, 2],
        "unit": categorical([k[2] for k in kinds], kind_of),
    }
    return pd.DataFrame(frame)
