"""A run's samples as CSV, byte for byte as pandas writes them, without formatting what repeats.

Of a sample's 50-odd columns only its value is its own: the rest repeat per cell (its labels and whole
configuration), per trial or per kind of sample (metric, unit, direction, job). pandas' to_csv formatted
every field of every row: 13 s for the scale bench's 1,008,000 samples. Here pandas formats each distinct
part once (so quoting, missing values and numbers are its own), and each row is those parts joined.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:  # a kept run's rows are joined and written without pandas (report/kept_export.py)
    import pandas as pd

# The parts of a row, left to right, each with the columns that determine it (store.columns.SAMPLE_COLUMNS).
PARTS = (
    (["run_id", "cell_id", "label", "stack_label", "workload", "is_baseline", "baseline_cell_id"], ["cell_id"]),
    (["trial_id", "repetition"], ["trial_id"]),
    (["metric"], ["metric"]),
    (["value"], None),  # its own on every row
    (["unit", "direction", "job"], ["unit", "direction", "job"]),
)
CHUNK = 100_000  # rows joined at a time: the whole text of 1M rows would be 360 MB more


def chunks(frame: pd.DataFrame, config: pd.DataFrame) -> Iterator[str] | None:
    """``encoded`` as text."""
    out = encoded(frame, config)
    return None if out is None else (str(chunk, "utf-8") for chunk in out)


def encoded(frame: pd.DataFrame, config: pd.DataFrame) -> Iterator[bytes | memoryview] | None:
    """``frame.merge(config, on="cell_id", how="left")`` as CSV (UTF-8), header first, in chunks; None where
    the frame is not a samples frame or a field holds a line break (then only pandas itself can write it)."""
    formatted = parts(frame, config)
    return None if formatted is None else joined(formatted)


@dataclass(frozen=True)
class Parts:
    """A run's CSV before its rows are joined: every field formatted, each distinct part once. Kept with the run
    (store/cache.py, by `export`): formatting is most of writing a big run's CSV, joining and writing the rest."""

    header: str
    rows: int
    # Per part of a row: which of its lines each row has (None: each row its own), and the lines; the last
    # part's lines end with the line break.
    parts: list[tuple[np.ndarray | None, pa.Array]]


def parts(frame: pd.DataFrame, config: pd.DataFrame) -> Parts | None:
    """``frame`` and its cells' ``config`` formatted as pandas' to_csv would (``encoded``), or None."""
    import pandas as pd

    columns = [c for part, _ in PARTS for c in part]
    if list(frame.columns) != columns or frame.empty:
        return None
    found = [_part(frame, part, key) for part, key in PARTS]
    cells = frame.drop_duplicates("cell_id")[["cell_id"]].merge(config, on="cell_id", how="left")
    if cells.shape[1] > 1:  # the cell's configuration, after the sample's own columns
        text = lines(cells.drop(columns="cell_id"))
        found.append(None if text is None else (pd.Index(cells["cell_id"]).get_indexer(frame["cell_id"]), text))
    kept = [p for p in found if p is not None]
    if len(kept) < len(found):
        return None
    header = frame.iloc[:0].merge(config.iloc[:0], on="cell_id", how="left").to_csv(index=False)
    last = len(found) - 1  # its lines end the row
    texts = [(which, text if i < last else [t + "\n" for t in text]) for i, (which, text) in enumerate(kept)]
    return Parts(header, len(frame), [(_narrow(which), pa.array(text, pa.string())) for which, text in texts])


def _narrow(which: np.ndarray | None) -> np.ndarray | None:
    """Row indexes as 32-bit integers (half the cache), where they fit."""
    return which if which is None or len(which) == 0 or which.max() > np.iinfo(np.int32).max else which.astype(np.int32)


Part = tuple[np.ndarray | None, list[str]]  # per row, which line; the lines (one per row where None)


def _part(frame: pd.DataFrame, columns: list[str], key: list[str] | None) -> Part | None:
    if key is None:
        if len(columns) == 1 and frame[columns[0]].dtype == np.float64:
            return None, floats(frame[columns[0]].to_numpy())
        text = lines(frame[columns])
        return None if text is None else (None, text)
    which = frame.groupby(key, sort=False, observed=True, dropna=False).ngroup().to_numpy()
    first = np.unique(which, return_index=True)[1]  # the first row of each group, in group order
    text = lines(frame.iloc[first][columns])
    return None if text is None else (which, text)


def lines(table: pd.DataFrame) -> list[str] | None:
    """Each row of ``table`` as pandas writes it within a wider row; None if a field holds a line break."""
    text = table.to_csv(index=False, header=False, lineterminator="\n")
    out = text.split("\n")[:-1]
    if len(out) != len(table):
        return None
    if table.shape[1] == 1:
        # The csv module quotes an empty field that is a row's only one (else the row would be blank);
        # within a wider row it is written empty.
        out = ["" if line == '""' else line for line in out]
    return out


def floats(values: np.ndarray) -> list[str]:
    """Each float as pandas writes it in a row of CSV: numpy's shortest representation (``astype(str)``), whose
    digits and form (``1e+16``, ``1.5e-05``, ``-0.0``, ``inf``) are Python's ``repr``, which takes half its
    time (0.35 s of 1M samples); NaN as an empty field."""
    text = list(map(float.__repr__, values.tolist()))
    for i in np.flatnonzero(np.isnan(values)).tolist():
        text[i] = ""
    return text


def joined(formatted: Parts) -> Iterator[bytes | memoryview]:
    """The header, then the rows CHUNK at a time: each part's line of the row, joined by commas in Arrow (a
    Python join of six texts per row was 1.5 s of 1M rows)."""
    yield formatted.header.encode("utf-8")
    for start in range(0, formatted.rows, CHUNK):
        stop = min(start + CHUNK, formatted.rows)
        pieces = [
            text.slice(start, stop - start) if which is None else text.take(_indexes(which[start:stop]))
            for which, text in formatted.parts
        ]
        yield _text(pc.binary_join_element_wise(*pieces, _comma()))


# pa.array and pa.scalar look for pandas' objects in what they convert, importing pandas (0.2 s) to do so: a
# kept export's indexes and separator are made from their buffers instead.
def _indexes(which: np.ndarray) -> pa.Array:
    """``pa.array(which)`` for a slice of integer row indexes."""
    which = np.ascontiguousarray(which)
    return pa.Array.from_buffers(pa.from_numpy_dtype(which.dtype), len(which), [None, pa.py_buffer(which)])


def _comma() -> pa.StringScalar:
    """``pa.scalar(",")``."""
    offsets = pa.py_buffer(np.array([0, 1], dtype=np.int32))
    return pa.StringArray.from_buffers(1, offsets, pa.py_buffer(b","))[0]  # type: ignore[no-any-return]


def _text(joined: pa.Array) -> bytes | memoryview:
    """A string array without nulls as one UTF-8 text, not copied: its characters are one buffer, in order."""
    if not len(joined):
        return b""
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32)[joined.offset : joined.offset + len(joined) + 1]
    return memoryview(joined.buffers()[2])[offsets[0] : offsets[-1]]
