"""What every page shares: the store's source, the templates, and the one lock under which a run is read.

A page that reads a run is built whole while its store is open and under ``reading``, one at a time: a view
read back from the run's cache reads its cells and trials from the store when first used (store/cache.py's
``Deferred``), matplotlib's pyplot and the cache's files (one temporary name per process) are not for two
threads at once, and a second reader of the same run then finds the first one's cache. The runs list reads
no run and takes no lock.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

import jinja2

from layerbench.analysis.stats import Ratio
from layerbench.analysis.verdicts import MARKS, bounds_text
from layerbench.errors import StoreError
from layerbench.records.run import RunRow
from layerbench.report import html, prepared
from layerbench.report.view import RunView, cached_view
from layerbench.serve.kept import Texts
from layerbench.serve.query import NotFound, run_id
from layerbench.serve.source import Source
from layerbench.store.db import Store

# Every template a page renders, those it extends and includes too (compiled when first rendered, else).
TEMPLATES = ("runs.html.j2", "run.html.j2", "compare.html.j2", "history.html.j2", "error.html.j2", "base.html.j2",
             "report.html.j2", "nav.html.j2", "nav.css.j2", "trend.svg.j2")  # fmt: skip


class Site:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.env = jinja2.Environment(
            loader=jinja2.ChoiceLoader([jinja2.PackageLoader("layerbench.serve", "templates"), html.TEMPLATES]),
            autoescape=jinja2.select_autoescape(["html", "j2", "svg"]),
        )
        self.env.globals.update(url=url, marks=MARKS)
        self.env.filters["utc"] = utc
        self.env.filters["bounds"] = interval  # the verdict follows from the printed bounds, as in the report
        self.reading = threading.RLock()  # re-entered: a page holds it while view() and figures() take it
        self.texts = Texts()
        for name in TEMPLATES:  # compiled now: 0.13 s of the first page otherwise
            self.env.get_template(name)

    @contextmanager
    def store(self) -> Iterator[Store]:
        with self.source.opened() as store:
            yield store

    @contextmanager
    def run_store(self) -> Iterator[Store]:
        """The store, for a page that reads runs: everything it renders is rendered inside, under the lock."""
        with self.held(), self.source.opened() as store:
            yield store

    @contextmanager
    def held(self) -> Iterator[None]:
        with self.reading:
            yield

    def view(self, store: Store, run: RunRow, latency: bool = False) -> RunView:
        """The run as its page shows it: a profiled run's with its profiles (and latency, as `report` reads it);
        another's without fio's latency histograms and logs, which only its figures draw (read from the cache)
        and `show --json` prints (``latency``). Each is a part a finished run's end prepares."""
        profiled = run.spec.get("profile") == "cpu"
        with self.held():
            return cached_view(store, run.id, latency=latency or profiled, profiles=profiled)

    def figures(self, store: Store, run: RunRow) -> list[html.Drawn]:
        """The report's figures, from the run's cache; drawn (and kept there) from the whole view where missing."""
        with self.held():
            kept = prepared.kept_figures(store, run.id, html.FIGURE_WORKLOADS)
            if kept is not None:
                return kept
            whole = cached_view(store, run.id, latency=True, profiles=True)
            return prepared.figures(store, whole, html.FIGURE_WORKLOADS)

    def render(self, name: str, **context: Any) -> str:
        return self.env.get_template(name).render(**context)


def known_run(store: Store, text: str, name: str = "run id") -> RunRow:
    """The run of that id (exactly: a page's link stays the same run), or NotFound."""
    try:
        return store.run(run_id(text, name))
    except StoreError:
        raise NotFound(f"no run {text!r} in this store: the runs page lists them") from None


def url(path: str, given: Mapping[str, object] | None = None, **more: object) -> str:
    """``path`` with the parameters ``given`` and ``more`` (those set) as its query string."""
    query = urlencode({k: v for k, v in {**(given or {}), **more}.items() if v is not None and v != ""})
    return f"{path}?{query}" if query else path


def interval(r: Ratio) -> str:
    """``0.912–0.998``: three decimals, more where fewer would move a bound across ×1 or the band's edges."""
    return bounds_text(r.ci_low, r.ci_high, least=3, sep="–")


def utc(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M")
