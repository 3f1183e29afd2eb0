"""The pages and their JSON: each a GET whose HTML and JSON come from the same read.

``/`` and ``/api/runs``: the runs; ``/runs/<id>`` and ``/api/runs/<id>``: one run, as `report --html` and
`show --json` give it; ``/compare`` and ``/api/compare``: two runs, as `compare` and `compare --json`;
``/history`` and ``/api/history``: one comparison across runs (serve/history.py).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from layerbench.report import html, json_text
from layerbench.report.terminal import comparison_json, plain, show_json
from layerbench.report.view import Gate, RunComparison, RunView, comparison, gated
from layerbench.serve import history as hist
from layerbench.serve.query import RUNS_PARAMS, BadRequest, host_of, page, params, run_filter
from layerbench.serve.runs import Listing, listing, listing_json, matching
from layerbench.serve.site import Site, known_run
from layerbench.serve.trend import trend
from layerbench.store.db import Store
from layerbench.store.read import RunSamples, load_samples

COMPARE_PARAMS = ("a", "b", "metric")
METRIC = re.compile(r"^[A-Za-z0-9_.:%-]{1,64}$")
COMPARE_CHOICES = 200  # the run page's "compare with" list: the newest runs, this run's experiment first
HISTORY_LINKS = 200  # the run page's links to its comparisons' histories
HISTORY_RUNS = 100  # a history reads at most the newest this many runs that have its pair


def json_body(value: Any) -> str:
    """As the CLI prints it (json_text), NaN as null so strict parsers read it."""
    return json_text.dumps(plain(value))


def json_response(value: Any) -> Response:
    return Response(json_body(value), media_type="application/json")


class Pages:
    def __init__(self, site: Site) -> None:
        self.site = site

    # -- the runs -------------------------------------------------------------

    def _listing(self, request: Request) -> tuple[Listing, Any]:
        given = params(request.query_params.multi_items(), RUNS_PARAMS)
        f, pg = run_filter(given), page(given)
        with self.site.store() as store:
            return listing(store, f, pg), f

    def runs(self, request: Request) -> Response:
        found, f = self._listing(request)
        return HTMLResponse(self.site.render("runs.html.j2", listing=found, filters=f.as_json()))

    def runs_api(self, request: Request) -> Response:
        found, f = self._listing(request)
        return json_response(listing_json(found, f))

    # -- one run --------------------------------------------------------------

    def run(self, request: Request) -> Response:
        params(request.query_params.multi_items(), ())
        with self.site.run_store() as store:
            run = known_run(store, request.path_params["run_id"])
            runs = store.runs()
            others = [r for r in runs if r.id != run.id and r.name == run.name]
            others = (others + [r for r in runs if r.id != run.id and r.name != run.name])[:COMPARE_CHOICES]

            def page() -> str:
                v = self.site.view(store, run)
                extra = {"others": others, "histories": _history_links(v, HISTORY_LINKS)}
                template = self.site.env.get_template("run.html.j2")
                return html.page(v, self.site.figures(store, run), html.FIGURE_WORKLOADS, template, extra)

            shown = ("page", tuple((r.id, r.name, host_of(r)) for r in others))
            return HTMLResponse(self.site.texts.text(run, shown, page))

    def run_api(self, request: Request) -> Response:
        params(request.query_params.multi_items(), ())
        with self.site.run_store() as store:
            run = known_run(store, request.path_params["run_id"])
            text = self.site.texts.text(
                run, "json", lambda: json_body(show_json(self.site.view(store, run, latency=True)))
            )
            return Response(text, media_type="application/json")

    # -- two runs -------------------------------------------------------------

    def _compared(self, request: Request, store: Store) -> tuple[RunComparison, RunSamples, RunSamples]:
        given = params(request.query_params.multi_items(), COMPARE_PARAMS)
        missing = [n for n in ("a", "b") if n not in given]
        if missing:
            raise BadRequest(f"missing {' and '.join(missing)}: compare takes two run ids, a (the reference) and b")
        metric = given.get("metric")
        if metric is not None and not METRIC.match(metric):
            raise BadRequest(f"metric {metric!r} is not a metric's name (e.g. iops, bw, clat_p99, lat_mean)")
        a, b = known_run(store, given["a"], "a"), known_run(store, given["b"], "b")
        sa, sb = load_samples(store, a.id), load_samples(store, b.id)
        return comparison(sa, sb, metric), sa, sb

    def compare(self, request: Request) -> Response:
        with self.site.run_store() as store:
            c, sa, sb = self._compared(request, store)
            cells = {x.cell_id: x for x in sa.cells}
            links = {
                r.cell_id: hist.Pair(cells[r.cell_id].stack_label, cells[base].stack_label, cells[r.cell_id].workload)
                for r in c.cells
                if (base := cells[r.cell_id].baseline_cell_id) and base in cells and base != r.cell_id
            }
            return HTMLResponse(self.site.render("compare.html.j2", c=c, a=sa.run, b=sb.run, links=links))

    def compare_api(self, request: Request) -> Response:
        with self.site.run_store() as store:
            c, _, _ = self._compared(request, store)
            out = comparison_json(c)
        out["regressions"] = [{"cell_id": x.comparison.cell_id, "why": x.why} for x in gated(c, Gate(None, None))]
        return json_response(out)

    # -- one comparison across runs -------------------------------------------

    def _history(self, request: Request) -> tuple[hist.Pair, Any, list[hist.Point], int]:
        given = params(request.query_params.multi_items(), hist.HISTORY_PARAMS)
        pair, f = hist.pair_and_filter(given)
        with self.site.run_store() as store:
            runs = hist.runs_with(store, pair, matching(store, f))
            kept = runs[-HISTORY_RUNS:]
            points = hist.history(pair, kept, lambda run: self.site.view(store, run))  # plain values: no store after
        return pair, f, points, len(runs) - len(kept)

    def history(self, request: Request) -> Response:
        pair, f, points, left = self._history(request)
        return HTMLResponse(
            self.site.render(
                "history.html.j2", pair=pair, filters=f.as_json(), points=points, trend=trend(points),
                left_out=left, sources=hist.SOURCES,
            )
        )  # fmt: skip

    def history_api(self, request: Request) -> Response:
        pair, f, points, _ = self._history(request)
        return json_response(hist.history_json(pair, f, points))


def _history_links(v: RunView, most: int) -> list[hist.Pair]:
    """The run's first ``most`` comparisons, each a history: its findings, then each cell against the run's
    baseline (a big run has thousands: the rest are never built)."""
    pairs = dict.fromkeys(itertools.islice((hist.Pair(f.subject, f.reference, f.workload) for f in v.findings), most))
    if len(pairs) < most:
        labels = {c.cell_id: c.stack_label for c in v.data.cells}
        baseline = {c.cell_id: c.baseline_cell_id for c in v.data.cells}
        for r in v.results:
            b = baseline.get(r.cell_id)
            if not r.is_baseline and b in labels and len(pairs) < most:
                pairs[hist.Pair(r.stack_label, labels[b], r.workload)] = None
    return list(pairs)
