"""Decided comparisons per machine-minute: decide-by-comparisons (a budget run) against the fixed protocol.

Simulated (the default): tests/simulated_runs.py's experiments of twenty comparisons (per-trial noise ±4.7%,
+0.21 shared within a round, 30% of comparisons CPU-bound and three times as noisy, true effects from
{0, ±3%, ±10%, ±30%}), a thousand of each protocol at each budget; a trial counts QUICK_TRIAL_S of machine
time. The fixed protocol spends the same trials as whole rounds of every cell and is judged by its own fixed-n
rules; the budget run by its anytime intervals. Printed per budget: each protocol's decided comparisons per
machine-minute (mean, 95% interval over the experiments), the share of experiments with a wrong verdict, and
their ratio.

Real (--real N): N runs of each protocol of a preset on this host, alternating, each as `layerbench run`
runs it: the fixed one as the preset says, the budget one with `--budget` set to the trial time the fixed one
just spent. Per run: comparisons decided (show --json's findings), wall time; then decided per minute of each
protocol with a 95% interval over the runs, and the ratio. As root, nothing else running.

Usage:
  PYTHONPATH=src .venv/bin/python bench/decisions.py [--runs 1000] [--budgets 88 176 440 880]
  PYTHONPATH=src .venv/bin/python bench/decisions.py --real 3 [--preset quick] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import simulated_runs  # noqa: E402  (the simulator the unit tests use)

RUN_TIMEOUT_S = 3600  # one run of a preset: quick takes about seven minutes
QUICK_TRIAL_S = 4.5  # quick's trials, preparation included: 72 in 5 min 21 s on this machine kind


def per_minute(decided: np.ndarray, trials: np.ndarray) -> tuple[float, float, float]:
    """Mean decided per machine-minute and its 95% interval (normal, over the experiments)."""
    rate = decided / np.maximum(trials * QUICK_TRIAL_S / 60, 1e-9)
    half = 1.96 * rate.std(ddof=1) / math.sqrt(len(rate))
    return float(rate.mean()), float(rate.mean() - half), float(rate.mean() + half)


def simulate(runs: int, budgets: list[int]) -> None:
    for budget in budgets:
        rounds = max(budget // simulated_runs.CELLS, 2)
        a = simulated_runs.adaptive(runs, budget, seed=budget)
        f = simulated_runs.fixed(runs, rounds, seed=budget + 1)
        ra = per_minute((a.verdicts != simulated_runs.UNDECIDED).sum(axis=1), a.trials)
        rf = per_minute((f.verdicts != simulated_runs.UNDECIDED).sum(axis=1), f.trials)
        wa, wf = simulated_runs.wrong(a.effects, a.verdicts).mean(), simulated_runs.wrong(f.effects, f.verdicts).mean()
        budget_run = f"budget run {ra[0]:.2f}/min ({ra[1]:.2f}-{ra[2]:.2f}), wrong {wa:.1%}"
        fixed_run = f"fixed ({rounds} rounds) {rf[0]:.2f}/min ({rf[1]:.2f}-{rf[2]:.2f}), wrong {wf:.1%}"
        print(f"budget={budget} trials: {budget_run}; {fixed_run}; ratio={ra[0] / rf[0]:.2f}")


def layerbench(args: list[str], db: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    argv = [sys.executable, "-m", "layerbench.cli", *args, "--db", str(db)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=RUN_TIMEOUT_S)
    return time.monotonic() - started, done


def decided_and_trial_time(db: Path) -> tuple[int, int, float]:
    _, shown = layerbench(["show", "latest", "--json"], db)
    data = json.loads(shown.stdout)
    verdicts = [f["verdict"] for f in data["findings"]]
    from layerbench.store.db import Store  # the trials' own time, as a budget counts it

    store = Store.open(db, create=False)
    trials = store.trials(store.resolve_run("latest"))
    return sum(v != "undecided" for v in verdicts), len(verdicts), sum(t.ended_at - t.started_at for t in trials)


def real(repeats: int, preset: str, keep: Path | None = None) -> None:
    rates: dict[str, list[float]] = {"fixed": [], "budget": []}
    with tempfile.TemporaryDirectory() as scratch:
        tmp = keep or Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        for i in range(repeats):
            db = Path(tmp) / f"fixed{i}.db"
            wall, _ = layerbench(["run", preset], db)
            decided, total, spent = decided_and_trial_time(db)
            rates["fixed"].append(decided / (wall / 60))
            print(f"fixed #{i}: {decided}/{total} decided, {wall:.0f} s, trials {spent:.0f} s", flush=True)
            db = Path(tmp) / f"budget{i}.db"
            wall, _ = layerbench(["run", preset, "--budget", f"{spent:.0f}s"], db)
            decided, total, spent = decided_and_trial_time(db)
            rates["budget"].append(decided / (wall / 60))
            print(f"budget #{i}: {decided}/{total} decided, {wall:.0f} s, trials {spent:.0f} s", flush=True)
    for name, values in rates.items():
        arr = np.array(values)
        half = 1.96 * arr.std(ddof=1) / math.sqrt(len(arr)) if len(arr) > 1 else math.nan
        print(f"{name}: {arr.mean():.2f} decided/min (±{half:.2f})")
    print(f"ratio={np.mean(rates['budget']) / np.mean(rates['fixed']):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--budgets", type=int, nargs="+", default=[88, 176, 440, 880])
    parser.add_argument("--real", type=int, default=0, metavar="N")
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the real runs' databases in DIR")
    args = parser.parse_args()
    if args.real:
        real(args.real, args.preset, args.keep)
    else:
        simulate(args.runs, args.budgets)


if __name__ == "__main__":
    main()
