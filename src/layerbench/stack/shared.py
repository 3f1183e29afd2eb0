"""What several held stacks use at once: made by the first, removed when the last is done.

Held stacks (stack/pool.py) live side by side. Those on the same device and
filesystem share them, and the engine when it is the same too (stack/build.py);
engines on one Docker host, swarm node or Kubernetes node need the same tools
image. Were the first user to remove what it made when it closes, the stacks
still held there would lose it. So each is counted: it goes with its last user,
whichever order the stacks are released in, or torn down side by side at the
run's end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass
class _Entry:
    exits: ExitStack
    value: Any
    users: int = 0


class Shared:
    """Resources by key, each with a count of its users."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # torn down from several threads; an engine made here may load an image
        self._entries: dict[Hashable, _Entry] = {}
        self._claims: dict[Hashable, int] = {}  # bytes stacks will write on a shared filesystem, not yet written

    @contextmanager
    def use(self, key: Hashable, make: Callable[[ExitStack], Any]) -> Iterator[Any]:
        """The resource at ``key``: made by ``make`` (entering what must be undone on the ExitStack given)
        unless a user holds it now; undone when the last user leaves."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = _Entry(ExitStack(), None)
                try:
                    entry.value = make(entry.exits)
                except BaseException:
                    entry.exits.close()
                    raise
                self._entries[key] = entry
            entry.users += 1
        try:
            yield entry.value
        finally:
            with self._lock:
                entry.users -= 1
                last = entry.users == 0
                if last and self._entries.get(key) is entry:
                    del self._entries[key]
            # Undone outside the lock, so held stacks' separate layers are torn down side by side. Only the
            # run's own thread makes resources, never while the pool tears down: a key is not made again
            # while its old resource is being undone.
            if last:
                entry.exits.close()

    def value(self, key: Hashable) -> Any:
        """The resource at ``key`` while someone uses it, else None."""
        with self._lock:
            entry = self._entries.get(key)
            return None if entry is None else entry.value

    def forget(self, key: Hashable, value: Any) -> None:
        """A broken resource (a daemon that died): the next user makes a new one; this one is undone when
        its last user leaves. Only if ``value`` is still the resource at ``key``: a user that finds its
        broken one late must not make the others drop the new one already made."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.value is value:
                del self._entries[key]

    def claim(self, key: Hashable, size: int) -> None:
        """``size`` bytes a stack placed on the filesystem at ``key`` will write there (its load, its files):
        room for the next stack is what is free less what is claimed (run/loop.py's preload builds the next stack
        while the last one's load is still writing)."""
        with self._lock:
            self._claims[key] = self._claims.get(key, 0) + size

    def release(self, key: Hashable, size: int) -> None:
        """A claim written (or given up)."""
        with self._lock:
            left = self._claims.get(key, 0) - size
            if left > 0:
                self._claims[key] = left
            else:
                self._claims.pop(key, None)

    def claimed(self, key: Hashable) -> int:
        with self._lock:
            return self._claims.get(key, 0)

    def claims(self) -> dict[Hashable, int]:
        with self._lock:
            return dict(self._claims)

    def keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._entries)
