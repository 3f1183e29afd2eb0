"""Where the server reads runs: the one place that opens the store named by ``serve --db``.

A request opens the store, reads, and closes it, in the thread that serves it: SQLite's connections belong to
the thread that made them, and a request's store sees every run committed before it began. A PostgreSQL
store's connections come from a pool opened at start (psycopg_pool): each read sees the runs committed before
it, and a page does not pay for a connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from layerbench.store.db import Store
from layerbench.store.open import is_url, open_store

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool


@dataclass
class Source:
    """The store the server reads, named as ``--db`` named it."""

    ref: str
    pool: ConnectionPool | None = field(default=None, repr=False)

    @contextmanager
    def opened(self) -> Iterator[Store]:
        if self.pool is not None:
            from layerbench.store import pg

            with self.pool.connection() as conn:  # back to the pool after, never closed by the store
                yield pg.store_on(conn, self.ref)
            return
        store = open_store(self.ref, create=False)
        try:
            yield store
        finally:
            store.close()

    def check(self) -> None:
        """Open it once before serving: a missing or newer store, or a wrong password, is refused at start,
        not at the first page; a PostgreSQL store's pool is opened then."""
        with self.opened():
            pass
        if is_url(self.ref) and self.pool is None:
            from layerbench.store import pg

            self.pool = pg.pool(self.ref)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def shown(self) -> str:
        """The store as the start line names it: a URL without its password."""
        if is_url(self.ref):
            from layerbench.store import pg

            return pg.location(self.ref)
        return self.ref
