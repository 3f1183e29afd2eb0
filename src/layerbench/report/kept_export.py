"""A run's export as its cache keeps it, written without pandas.

A big run's end builds its CSV and Parquet exports (report/prepared.py); writing them again needs only the
kept bytes or rows. Importing pandas and reading the run's samples, which only building needs, were a
third of a cached CSV export of a million samples (0.5 s of 1.7 s).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerbench.store import cache
from layerbench.store.db import Store


@dataclass(frozen=True)
class Kept:
    """A table format's file as a run's cache keeps it (store/cache.py, under the format's name): built once
    from the samples and the cells' configuration, written again from the kept object alone."""

    build: Callable[[Any, Any], Any]  # (samples frame, cell_config) → the kept object; None: not a samples frame
    holds: Callable[[object], bool]  # whether a kept object is this format's
    chunks: Callable[[Any], Iterable[bytes | memoryview]]  # the file's bytes from it
    rows: Callable[[Any], int]  # the samples it holds


def write(store: Store, run_id: str, fmt: str, kept: Kept, path: Path | None) -> tuple[str, int] | None:
    """The run's kept ``fmt`` written to ``path`` (None: standard output): where it went and how many
    samples; None where the cache keeps no current one (the export builds it then)."""
    data = cache.kept(store, run_id, fmt)
    if not kept.holds(data):
        return None
    return written(kept.chunks(data), path), kept.rows(data)


def written(chunks: Iterable[bytes | memoryview], path: Path | None) -> str:
    """``chunks`` written to ``path`` or standard output, each by a thread while the next is made (a write lets
    go of the GIL: writing 360 MB was 0.5 s of a 1M-sample export); one chunk in flight: memory for two.
    Where it went, for the user's message."""
    with open(path, "wb") if path else nullcontext(sys.stdout.buffer) as out, ThreadPoolExecutor(1) as writer:
        pending: Future[int] | None = None
        for chunk in chunks:
            if pending is not None:
                pending.result()
            pending = writer.submit(out.write, chunk)
        if pending is not None:
            pending.result()
    if path is None:
        sys.stdout.flush()
    return str(path) if path else "standard output"
