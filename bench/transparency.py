"""How much does layerbench itself cost a measurement, or add to it?

Builds one native stack (ext4 on a zram device, steady), fills the test file,
then runs the same fio job in rounds, each round every path once in a freshly
shuffled order: bare (`fio` started directly, as from a shell), layerbench's
trial path (ledger, monitor thread, parsing, checks), and with
`--components` the two halves of that path alone (fio in its own session with
stdin closed, as layerbench starts it; and bare fio with the monitor thread
sampling beside it), to find the part that moves the number if one does.

Per path: the geometric mean of its per-round ratios to bare, with a 95%
Student-t interval on their logarithms. Last line `ratio=<layerbench / bare>
ci=[low, high]`; the goal is a CI inside [0.99, 1.01] (issue 17).

Usage (as root, nothing else running): .venv/bin/python bench/transparency.py [rounds] [--components]
"""

from __future__ import annotations

import math
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from layerbench import proc
from layerbench.analysis.stats import t_quantile
from layerbench.monitor import Monitor, devices_beneath
from layerbench.schedule import Trial
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.stack.build import single
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext, Target
from layerbench.trial import precondition, run_trial, workload_argv
from layerbench.workloads import fio

WORKLOAD = FioWorkload(name="RR", rw="randread", bs="4k", iodepth=32, size="256MiB", runtime_s=4, ramp_s=1)
STACK = StackSpec.model_validate(
    {"device": {"kind": "zram", "size": "512MiB"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
)


def read_iops(stdout: str) -> float:
    return fio.parse(stdout).jobs[0].directions["read"].iops


def paths(target: Target, cell: Cell, components: bool) -> dict[str, Callable[[int], float]]:
    argv = workload_argv(WORKLOAD, target)

    def bare(_: int) -> float:
        return read_iops(subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout)

    def layerbench(rep: int) -> float:
        rec = run_trial(target, Trial(cell, rep), {})
        assert rec.status == "ok", rec.stderr
        return next(s.value for s in rec.samples if s.metric == "iops" and s.direction == "read")

    def session(_: int) -> float:
        return read_iops(proc.run(argv, timeout=60).check().stdout)

    def monitored(_: int) -> float:
        with Monitor(devices_beneath(target.device.path)):
            return bare(0)

    chosen = {"bare": bare, "layerbench": layerbench}
    return chosen | ({"own session": session, "monitor beside": monitored} if components else {})


def interval(ratios: list[float]) -> tuple[float, float, float]:
    """Geometric mean of the per-round ratios and its 95% Student-t interval (on the logarithms)."""
    logs = [math.log(r) for r in ratios]
    mean, half = statistics.fmean(logs), t_quantile(0.95, len(logs) - 1) * statistics.stdev(logs) / len(logs) ** 0.5
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def main(rounds: int, components: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="lb-bench-") as tmp:
        ledger = Ledger(Path(tmp) / "ledger.db", "bench")
        ctx = BuildContext(work_dir=Path(tmp), ledger=ledger, run_id="bench", runner=proc.run)
        with single(STACK, ctx, int(WORKLOAD.size)) as target:
            precondition(target, [WORKLOAD])
            chosen = paths(target, Cell(stack=STACK, workload=WORKLOAD), components)
            got: dict[str, list[float]] = {name: [] for name in chosen}
            rng = random.Random(17)
            for rep in range(rounds):
                order = list(chosen)
                rng.shuffle(order)  # no path always first: warm-up and drift fall on none in particular
                for name in order:
                    got[name].append(chosen[name](rep))
                print(f"round {rep + 1}: " + ", ".join(f"{n} {v[-1]:,.0f}" for n, v in got.items()), flush=True)
    for name, values in got.items():
        if name != "bare":
            r, lo, hi = interval([a / b for a, b in zip(values, got["bare"], strict=True)])
            print(f"{name} / bare: {r:.4f} (95% CI {lo:.4f} to {hi:.4f}), mean {statistics.fmean(values):,.0f} IOPS")
    r, lo, hi = interval([a / b for a, b in zip(got["layerbench"], got["bare"], strict=True)])
    print(f"ratio={r:.4f} ci=[{lo:.4f}, {hi:.4f}]")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(args[0]) if args else 24, "--components" in sys.argv)
