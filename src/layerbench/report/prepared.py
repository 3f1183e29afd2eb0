"""What reading a run costs, paid once: the cached parts `show`, `report`, `export` and `compare` read, and
building them all at the end of a big run, so that its first reader waits no longer than the next.

A run of a million samples takes about 15 s for its first `show`, 20-35 s for `show --json` and 21-27 s for
`report --html` (bench/scale.py, 2026-11-28; `show --json` took 94 s on the same run while every trial's fio
output was parsed for its histograms, before trials kept them), then one to two seconds each once the
run's cache (store/cache.py) holds what they computed. A run that long took hours to measure: its end
builds them (64-128 s). A small run's first read is already quick, and its end stays as it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pandas as pd

from layerbench.report.export import cell_config
from layerbench.report.exporters import EXPORTERS
from layerbench.report.view import RunView, cached_view
from layerbench.store import cache
from layerbench.store.db import Store
from layerbench.store.read import run_parts

# A first read costs 20-35 s per million samples more than a cached one (`show --json` and `report`, the
# slowest, by bench/scale.py; 45-94 s before trials kept their histograms): from 20,000 samples, under a second
# more. Such a run took an hour or more; preparing it, seconds.
AHEAD_FROM_SAMPLES = 20_000


def figures(store: Store, v: RunView, workloads: int | None) -> list[Any]:
    """The report's figures for its first ``workloads`` workloads (None: all), drawn once per run, code and
    count: matplotlib's 6 s for a big run's three figures."""
    from layerbench.report import html as html_report  # matplotlib only where something is drawn

    part = _figures_part(workloads)
    return cache.computed(store, v.data.run.id, part, lambda _: html_report.drawn(v, workloads), {})


def kept_figures(store: Store, run_id: str, workloads: int | None) -> list[Any] | None:
    """The figures ``figures`` keeps of the run, read without a view of it; None where none are current."""
    found = cache.kept(store, run_id, _figures_part(workloads))
    return None if found is None else list(found)


def _figures_part(workloads: int | None) -> str:
    return f"figures{workloads or 'all'}"


def export_parts(store: Store, run_id: str, fmt: str) -> tuple[pd.DataFrame, Any, Any]:
    """The samples, the cells' configuration as columns, and the file ``fmt``'s exporter keeps (the run's CSV
    parts, its Parquet file; None for a format the cache keeps none of): validating and flattening 10,500
    cells was a second, formatting a million rows most of an export."""
    parts = run_parts(store, run_id)
    samples = parts["samples"]()
    config = cache.computed(store, run_id, "config", lambda _: cell_config(parts["cells"]()), {})
    kept = EXPORTERS[fmt].kept
    made = cache.computed(store, run_id, fmt, lambda _: kept.build(samples, config), {}) if kept else None
    return samples, config, made


def _default_figures() -> int:
    from layerbench.report.html import FIGURE_WORKLOADS  # `report --figures`' default too

    return FIGURE_WORKLOADS


def worth_preparing(store: Store, run_id: str) -> bool:
    return store.sample_count(run_id) >= AHEAD_FROM_SAMPLES


def ahead(store: Store, run_id: str, on_part: Callable[[str], None] = lambda _: None) -> list[tuple[str, float]]:
    """Every part a first read of the finished run ``run_id`` would build, built now; each part's seconds.
    ``on_part`` hears each part's name before it is built (the run's progress line)."""
    steps: list[tuple[str, Callable[[], object]]] = [
        ("show", lambda: cached_view(store, run_id)),
        ("show --json", lambda: cached_view(store, run_id, latency=True)),
        ("report", lambda: figures(store, cached_view(store, run_id, True, True), _default_figures())),
        ("export", lambda: [export_parts(store, run_id, name) for name, e in EXPORTERS.items() if e.kept]),
    ]
    took = []
    for name, build in steps:
        on_part(name)
        start = time.perf_counter()
        build()
        took.append((name, time.perf_counter() - start))
    return took
