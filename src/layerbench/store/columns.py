"""Columns of a samples frame built from codes: a text repeated on a million rows is stored once.

A run's samples repeat a few texts endlessly (a cell's labels on every one of its samples, a metric's
name and unit on every trial), so the frame keeps each text column as a categorical: the distinct texts,
and per row an index into them. Reading it so took 1.3 s where joining the texts onto every row in
SQLite and converting them in pandas took 5.3 s (1M samples).
"""

from __future__ import annotations

from collections.abc import Sequence

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
