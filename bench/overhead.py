"""How much of a run's wall time does layerbench spend on itself?

Runs presets (`quick` and `db-quick` unless told) through the CLI, each into a
database of its own, then reads from the store what each trial's span was
(`started_at` to `ended_at`: the workload starting, running, being parsed and
checked) and splits the rest of the wall time: before the first trial (host
probe, device, filesystem, daemon, image, preconditioning of the first
stack), between trials on the same stack, between trials where the stack
changed (teardown of one, build and preconditioning of the next), and after
the last (teardown, the summary). Attempts measured again because the host
was busy are measuring, not set-up: counted apart, and not as outside. Last line `share=<outside / wall, over all
presets run>`; the goal is at most 0.05 (issue 17).

Usage (as root, nothing else running): .venv/bin/python bench/overhead.py [PRESET ...]
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from layerbench.store.db import Store

# Attempts measured again because the host was busy (trials.again_if_contended): measuring, not set-up.
AGAIN = "measured again (host busy)"
# A preset's run is minutes (quick: about 6); past two hours something hangs.
PRESET_TIMEOUT_S = 7200


def run_preset(preset: str, db: Path) -> float:
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "layerbench.cli", "run", preset, "--db", str(db)], check=False, timeout=PRESET_TIMEOUT_S
    )
    if done.returncode not in (0, 1):  # 1: finished, some trials failed (they are in the store, and counted)
        raise SystemExit(f"layerbench run {preset} exited with {done.returncode}")
    return time.monotonic() - t0


def split(db: Path, wall: float) -> dict[str, float]:
    store = Store.open(db, create=False)
    run = store.runs()[-1]
    trials = sorted(store.trials(run.id), key=lambda t: t.started_at)
    stacks = {c.cell_id: c.stack_label for c in store.cells(run.id)}
    infos = dict(store.conn.execute("SELECT id, info_json FROM trials WHERE run_id=?", (run.id,)).fetchall())
    again = {t.id: sum(d["ended_at"] - d["started_at"] for d in json.loads(infos[t.id]).get("disturbed", []))
             for t in trials}  # fmt: skip
    parts = {"inside trials": sum(t.ended_at - t.started_at for t in trials)}
    parts[AGAIN] = sum(again.values())  # just before the attempt that stands: out of the gap before it
    parts["before the first trial"] = trials[0].started_at - run.started_at - again[trials[0].id]
    parts["between trials, same stack"] = parts["between trials, stack changed"] = 0.0
    for a, b in itertools.pairwise(trials):
        key = "same stack" if stacks[a.cell_id] == stacks[b.cell_id] else "stack changed"
        parts[f"between trials, {key}"] += b.started_at - a.ended_at - again[b.id]
    parts["after the last trial"] = (run.finished_at or trials[-1].ended_at) - trials[-1].ended_at
    parts["outside the run record (CLI start, exit)"] = wall - ((run.finished_at or 0) - run.started_at)
    return parts


def main(presets: list[str]) -> None:
    wall_total = outside_total = 0.0
    with tempfile.TemporaryDirectory(prefix="lb-overhead-") as tmp:
        for preset in presets:
            db = Path(tmp) / f"{preset}.db"
            wall = run_preset(preset, db)
            parts = split(db, wall)
            outside = wall - parts["inside trials"] - parts[AGAIN]
            print(f"{preset}: {wall:.0f} s wall, {outside:.0f} s outside trials ({outside / wall:.1%})")
            for name, seconds in parts.items():
                print(f"  {name:<42} {seconds:7.1f} s  {seconds / wall:6.1%}")
            wall_total, outside_total = wall_total + wall, outside_total + outside
    print(f"share={outside_total / wall_total:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["quick", "db-quick"])
