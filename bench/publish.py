"""How long does `layerbench publish` take to copy a run of a million samples into PostgreSQL?

Builds bench/scale.py's run (10,500 cells by 8 trials, every trial what a real fio trial stores: about
1,000,000 samples, 84,000 raw outputs and latency logs) in an SQLite file, starts a private PostgreSQL server
(tests/pg_service.py: initdb in a temporary directory, a free loopback port, password authentication), and
times `layerbench publish` of the run into it, each a process of its own, against the time the same run
takes to copy into a local store of its own (`layerbench baseline save`: one SQLite file, ATTACH and
INSERT ... SELECT). Then publishes it again (stored once: the answer is "already there") and reads it back
with `show` from PostgreSQL, against `show` of the SQLite file, both with their caches cold. The server is
durable (fsync and synchronous commits on, PostgreSQL's defaults otherwise).

Goal (issue 54): a run of a million samples publishes in at most 10 s here. Prints one line per
measurement; the last are the ratios. Needs root (the server runs as nobody) and PostgreSQL's server.

Usage: .venv/bin/python bench/publish.py [--keep DIR] [--reuse]
  --keep DIR: write the SQLite file there and leave it; --reuse: with --keep, use the file already there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import scale  # noqa: E402 (bench/scale.py: the 1M-sample run)
from tests.pg_service import PgService  # noqa: E402

GOAL_S = 10.0


def timed(args: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "layerbench.cli", *args], capture_output=True, text=True, timeout=900, check=False
    )
    took = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"layerbench {' '.join(args[:2])} exited {done.returncode}: {done.stderr[-2000:]}")
    return took, done.stdout


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped, the server it started is stopped too
    keep = Path(sys.argv[sys.argv.index("--keep") + 1]) if "--keep" in sys.argv else None
    with tempfile.TemporaryDirectory() as scratch:
        folder = keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump(scale.SPEC)
        matrix, _ = scale.timed_expansion(text)
        db = folder / "publish.db"
        run_id = scale.stored_run(db, text, matrix, seed=1, reuse="--reuse" in sys.argv)
        print(f"local store: {db.stat().st_size / 2**20:.0f} MiB")
        shutil.rmtree(db.with_name(db.name + "-cache"), ignore_errors=True)  # its reads cold, as PostgreSQL's
        local, _ = timed(["baseline", "save", "bench", run_id, "--db", str(db), "--baselines", str(folder), "--force"])
        print(f"local copy (baseline save: the run into an SQLite file of its own): {local:.2f} s")
        shown_here, _ = timed(["show", run_id, "--db", str(db)])
        print(f"show from the SQLite file (cache cold): {shown_here:.2f} s")
        os.environ["XDG_CACHE_HOME"] = str(folder / "cache")  # the reader's cache of PostgreSQL's runs: ours
        shutil.rmtree(folder / "cache", ignore_errors=True)
        service = PgService.start(durable=True)
        try:
            url = service.database()
            seconds, out = timed(["publish", run_id, "--db", str(db), "--to", url, "--json"])
            answer = json.loads(out)
            print(
                f"publish: {seconds:.2f} s, {answer['samples']} samples, {answer['trials']} trials (goal <= {GOAL_S} s)"
            )
            again, out = timed(["publish", run_id, "--db", str(db), "--to", url, "--json"])
            print(f"publish again: {again:.2f} s, stored: {json.loads(out)['stored']}")
            shown, _ = timed(["show", run_id, "--db", url])
            print(f"show from PostgreSQL (cache cold): {shown:.2f} s")
        finally:
            service.stop()
        print(f"show from PostgreSQL / from SQLite (cache cold): {shown / shown_here:.2f}")
        print(f"publish / local copy: {seconds / local:.2f}; publish: {seconds:.2f} s (goal <= {GOAL_S} s)")


if __name__ == "__main__":
    main()
