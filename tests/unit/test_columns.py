"""The samples frame's columns built from codes: the same texts, stored once."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from layerbench.store.columns import categorical, positions


def test_a_categorical_repeats_each_text_where_its_rows_point() -> None:
    column = categorical(["b", None, "a"], np.array([0, 2, 1, 0]))
    assert column.tolist()[:2] == ["b", "a"] and pd.isna(column[2]) and column[3] == "b"
    assert list(column.categories) == ["a", "b"]  # sorted: the column sorts as its texts do


def test_a_categorical_writes_the_same_csv_as_its_texts() -> None:
    texts = ["x · RR", None, "y"]
    column = categorical(texts, np.array([0, 1, 2]))
    frame = pd.DataFrame({"label": column, "n": [1, 2, 3]})
    plain = pd.DataFrame({"label": texts, "n": [1, 2, 3]})
    assert frame.to_csv(index=False) == plain.to_csv(index=False)


def test_positions_finds_each_key_in_an_unsorted_table() -> None:
    assert positions(np.array([30, 10, 20]), np.array([10, 10, 30, 20])).tolist() == [1, 1, 0, 2]
    assert positions(np.array(["b", "a"]), np.array(["a", "b"])).tolist() == [1, 0]


def test_positions_refuses_a_key_the_table_lacks() -> None:
    with pytest.raises(ValueError, match="missing"):
        positions(np.array([10, 20]), np.array([15]))
    with pytest.raises(ValueError, match="missing"):
        positions(np.array([10, 20]), np.array([25]))  # past the end: searchsorted points beyond the table
