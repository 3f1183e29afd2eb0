"""CSV of a run's samples from their distinct parts: byte for byte what pandas writes of the whole table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from layerbench.report import csv_lines


def frame(rows: int = 7) -> pd.DataFrame:
    """A samples frame with what makes CSV hard: commas, quotes, missing texts and values, one empty field."""
    cell = np.arange(rows) % 3
    labels = ['a, "quoted" · RR', "b · RR", "c · SW"]
    return pd.DataFrame(
        {
            "run_id": "r1",
            "cell_id": pd.Categorical([f"c{i}" for i in cell]),
            "label": [labels[i] for i in cell],
            "stack_label": pd.Categorical([labels[i].split(" · ")[0] for i in cell]),
            "workload": "RR",
            "is_baseline": (cell == 0).astype(np.int64),
            "baseline_cell_id": pd.Categorical([None if i == 0 else "c0" for i in cell]),
            "trial_id": np.arange(rows) // 2 + 10,
            "repetition": np.arange(rows) // 2,
            "metric": pd.Categorical(["iops", "ops"] * (rows // 2) + ["iops"] * (rows % 2)),
            "value": [1.5, np.nan, 1e16, 0.1, -0.0, 123456.789, 2.0][:rows] + [3.25] * max(0, rows - 7),
            "unit": "IO/s",
            "direction": ["read", ""] * (rows // 2) + ["read"] * (rows % 2),
            "job": "RR",
        }
    )


CONFIG = pd.DataFrame(
    {"cell_id": ["c0", "c1"], "stack.fs": ["ext4", "xfs,noatime"], "workload.bs": [4096, 8192], "x.y": [None, 1.0]}
)  # c2 has no configuration: a left merge leaves its columns empty (and makes the integers floats)


@pytest.mark.parametrize("config", [CONFIG, CONFIG[["cell_id"]]])
def test_the_parts_joined_are_what_pandas_writes_of_the_merged_table(config: pd.DataFrame) -> None:
    samples = frame()
    expected = samples.merge(config, on="cell_id", how="left").to_csv(index=False)
    assert "".join(csv_lines.chunks(samples, config) or []) == expected


def test_rows_are_joined_a_chunk_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csv_lines, "CHUNK", 3)
    samples = frame(10)
    text = list(csv_lines.chunks(samples, CONFIG) or [])
    assert len(text) == 1 + 4  # the header, then ten rows three at a time
    assert "".join(text) == samples.merge(CONFIG, on="cell_id", how="left").to_csv(index=False)


def test_a_line_break_in_a_field_or_another_frame_is_left_to_pandas() -> None:
    broken = frame()
    broken["job"] = "two\nlines"
    assert csv_lines.chunks(broken, CONFIG) is None
    assert csv_lines.chunks(frame().drop(columns="job"), CONFIG) is None
    assert csv_lines.chunks(frame().iloc[:0], CONFIG) is None


def test_an_empty_field_alone_is_written_empty_as_within_a_row() -> None:
    assert csv_lines.lines(pd.DataFrame({"v": [np.nan, 1.0], "w": [None, "x"]})[["v"]]) == ["", "1.0"]
    assert csv_lines.lines(pd.DataFrame({"v": ["a,b"]})) == ['"a,b"']


EDGES = [0.0, -0.0, 1.0, 1e16, 9999999999999998.0, 1e-4, 9.999e-5, 1.5e-05, 5e-324, 2.2250738585072014e-308]
EDGES += [1.7976931348623157e308, 0.1 + 0.2, 123456.789, np.nan, np.inf, -np.inf, -1e-7, 2.0**53, 2.0**53 + 2]


def test_floats_are_written_as_pandas_writes_them() -> None:
    """``floats`` (Python's repr) gives what pandas' to_csv writes of a float column (numpy's astype(str)), on
    the edges of its notations and on 200,000 doubles of every exponent (random bit patterns, seeded)."""
    bits = np.random.default_rng(31).integers(0, 2**64, 200_000, dtype=np.uint64, endpoint=False)
    for values in (np.array(EDGES), bits.view(np.float64), np.random.default_rng(4).lognormal(10, 4, 100_000)):
        assert csv_lines.floats(values) == csv_lines.lines(pd.DataFrame({"value": values}))
