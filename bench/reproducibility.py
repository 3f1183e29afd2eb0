"""Does the first run tell the same story twice?

Runs a preset (`quick` unless told) twice through the CLI, each into a
database of its own, then compares their findings (analysis.findings: each
layer against the one beneath it, paired by round, with one of three verdicts:
different, ≈ or undecided; analysis/verdicts.py): a conclusion flips when one
run calls a layer slower and the other faster; it changes when its verdict
moves between the three categories (different, equivalent, undecided): an
undecided comparison is no "≈", so it cannot hide a change by being neither.
Also counts faster-than-physics flags, which an honest cell should never
raise. Prints both runs' findings, each run's count of verdicts in the three
categories and wall times; last line `flipped=<n> changed=<n> physics=<n>
different=<a>,<b> equivalent=<a>,<b> undecided=<a>,<b>` (one count per run);
the goal is 0 for the first three (issues 17, 29).

Usage (as root, nothing else running): .venv/bin/python bench/reproducibility.py [PRESET] [--keep DIR]
(--keep DIR: the two runs' databases are kept there, run1.db and run2.db, instead of in a temporary directory)
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from layerbench.analysis import comparisons, findings, overhead
from layerbench.analysis.verdicts import CATEGORY, shown
from layerbench.store.db import Store
from layerbench.store.read import load

# A preset's run is minutes (quick: about 6); past two hours something hangs.
PRESET_TIMEOUT_S = 7200


def one_run(preset: str, db: Path) -> tuple[dict[tuple[str, str], findings.Finding], int, float]:
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "layerbench.cli", "run", preset, "--db", str(db)], check=False, timeout=PRESET_TIMEOUT_S
    )
    if done.returncode not in (0, 1):  # 1: finished, some trials failed (they are in the store, and counted)
        raise SystemExit(f"layerbench run {preset} exited with {done.returncode}")
    wall = time.monotonic() - t0
    data = load(Store.open(db, create=False), "latest")
    family = comparisons.of_run(data)  # the run's comparisons judged together, as `show` judges them
    results = overhead.of_run(data, family)
    physics = sum(1 for r in results if r.physics is not None and r.physics.status == "flag")
    failed = sum(1 for t in data.trials if t.status != "ok")
    print(f"  {len(data.trials) - failed} trials ok, {failed} failed")
    found = findings.of_run(data, results, family)
    for line in findings.summary_lines(found):
        print(f"  {line}")
    counts = categories(found)
    print("  verdicts: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return {(f.subject, f.workload): f for f in found}, physics, wall


def categories(found: list[findings.Finding]) -> dict[str, int]:
    """How many findings fall in each of the three categories: different, equivalent, undecided."""
    counts = dict.fromkeys(("different", "equivalent", "undecided"), 0)
    for f in found:
        counts[CATEGORY[f.verdict]] += 1
    return counts


def main(preset: str, keep: Path | None) -> None:
    runs, flags = [], 0
    with tempfile.TemporaryDirectory(prefix="lb-repro-") as tmp:
        for i in (1, 2):
            print(f"run {i} of {preset}:", flush=True)
            found, physics, wall = one_run(preset, (keep or Path(tmp)) / f"run{i}.db")
            print(f"  {wall:.0f} s, {physics} faster-than-physics flag(s)", flush=True)
            runs.append(found)
            flags += physics
    a, b = runs
    changed = [k for k in a.keys() & b.keys() if a[k].verdict != b[k].verdict]  # slower→faster moves too
    flips = [k for k in changed if {a[k].verdict, b[k].verdict} == {"slower", "faster"}]
    for subject, workload in sorted(changed):
        fa, fb = a[(subject, workload)], b[(subject, workload)]
        word = "flipped" if (subject, workload) in flips else "changed"
        first, then = (shown(f.verdict, f.ratio, f.confidence, f.note) for f in (fa, fb))
        print(f"{word}: {subject} {workload}: {first}, then {then}")
    missing = len(a.keys() ^ b.keys())
    print(f"{len(a.keys() & b.keys())} conclusions compared, {missing} in one run only")
    ca, cb = (categories(list(r.values())) for r in runs)
    counts = " ".join(f"{k}={ca[k]},{cb[k]}" for k in ca)
    print(f"flipped={len(flips)} changed={len(changed) - len(flips)} physics={flags} {counts}")


if __name__ == "__main__":
    args = sys.argv[1:]
    kept = Path(args.pop(args.index("--keep") + 1)) if "--keep" in args else None  # the two runs' databases
    args = [a for a in args if a != "--keep"]
    main(args[0] if args else "quick", kept)
