"""Does the first run tell the same story twice?

Runs a preset (`quick` unless told) twice through the CLI, each into a
database of its own, then compares their findings (analysis.findings: each
layer against the one beneath it, paired by round): a conclusion flips when
one run calls a layer significantly and materially slower and the other
faster; it changes when one run calls it slower or faster and the other the
same (a borderline effect). Also counts faster-than-physics flags, which an
honest cell should never raise. Prints both runs' findings and wall times;
last line `flipped=<n> changed=<n> physics=<n>`; the goal is 0 for each
(issue 17).

Usage (as root, nothing else running): .venv/bin/python bench/reproducibility.py [PRESET]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from layerbench.analysis import findings, overhead
from layerbench.store.db import Store
from layerbench.store.read import load


def one_run(preset: str, db: Path) -> tuple[dict[tuple[str, str], findings.Finding], int, float]:
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "layerbench.cli", "run", preset, "--db", str(db)], check=False)
    if done.returncode not in (0, 1):  # 1: finished, some trials failed (they are in the store, and counted)
        raise SystemExit(f"layerbench run {preset} exited with {done.returncode}")
    wall = time.monotonic() - t0
    data = load(Store.open(db, create=False), "latest")
    results = overhead.of_run(data)
    physics = sum(1 for r in results if r.physics is not None and r.physics.status == "flag")
    failed = sum(1 for t in data.trials if t.status != "ok")
    print(f"  {len(data.trials) - failed} trials ok, {failed} failed")
    found = findings.of_run(data, results)
    for line in findings.summary_lines(found):
        print(f"  {line}")
    return {(f.subject, f.workload): f for f in found}, physics, wall


def main(preset: str) -> None:
    runs, flags = [], 0
    with tempfile.TemporaryDirectory(prefix="lb-repro-") as tmp:
        for i in (1, 2):
            print(f"run {i} of {preset}:", flush=True)
            found, physics, wall = one_run(preset, Path(tmp) / f"run{i}.db")
            print(f"  {wall:.0f} s, {physics} faster-than-physics flag(s)", flush=True)
            runs.append(found)
            flags += physics
    a, b = runs
    changed = [k for k in a.keys() & b.keys() if a[k].verdict != b[k].verdict]
    flips = [k for k in changed if {a[k].verdict, b[k].verdict} == {"slower", "faster"}]
    for subject, workload in sorted(changed):
        fa, fb = a[(subject, workload)], b[(subject, workload)]
        word = "flipped" if (subject, workload) in flips else "changed"
        print(
            f"{word}: {subject} {workload}: {fa.verdict} ×{fa.ratio.ratio:.2f}, then {fb.verdict} ×{fb.ratio.ratio:.2f}"
        )
    missing = len(a.keys() ^ b.keys())
    print(f"{len(a.keys() & b.keys())} conclusions compared, {missing} in one run only")
    print(f"flipped={len(flips)} changed={len(changed) - len(flips)} physics={flags}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "quick")
