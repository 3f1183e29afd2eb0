"""What several held stacks use at once: made by the first, removed when the last is done.

Held stacks (stack/pool.py) live side by side, each with an engine of its own; on
one Docker host, swarm node or Kubernetes node they need the same tools image.
The first engine to ask loads it; were it also to remove it when it closes, the
stacks still held there would lose their image (a later container of theirs
would not start). So an image is counted: it goes with its last user, whichever
order the stacks are released in, or torn down side by side at the run's end.
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
        self._lock = threading.Lock()  # held stacks are torn down from several threads
        self._entries: dict[Hashable, _Entry] = {}

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
            # Undone under the lock: a new user must not load it again while it is being removed.
            with self._lock:
                entry.users -= 1
                if entry.users == 0:
                    del self._entries[key]
                    entry.exits.close()

    def keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._entries)
