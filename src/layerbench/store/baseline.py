"""Baselines: one run kept in a file of its own, to gate later runs against (`baseline save`, `check`).

A baseline is a results database holding just that run (its cells, trials with their raw output, samples
and checks; not the monitor's series or CPU profiles, which no comparison reads), in SQLite's rollback
journal mode so that it is one self-contained file: it can be committed to a repository, kept as a CI
artifact or copied to another host. It is read through a private copy, so checking never rewrites it
(opening a database in WAL mode would) and a read-only checkout is enough.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from layerbench.errors import StoreError
from layerbench.store.db import Store

SUFFIX = ".lbbaseline"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# What a baseline keeps, in an order foreign keys accept: (table, the condition that picks the run's rows).
TABLES = (
    ("runs", "id = :run"),
    ("cells", "run_id = :run"),
    ("refused", "run_id = :run"),
    ("trials", "run_id = :run"),
    ("samples", "trial_id IN (SELECT id FROM src.trials WHERE run_id = :run)"),
    ("checks", "trial_id IN (SELECT id FROM src.trials WHERE run_id = :run)"),
)


def default_dir() -> Path:
    """$XDG_DATA_HOME/layerbench/baselines, or ~/.local/share/layerbench/baselines."""
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "layerbench" / "baselines"


def path_of(ref: str, directory: Path) -> Path:
    """A baseline's file: ``ref`` itself when it names an existing file, else ``directory/ref.lbbaseline``."""
    given = Path(ref)
    if given.is_file():
        return given
    if not NAME.match(ref):
        raise StoreError(f"no baseline file {ref}", hint="name a baseline saved with `layerbench baseline save`")
    found = directory / f"{ref}{SUFFIX}"
    if not found.is_file():
        known = ", ".join(names(directory)) or "none"
        raise StoreError(
            f"no baseline {ref!r} in {directory} (saved there: {known})",
            hint="save one with `layerbench baseline save NAME RUN`, or pass the baseline's file or --baselines DIR",
        )
    return found


def names(directory: Path) -> list[str]:
    return sorted(p.name.removesuffix(SUFFIX) for p in directory.glob(f"*{SUFFIX}")) if directory.is_dir() else []


def save(store: Store, run_ref: str, name: str, directory: Path, force: bool = False) -> tuple[Path, str]:
    """Write run ``run_ref`` of ``store`` as baseline ``name``; its file and the run's id."""
    if not NAME.match(name):
        raise StoreError(f"baseline name {name!r}: use letters, digits, '.', '_' and '-' (at most 100)")
    if store.path is None:  # the copy below attaches the SQLite file
        raise StoreError(
            f"a baseline is saved from a run in a local SQLite file, not from {store.location}",
            hint="save it on the host that ran it (--db FILE), before or after publishing it",
        )
    run_id = store.resolve_run(run_ref)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{name}{SUFFIX}"
    if target.exists() and not force:
        raise StoreError(f"baseline {name!r} exists ({target})", hint="pass --force to replace it, or another NAME")
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=SUFFIX, dir=directory)
    os.close(fd)
    os.unlink(tmp)  # Store.open creates the schema in a file of its own
    try:
        Store.open(Path(tmp)).close()
        with closing(sqlite3.connect(tmp)) as conn:
            conn.execute("ATTACH DATABASE ? AS src", (str(store.path),))
            with conn:
                for table, where in TABLES:
                    conn.execute(f"INSERT INTO main.{table} SELECT * FROM src.{table} WHERE {where}", {"run": run_id})
            conn.execute("DETACH DATABASE src")
            conn.execute("PRAGMA journal_mode=DELETE")  # one file: no -wal or -shm beside it
            conn.execute("VACUUM")
        os.replace(tmp, target)
    finally:
        for leftover in (tmp, f"{tmp}-wal", f"{tmp}-shm"):
            Path(leftover).unlink(missing_ok=True)
    return target, run_id


@contextmanager
def opened(path: Path) -> Iterator[Store]:
    """The baseline at ``path`` as a Store, through a private copy (the file itself is never written)."""
    with tempfile.TemporaryDirectory(prefix="layerbench-baseline-") as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        store = Store.open(copy, create=False)
        try:
            if len(store.runs()) != 1:
                raise StoreError(f"{path} holds {len(store.runs())} runs, not one: it is not a saved baseline")
            yield store
        finally:
            store.close()
