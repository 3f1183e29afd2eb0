"""The runs page's list: the store's runs filtered and cut into pages, and each run as JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from layerbench.records.run import RunRow
from layerbench.report.terminal import run_json
from layerbench.serve.query import Page, RunFilter, host_of
from layerbench.store.db import Store


@dataclass(frozen=True)
class Listing:
    runs: list[RunRow]  # this page's, newest first
    total: int  # runs matching the filter
    page: Page
    hosts: list[str]  # every host and preset in the store, for the filter's choices
    presets: list[str]

    @property
    def pages(self) -> int:
        return self.page.pages(self.total)


def matching(store: Store, f: RunFilter, every: list[RunRow] | None = None) -> list[RunRow]:
    """The runs of ``every`` (by default the store's) that match ``f``, newest first; a run's cells are read
    only for a layer filter, and only for the runs the other fields kept."""
    rows = [r for r in (store.runs() if every is None else every) if f.matches(r)]
    if f.layer is not None:
        layer = f.layer
        rows = [r for r in rows if any(layer in c.stack_label for c in store.cells(r.id))]
    return rows


def listing(store: Store, f: RunFilter, page: Page) -> Listing:
    every = store.runs()
    rows = matching(store, f, every)
    hosts = sorted({host_of(r) for r in every} - {""})
    presets = sorted({r.name for r in every})
    return Listing(rows[page.of(len(rows))], len(rows), page, hosts, presets)


def listing_json(found: Listing, f: RunFilter) -> dict[str, Any]:
    return {
        "runs": [run_json(r) for r in found.runs],
        "total": found.total,
        "page": found.page.number,
        "per_page": found.page.size,
        "pages": found.pages,
        "filters": f.as_json(),
    }
