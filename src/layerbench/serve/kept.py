"""The last few finished runs' pages and JSON, kept in memory between requests.

Reading a big run's view back from its cache and rendering it is all of its page's time (1.4 s for a run of a
million samples: 0.75 s reading, 0.45 s rendering 5 MB of HTML): a server asked for the same runs again and
again keeps the last KEPT texts it sent. A finished run never changes unless it is resumed, which changes its
status and its end: both are in the key. A run still running is never kept. What else a text shows (the run
page's list of runs to compare with) is in its key too.

The texts are kept, not the views: a view read back from the cache reads its trials, checks and latency logs
from the store when first used, and reading them all to keep it (fio's logs of 84,000 trials) took 27 s.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

from layerbench.records.run import RunRow

KEPT = 8  # texts: a million-sample run's page is 5 MB, its JSON 20 MB
Key = tuple[str, str, float | None, Hashable]


class Texts:
    def __init__(self, size: int = KEPT) -> None:
        self.size = size
        self.kept: OrderedDict[Key, str] = OrderedDict()

    def text(self, run: RunRow, what: Hashable, build: Callable[[], str]) -> str:
        """``build()``'s text of ``run`` (``what``: which of its texts, and what else it shows), kept."""
        if run.status == "running":
            return build()
        key = (run.id, run.status, run.finished_at, what)
        if key in self.kept:
            self.kept.move_to_end(key)
            return self.kept[key]
        made = self.kept[key] = build()
        while len(self.kept) > self.size:
            self.kept.popitem(last=False)
        return made
