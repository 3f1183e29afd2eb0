"""A columnar copy of a run's bulky parts beside its database, so reading a big run takes a second, not ten.

The SQLite database stays the record; this cache is a derived copy that can be deleted at any time. For
each run it keeps, as Arrow IPC files under ``<db>-cache/<run id>/``:

- ``samples``: the samples frame (Store.samples_frame), its text columns as dictionaries;
- ``monitor``: the monitor frame (Store.monitor_frame);
- ``trials`` and ``checks``: their rows as the read model builds its objects from them (a trial's last columns
  sit past its raw output in the database's row: reading them walked 20 kB of fio JSON per trial);
- ``completions``: fio's completion histograms merged per cell and direction (read.Completion), written the
  first time a run is read with its latency (parsing every trial's raw output is the slow part).

Each file's name carries the run's fingerprint (store/cache format, schema version, a digest of the code
that builds the parts, its cells and trials counted, its last trial's id): trials are only ever added (a
resumed or extended run adds rows, none is changed or removed), so a changed fingerprint is a changed run,
and its files are rebuilt. A run still running is read from the database and never cached (it changes with
every trial). A directory that cannot be written (a read-only database) means no cache, never an error.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather

from layerbench.store.db import Store
from layerbench.store.schema import VERSION

FORMAT = 1  # this module's layout: a change to what the files hold bumps it, and old files are ignored
# The code that builds the parts: a cache written by other code (a change to a query, a parser) is not read.
BUILDERS = ("store/db.py", "store/read.py", "store/columns.py", "store/cache.py", "workloads/fio.py")


@functools.cache
def _code_digest() -> str:
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for name in BUILDERS:
        digest.update((package / name).read_bytes())
    return digest.hexdigest()[:12]


def directory(store: Store) -> Path:
    return store.path.with_name(store.path.name + "-cache")


def fingerprint(store: Store, run_id: str) -> str | None:
    """The run's state as a file-name part; None for a run still running (not cached)."""
    status = store.conn.execute("SELECT status, started_at FROM runs WHERE id=?", (run_id,)).fetchone()
    if status is None or status[0] == "running":
        return None
    cells = store.conn.execute("SELECT count(*) FROM cells WHERE run_id=?", (run_id,)).fetchone()[0]
    trials, last = store.conn.execute("SELECT count(*), max(id) FROM trials WHERE run_id=?", (run_id,)).fetchone()
    return f"f{FORMAT}-v{VERSION}-{_code_digest()}-{status[1]!r}-c{cells}-t{trials}-{last or 0}"


def frame(store: Store, run_id: str, part: str, build: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """The run's ``part`` from the cache when it is current, else ``build()`` (written to the cache after).

    The fingerprint is read before the data: a trial committed in between makes the next fingerprint
    differ from the one the file is named by, so a file never claims fewer trials than it holds."""
    key = fingerprint(store, run_id)
    if key is None:
        return build()
    path = directory(store) / run_id / f"{part}-{key}.arrow"
    if path.exists():
        try:
            return feather.read_feather(path, memory_map=True)
        except (OSError, pa.ArrowException):
            pass  # damaged or half-written by an older layerbench: rebuilt below
    data = build()
    _write(path, data)
    return data


def rows(store: Store, run_id: str, part: str, build: Callable[[], list[tuple[Any, ...]]]) -> list[tuple[Any, ...]]:
    """Like ``frame``, for a table read as rows of Python values (ints, floats, texts, None as NULL reads)."""
    key = fingerprint(store, run_id)
    if key is None:
        return build()
    path = directory(store) / run_id / f"{part}-{key}.arrow"
    if path.exists():
        try:
            table = feather.read_table(path, memory_map=True)
            return list(zip(*(column.to_pylist() for column in table.columns), strict=True))
        except (OSError, pa.ArrowException):
            pass
    data = build()
    width = len(data[0]) if data else 0
    _write(path, pa.table({f"c{i}": [r[i] for r in data] for i in range(width)}))
    return data


def _write(path: Path, data: pd.DataFrame | pa.Table) -> None:
    """Written under a temporary name and renamed, so a reader sees a whole file or none; stale parts of
    the run removed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.name.split("-", 1)[0]
        for old in path.parent.glob(f"{part}-*.arrow"):
            old.unlink(missing_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        feather.write_feather(data, tmp, compression="uncompressed")
        os.replace(tmp, path)
    except OSError:
        return  # no cache where the database's directory is read-only or full: the database answers
