"""Which store a ``--db`` names: a ``postgresql://`` URL is a shared PostgreSQL database (store/pg.py),
anything else an SQLite file (Store.open)."""

from __future__ import annotations

from pathlib import Path

from layerbench.store.db import Store

SCHEMES = ("postgresql://", "postgres://")


def is_url(ref: str | Path) -> bool:
    return isinstance(ref, str) and ref.startswith(SCHEMES)


def open_store(ref: str | Path, create: bool = True, writes: bool = False) -> Store:
    """The store ``ref`` names; ``create`` makes it (its schema) if missing; ``writes``: the caller will write
    (an SQLite file goes to WAL mode, as Store.open says)."""
    if is_url(ref):
        from layerbench.store import pg  # psycopg is loaded only by who uses PostgreSQL

        return pg.open_store(str(ref), create=create)
    return Store.open(Path(ref), create=create, writes=writes)
