"""The last few finished runs' views and figures, kept in memory between requests.

Reading a big run's view back from its cache is most of its page's time (0.75 s of 1.4 s for a run of a
million samples): a server asked for the same runs again and again keeps the last KEPT of them. A finished
run never changes unless it is resumed, which changes its status and its end: both are in the key. A run still
running is never kept. A kept view holds no open store: its parts read from the store when first used
(store/cache.py's ``Deferred``) are read while the store is open, before it is kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from layerbench.records.run import RunRow
from layerbench.report.html import Drawn
from layerbench.report.view import RunView

KEPT = 4  # runs: a million-sample run's view holds a few hundred MB (its samples and monitor frames)
Key = tuple[str, str, float | None]


@dataclass
class Kept:
    view: RunView
    figures: list[Drawn] | None = None


class Views:
    def __init__(self, size: int = KEPT) -> None:
        self.size = size
        self.kept: OrderedDict[Key, Kept] = OrderedDict()

    def view(self, run: RunRow, build: Callable[[], RunView]) -> RunView:
        found = self._found(run)
        if found is not None:
            return found.view
        v = build()
        key = key_of(run)
        if key is not None:
            whole(v)
            self.kept[key] = Kept(v)
            while len(self.kept) > self.size:
                self.kept.popitem(last=False)
        return v

    def figures(self, run: RunRow, build: Callable[[], list[Drawn]]) -> list[Drawn]:
        found = self._found(run)
        if found is not None and found.figures is not None:
            return found.figures
        made = build()
        if found is not None:
            found.figures = made
        return made

    def _found(self, run: RunRow) -> Kept | None:
        key = key_of(run)
        if key is None or key not in self.kept:
            return None
        self.kept.move_to_end(key)
        return self.kept[key]


def key_of(run: RunRow) -> Key | None:
    return None if run.status == "running" else (run.id, run.status, run.finished_at)


def whole(v: RunView) -> None:
    """Every part of the view that would be read from the store when first used, read now."""
    for part in (v.data.cells, v.data.trials, v.data.checks, v.data.timelines):
        len(part)
