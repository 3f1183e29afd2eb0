"""A columnar copy of a run's bulky parts beside its database, so reading a big run takes a second, not ten.

The SQLite database stays the record; this cache is a derived copy that can be deleted at any time. For
each run it keeps, as Arrow IPC files under ``<db>-cache/<run id>/``:

- ``samples``: the samples frame (Store.samples_frame), its text columns as dictionaries;
- ``monitor``: the monitor frame (Store.monitor_frame);
- ``trials`` and ``checks``: their rows as the read model builds its objects from them (a trial's last columns
  sit past its raw output in the database's row: reading them walked 20 kB of fio JSON per trial);
- ``completions``: fio's completion histograms merged per cell and direction (read.Completion), written the
  first time a run is read with its latency (parsing every trial's raw output is the slow part);
- ``*.pickle``: what is computed from the run (``computed``: `show`'s and the report's analysis of it, the
  report's figures), keyed by a digest of all of layerbench's code and of the libraries' versions as well.
  A pickle can run code when read, so each carries a keyed digest (HMAC) whose key is this user's alone
  (``key_file``): a file this user's layerbench did not write (a cache copied from elsewhere with its
  database) is never unpickled, only rebuilt.

Each file's name carries the run's fingerprint (store/cache format, schema version, a digest of the code
that builds the parts, its cells and trials counted, its last trial's id): trials are only ever added (a
resumed or extended run adds rows, none is changed or removed), so a changed fingerprint is a changed run,
and its files are rebuilt. A run still running is read from the database and never cached (it changes with
every trial). A directory that cannot be written (a read-only database) means no cache, never an error.
"""

from __future__ import annotations

import copyreg
import functools
import hashlib
import hmac
import io
import os
import pickle
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

import pyarrow as pa
import pyarrow.feather as feather
from hdrh.histogram import HdrHistogram

from layerbench.records import hdr
from layerbench.store.db import Store
from layerbench.store.schema import VERSION

if TYPE_CHECKING:  # a frame read back imports it (feather); a kept export is written without it
    import pandas as pd

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
    if store.cache_dir is None:
        raise ValueError(f"{store.location} keeps no cache")  # every Store has one: SQLite's beside it, else the user's
    return store.cache_dir


def fingerprint(store: Store, run_id: str) -> str | None:
    """The run's state as a file-name part; None for a run still running (not cached)."""
    state = store.run_state(run_id)
    if state is None or state[0] == "running":
        return None
    _, started_at, cells, trials, last = state
    return f"f{FORMAT}-v{VERSION}-{_code_digest()}-{started_at!r}-c{cells}-t{trials}-{last}"


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


T = TypeVar("T")
E = TypeVar("E")


@functools.cache
def _everything_digest() -> str:
    """All of layerbench's code and the versions of what it computes with: an analysis pickled by other code
    (or unpickled by other libraries) is never read."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(sys.version.encode())
    for name in ("numpy", "pandas", "pydantic", "pydantic_core", "matplotlib", "scipy", "pyarrow"):
        module = sys.modules.get(name)
        digest.update(f"{name}={getattr(module, '__version__', None) or _version(name)}".encode())
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name.replace("_", "-"))
    except PackageNotFoundError:
        return "-"


def key_file() -> Path:
    """This user's key for the pickles' digests: $XDG_CACHE_HOME/layerbench/cache-key, readable by its owner."""
    home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(home) / "layerbench" / "cache-key"


def _key() -> bytes | None:
    path = key_file()
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(os.urandom(32))
        os.replace(tmp, path)
        return path.read_bytes()
    except OSError:
        return None  # no key (a read-only home): nothing pickled, everything computed


class Deferred(Sequence[E]):
    """A tuple read when first used: a run's trials, checks and cells, which the analysis read back from the
    cache rarely needs again (unpickling their 430,000 objects was most of reading it)."""

    def __init__(self, read: Callable[[], Sequence[E]]) -> None:
        self._read: Callable[[], Sequence[E]] | None = read
        self._items: tuple[E, ...] = ()

    def _all(self) -> tuple[E, ...]:
        if self._read is not None:
            self._items, self._read = tuple(self._read()), None
        return self._items

    @overload
    def __getitem__(self, index: int) -> E: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[E, ...]: ...
    def __getitem__(self, index: int | slice) -> E | tuple[E, ...]:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Iterator[E]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and not isinstance(other, str) and self._all() == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._all())


def computed(
    store: Store,
    run_id: str,
    part: str,
    build: Callable[[dict[str, Any]], T],
    shared: dict[str, Callable[[], object]],
    deferred: frozenset[str] = frozenset(),
) -> T:
    """What ``build(objects)`` computes from the run, pickled beside its columnar parts and read back while the
    run and layerbench's code are unchanged. ``part`` names the computation and its options (no "-").
    ``shared``: large objects the cache keeps already (the samples frame), each read by a function; ``build``
    is given them as ``objects`` (by name), and its result holds them by name, not by value: read back, they
    come from those functions again, those named in ``deferred`` (sequences) when first used (``Deferred``)."""
    key = fingerprint(store, run_id)
    secret = _key() if key is not None else None
    if key is None or secret is None:
        return build({name: get() for name, get in shared.items()})
    path = _pickled(store, run_id, part, key)
    found = _unpickled(path, secret, shared, deferred)
    if found is not _NONE:
        return found  # type: ignore[return-value]
    objects = {name: get() for name, get in shared.items()}
    result = build(objects)
    try:
        out = io.BytesIO()
        # By identity: an empty tuple is one object Python shares with every other empty tuple, so it is pickled
        # by value (else each () in the result would come back as this part).
        names = {id(obj): name for name, obj in objects.items() if not (isinstance(obj, tuple) and not obj)}
        _Pickler(out, names).dump(result)
    except Exception:  # something in it does not pickle: computed each time
        return result
    body = out.getvalue()
    _write_bytes(path, hmac.digest(secret, body, "sha256") + body)
    return result


def kept(store: Store, run_id: str, part: str) -> Any:
    """What ``computed`` keeps of ``part`` (one built without shared objects), or None where it keeps
    nothing current: read without building, so a reader needs none of what building takes."""
    key = fingerprint(store, run_id)
    secret = _key() if key is not None else None
    if key is None or secret is None:
        return None
    found = _unpickled(_pickled(store, run_id, part, key), secret, {}, frozenset())
    return None if found is _NONE else found


_NONE = object()  # no current pickle (None may be what was computed)


def _pickled(store: Store, run_id: str, part: str, key: str) -> Path:
    return directory(store) / run_id / f"{part}-{key}-{_everything_digest()}.pickle"


def _unpickled(path: Path, secret: bytes, shared: dict[str, Callable[[], object]], deferred: frozenset[str]) -> object:
    """``path``'s object where this user's key signed it, else _NONE."""
    if not path.exists():
        return _NONE
    try:
        data = path.read_bytes()
        sign, body = data[:32], data[32:]
        if hmac.compare_digest(sign, hmac.digest(secret, body, "sha256")):
            return _Unpickler(io.BytesIO(body), shared, deferred).load()
    except Exception:  # any failure to read a derived copy: computed again
        pass
    return _NONE


def _histogram(h: HdrHistogram) -> tuple[Callable[[str], HdrHistogram], tuple[str]]:
    return hdr.decode, (hdr.encode(h),)  # its counts sit in ctypes arrays, which do not pickle: as stored


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, names: dict[int, str]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.names = names
        self.dispatch_table = copyreg.dispatch_table | {HdrHistogram: _histogram}

    def persistent_id(self, obj: object) -> str | None:
        return self.names.get(id(obj))


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, shared: dict[str, Callable[[], object]], deferred: frozenset[str]) -> None:
        super().__init__(file)
        self.shared = shared
        self.deferred = deferred
        self.loaded: dict[str, object] = {}

    def persistent_load(self, pid: object) -> object:
        name = str(pid)  # each reference to it is named again (persistent ids are not memoized): read once
        if name not in self.loaded:
            read = self.shared[name]
            self.loaded[name] = Deferred(read) if name in self.deferred else read()  # type: ignore[arg-type]
        return self.loaded[name]


def _write_bytes(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.name.split("-", 1)[0]
        for old in path.parent.glob(f"{part}-*.pickle"):
            old.unlink(missing_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        return
