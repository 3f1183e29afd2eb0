"""Where the server reads runs: the one place that opens the store named by ``serve --db``.

A request opens the store, reads, and closes it, in the thread that serves it: SQLite's connections belong to
the thread that made them, and a request's store sees every run committed before it began.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from layerbench.store.db import Store


def open_store(ref: str) -> Store:
    """The store ``ref`` names (``--db``), for reading: it must exist."""
    return Store.open(Path(ref), create=False)


@dataclass(frozen=True)
class Source:
    """The store the server reads, named as ``--db`` named it."""

    ref: str

    @contextmanager
    def opened(self) -> Iterator[Store]:
        store = open_store(self.ref)
        try:
            yield store
        finally:
            store.close()

    def check(self) -> None:
        """Open it once before serving: a missing or newer store is refused at start, not at the first page."""
        with self.opened():
            pass
