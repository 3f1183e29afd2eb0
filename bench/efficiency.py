"""Precision per machine-minute: layerbench's protocol against the seeds'.

Two cells on the same kind of storage (ext4 on zram, steady): native, and a
Docker volume (overlay2 daemon). Each protocol spends the same machine time,
the same number of the same fio trials, on the container/native ratio:

- the seeds' protocol: every repetition of one cell back to back, then the
  other's (002 ran 10), the ratio of the two means with Fieller's interval
  (the best a pair of independent samples allows);
- layerbench's: rounds, each running both cells in a freshly shuffled order,
  the ratio paired by round (analysis.stats.paired_ratio).

The two protocols alternate, `--repeats` times each, and each protocol's CI
width (as a share of its ratio) is averaged. Then an A/A run, the native
cell against itself under layerbench's protocol: its CI should contain 1.
`--load` runs the whole bench beside a periodic CPU hog (busy 10 s, idle
10 s), a shared host's drift. Last line `ratio=<our mean width / seeds'>`;
the goal is at most 0.5 (issue 17).

Usage (as root, nothing else running): .venv/bin/python bench/efficiency.py [--rounds N] [--repeats R] [--load]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from layerbench import proc
from layerbench.analysis.stats import Ratio, paired_ratio, ratio
from layerbench.schedule import Trial
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.stack.build import single
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext, Target
from layerbench.trial import precondition, run_trial

WORKLOAD = FioWorkload(name="RR", rw="randread", bs="4k", iodepth=32, size="256MiB", runtime_s=3, ramp_s=1)
DEVICE = {"kind": "zram", "size": "512MiB"}
NATIVE = StackSpec.model_validate({"device": DEVICE, "filesystem": "ext4", "engine": "native", "placement": "host-dir"})
VOLUME = StackSpec.model_validate(
    {"device": DEVICE, "filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume"}
)
HOG = "import time\nwhile True:\n    end = time.time() + 10\n    while time.time() < end: pass\n    time.sleep(10)\n"

Measure = Callable[[], float]


def measurer(target: Target, stack: StackSpec) -> Measure:
    cell, count = Cell(stack=stack, workload=WORKLOAD), iter(range(10**6))

    def measure() -> float:
        rec = run_trial(target, Trial(cell, next(count)), {})
        assert rec.status == "ok", rec.stderr
        return next(s.value for s in rec.samples if s.metric == "iops" and s.direction == "read")

    return measure


def seeds(native: Measure, container: Measure, n: int, container_first: bool) -> Ratio:
    blocks = [container, native] if container_first else [native, container]
    got = [[m() for _ in range(n)] for m in blocks]
    c, b = (got[0], got[1]) if container_first else (got[1], got[0])
    return ratio(c, b)


def ours(native: Measure, container: Measure, n: int, rng: random.Random) -> Ratio:
    c: dict[int, float] = {}
    b: dict[int, float] = {}
    for rnd in range(n):
        order = [(c, container), (b, native)]
        rng.shuffle(order)
        for into, measure in order:
            into[rnd] = measure()
    return paired_ratio(c, b)


def width(r: Ratio) -> float:
    return (r.ci_high - r.ci_low) / r.ratio


@contextlib.contextmanager
def hog(enabled: bool) -> Iterator[None]:
    if not enabled:
        yield
        return
    p = subprocess.Popen([sys.executable, "-c", HOG])
    try:
        yield
    finally:
        p.kill()
        p.wait()


def main(rounds: int, repeats: int, load: bool) -> None:
    rng = random.Random(17)
    widths: dict[str, list[float]] = {"seeds": [], "layerbench": []}
    seconds = dict.fromkeys(widths, 0.0)
    with tempfile.TemporaryDirectory(prefix="lb-bench-") as tmp, hog(load):
        ledger = Ledger(Path(tmp) / "ledger.db", "bench")
        ctx = BuildContext(work_dir=Path(tmp), ledger=ledger, run_id="bench", runner=proc.run)
        with contextlib.ExitStack() as stacks:  # a builder each: one builder keeps one stack at a time
            targets = {s: stacks.enter_context(single(s, ctx, int(WORKLOAD.size))) for s in (NATIVE, VOLUME)}
            for t in targets.values():
                assert isinstance(t, Target)
                precondition(t, [WORKLOAD])
            native, container = (measurer(targets[s], s) for s in (NATIVE, VOLUME))  # type: ignore[arg-type]
            for rep in range(repeats):
                for name in sorted(widths, key=lambda _: rng.random()):
                    t0 = time.monotonic()
                    r = (
                        seeds(native, container, rounds, rep % 2 == 1)
                        if name == "seeds"
                        else ours(native, container, rounds, rng)
                    )
                    seconds[name] += time.monotonic() - t0
                    widths[name].append(width(r))
                    print(f"repeat {rep + 1} {name}: ×{r.ratio:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]", flush=True)
            aa = ours(native, measurer(targets[NATIVE], NATIVE), rounds, rng)  # type: ignore[arg-type]
    print(
        f"A/A (native against itself, layerbench's protocol): ×{aa.ratio:.3f} [{aa.ci_low:.3f}, {aa.ci_high:.3f}]"
        f" {'contains' if aa.ci_low <= 1 <= aa.ci_high else 'EXCLUDES'} 1"
    )
    for name, w in widths.items():
        print(f"{name}: mean CI width {100 * statistics.fmean(w):.1f}% of the ratio, {seconds[name]:.0f} s of trials")
    print(f"ratio={statistics.fmean(widths['layerbench']) / statistics.fmean(widths['seeds']):.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6, help="trials per cell in each protocol run")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each protocol")
    ap.add_argument("--load", action="store_true", help="beside a periodic CPU hog")
    a = ap.parse_args()
    main(a.rounds, a.repeats, a.load)
