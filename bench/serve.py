"""How fast does `layerbench serve` answer? One run's page for a run of a million samples, and the runs list
of a store of 1,000 runs.

1. Writes bench/scale.py's run of 1,008,000 samples (10,500 cells, 8 trials each, every trial what a real fio
   trial stores) and prepares it for reading as `layerbench run` does at the end of a run that big; then
   times, in this process, the server answering `/runs/<id>` (the report's page: its view and figures from
   the run's cache, rendered by the report's template) and `/api/runs/<id>` (`show --json`'s content): the
   first request after the server started (the view read back from the run's cache), and again (the view
   kept in the server's memory, serve/kept.py).
2. Writes a store of 1,000 runs (each the six cells of tests/data/serve/capture.yaml, the host a real run
   recorded, two host names in turn) and times `/` (the runs page, 50 a page), `/api/runs`, 500 a page, and
   the layer filter (which reads every run's cells).

"Server time" is a request's whole time through Starlette's TestClient in this process (the app, the
store's reads, the rendering, the response's bytes), without a network between. Goals (issue 54): the run's
page at most 1 s, the runs list of 1,000 runs at most 0.5 s. Each is measured REPEAT times; the median and
the worst are printed, the last lines the figures against their goals.

Usage: .venv/bin/python bench/serve.py [--keep DIR] [--reuse]   (CPU-heavy: under `flock /tmp/lb-bench.lock`)
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import scale  # noqa: E402  (bench/scale.py: the million-sample run, written as a real run's trials are)

from layerbench.run.loop import register_cells  # noqa: E402
from layerbench.serve.app import create_app  # noqa: E402
from layerbench.serve.source import Source  # noqa: E402
from layerbench.spec import load  # noqa: E402
from layerbench.spec.matrix import expand  # noqa: E402
from layerbench.store.db import Store  # noqa: E402

with warnings.catch_warnings():  # Starlette 1.10 asks for httpx2 beside httpx, which its TestClient still uses
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

CAPTURE = ROOT / "tests" / "data" / "serve" / "capture.yaml"
RECORDED = ROOT / "tests" / "data" / "serve" / "runs.db"
RUNS = 1000
REPEAT = 5
RUN_PAGE_GOAL_S, LIST_GOAL_S = 1.0, 0.5
LIST_REQUESTS = (
    ("/api/runs", "/api/runs (50 a page)"),
    ("/api/runs?per_page=500", "/api/runs, 500 a page"),
    ("/?layer=overlay2/volume", "runs page, layer filter (every run's cells read)"),
)


def timed(client: TestClient, path: str) -> tuple[float, int]:
    start = time.perf_counter()
    r = client.get(path)
    took = time.perf_counter() - start
    if r.status_code != 200:
        raise SystemExit(f"{path}: {r.status_code} {r.text[:500]}")
    return took, len(r.content)


def repeated(client: TestClient, path: str) -> tuple[float, float, int]:
    """Median and worst of REPEAT requests, and the response's size."""
    times, size = [], 0
    for _ in range(REPEAT):
        took, size = timed(client, path)
        times.append(took)
    return statistics.median(times), max(times), size


def big_run(where: Path, reuse: bool) -> tuple[Path, str]:
    db = where / "scale.db"
    text = yaml.safe_dump(scale.SPEC)
    matrix, _ = scale.timed_expansion(text)
    run_id = scale.stored_run(db, text, matrix, 7, reuse)
    # Always: a reused run's cache was written by the code of its day, and a cache is keyed by all of the code.
    wall, peak = scale.timed_prepare(db, run_id)
    print(f"prepared for reading as the run's end does: {wall:.1f} s, peak RSS {peak} MiB", flush=True)
    return db, run_id


def many_runs(db: Path) -> None:
    """RUNS runs of the capture spec's cells, as a team's store holds them (their trials are not read by the list)."""
    text = CAPTURE.read_text()
    spec_json = json.dumps(yaml.safe_load(text))
    matrix = expand(load.parse(text, "serve-capture"), scale.everything())
    recorded = Store.open(RECORDED, create=False)
    host = recorded.runs()[0].host
    recorded.close()
    store = Store.open(db)
    for i in range(RUNS):
        run_id = new_run(store, spec_json, host | {"hostname": ("vm", "lab-b")[i % 2]})
        register_cells(store, run_id, matrix)
        store.finish_run(run_id, "finished")
    store.close()


def new_run(store: Store, spec_json: str, host: dict[str, object]) -> str:
    """A run's id is its second and two random bytes: hundreds a second meet again, and take another."""
    while True:
        try:
            return store.new_run("serve-capture", spec_json, "bench", host)
        except sqlite3.IntegrityError:
            continue


def report(name: str, median: float, worst: float, size: int, goal: float | None = None) -> None:
    said = f" (goal <= {goal:g} s)" if goal else ""
    print(f"{name}: median {median:.3f} s, worst {worst:.3f} s of {REPEAT}, {size / 1024:,.0f} KiB{said}", flush=True)


def first_and_again(client: TestClient, path: str, name: str, goal: float) -> list[tuple[str, float, float]]:
    first, size = timed(client, path)
    print(f"{name} (first request): {first:.3f} s, {size / 1024:,.0f} KiB (goal <= {goal:g} s)", flush=True)
    median, worst, size = repeated(client, path)
    report(f"{name} (again)", median, worst, size, goal)
    return [(f"{name}, first", first, goal), (f"{name}, again (median)", median, goal)]


def main() -> None:
    keep = Path(sys.argv[sys.argv.index("--keep") + 1]) if "--keep" in sys.argv else None
    with tempfile.TemporaryDirectory() as scratch:
        where = keep or Path(scratch)
        where.mkdir(parents=True, exist_ok=True)
        figures: list[tuple[str, float, float]] = []
        listed = where / "runs1000.db"
        listed.unlink(missing_ok=True)
        start = time.perf_counter()
        many_runs(listed)
        print(f"store: {RUNS} runs written in {time.perf_counter() - start:.1f} s", flush=True)
        with TestClient(create_app(Source(str(listed)))) as client:
            figures += first_and_again(client, "/", "runs page of 1,000 runs (50 a page)", LIST_GOAL_S)
            for path, name in LIST_REQUESTS:
                median, worst, size = repeated(client, path)
                report(name, median, worst, size, LIST_GOAL_S)
                figures.append((name, median, LIST_GOAL_S))
        db, run_id = big_run(where, "--reuse" in sys.argv)
        with TestClient(create_app(Source(str(db)))) as client:
            figures += first_and_again(client, f"/runs/{run_id}", "run page, 1,008,000 samples", RUN_PAGE_GOAL_S)
            figures += first_and_again(client, f"/api/runs/{run_id}", "/api/runs/<id>, 1,008,000 samples", 2.0)
        print("| request | seconds | goal |")
        for name, seconds, goal in figures:
            print(f"| {name} | {seconds:.3f} | {'met' if seconds <= goal else 'MISSED'} (<= {goal:g} s) |")


if __name__ == "__main__":
    main()
