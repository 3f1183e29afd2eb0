"""How much does layerbench itself cost a measurement?

Builds one native stack (ext4 on a zram device, steady), fills the test file,
then runs the same fio job in pairs, in alternating order: once through
layerbench's trial path (monitor thread, parsing, checks) and once bare
(`fio` started directly). Prints each pair and, last, `ratio=<median of
layerbench IOPS / bare IOPS>`; the goal is at least 0.99.

Usage (as root, nothing else running): .venv/bin/python bench/transparency.py [pairs]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from layerbench import proc
from layerbench.schedule import Trial
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.stack.build import single
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext
from layerbench.trial import precondition, run_trial, workload_argv
from layerbench.workloads import fio

WORKLOAD = FioWorkload(name="RR", rw="randread", bs="4k", iodepth=32, size="256MiB", runtime_s=4, ramp_s=1)
STACK = StackSpec.model_validate(
    {"device": {"kind": "zram", "size": "512MiB"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
)


def bare_iops(argv: list[str]) -> float:
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return fio.parse(done.stdout).jobs[0].directions["read"].iops


def through_layerbench(target, cell: Cell, rep: int) -> float:
    rec = run_trial(target, Trial(cell, rep), {})
    assert rec.status == "ok", rec.stderr
    return next(s.value for s in rec.samples if s.metric == "iops" and s.direction == "read")


def main(pairs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="lb-bench-") as tmp:
        ledger = Ledger(Path(tmp) / "ledger.db", "bench")
        ctx = BuildContext(work_dir=Path(tmp), ledger=ledger, run_id="bench", runner=proc.run)
        cell = Cell(stack=STACK, workload=WORKLOAD)
        with single(STACK, ctx, int(WORKLOAD.size)) as target:
            precondition(target, [WORKLOAD])
            argv = workload_argv(WORKLOAD, target)
            ratios = []
            for i in range(pairs):
                first_bare = i % 2 == 1  # alternate the order against drift and warm-up bias
                a = bare_iops(argv) if first_bare else None
                lb = through_layerbench(target, cell, i)
                b = a if a is not None else bare_iops(argv)
                ratios.append(lb / b)
                print(f"pair {i + 1}: layerbench {lb:,.0f} IOPS, bare {b:,.0f} IOPS, ratio {lb / b:.3f}", flush=True)
    print(f"ratio={statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
