"""Precision per machine-minute: layerbench's protocol against the seeds', each run as `layerbench run` runs it.

Two cells on the same kind of storage (ext4 on zram): native, and a Docker
volume (overlay2 daemon), each with the same fio workload. Every protocol is
a real `layerbench run`, builds, preconditioning and teardown included, timed
from the command's start to its exit:

- seeds: every repetition of one cell back to back, then the other's (two
  runs of one cell each; 002 ran 10): the ratio of the two means with
  Fieller's interval, the best a pair of independent samples allows;
- once: layerbench's rounds, each visiting both cells in a freshly shuffled
  order, the stacks built once and held (`trials.rebuild: once`, the
  default): the ratio paired by round; with `--again N`, a trial the monitor
  saw contended is measured again up to N times (`trials.again_if_contended`);
- every-round: the same, every stack rebuilt every round (`rebuild:
  every-round`) and no trial measured again: layerbench's protocol before.

Each protocol spends the same number of the same trials (once: plus those
measured again); their wall times differ by what each builds and measures
again. Precision per machine time is the interval's
width (a share of the ratio) times the square root of the wall time: the
width the protocol would reach in one second, since a width shrinks as one
over the square root of the trials. `--repeats` runs of each protocol, in a
shuffled order per repeat; `--load` runs beside a CPU hog whose busy and idle
spells are random (1-15 s each, seeded): no protocol's block length is tuned
to it. Per protocol: the mean width, the mean wall time, and whether its
intervals are honest across repeats (each repeat builds its stacks afresh, so
the spread of the repeats' ratios is what a new build varies by: held stacks'
intervals that left it out would be too narrow to cover it).

Precision is judged twice: by the width each protocol's own intervals claim,
and by how much its answer actually moves from repeat to repeat (the SD of the
repeats' log ratios), which a protocol whose intervals are too narrow cannot
flatter. Last line `ratio=<once's spread·√time / seeds'>`; goal at most 0.5
(issue 31), after the line giving its 95% interval (five repeats leave a factor of three either way).
`--replay LOG ...` recomputes the summary from logs' repeat lines, pooled.

Usage (as root, nothing else running):
  .venv/bin/python bench/efficiency.py [--rounds N] [--repeats R] [--load] [--again N] [--protocols P ...]
  .venv/bin/python bench/efficiency.py --replay LOG [LOG ...]   (the summary again, pooled over logs)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import scipy.stats
import yaml

import layerbench.api
from layerbench.analysis.stats import Ratio, paired_ratio, ratio

WORKLOAD = {"name": "RR", "rw": "randread", "bs": "4k", "iodepth": 32, "size": "256MiB", "runtime_s": 2, "ramp_s": 0.5}
DEVICE = {"kind": "zram", "size": "1GiB"}
NATIVE = {"filesystem": "ext4", "engine": "native", "placement": "host-dir"}
VOLUME = {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume"}
PROTOCOLS = ("seeds", "once", "every-round")
RUN_TIMEOUT_S = 1800
# A CPU hog with random spells: busy 1-15 s, idle 1-15 s, from a seed.
HOG = """
import random, sys, time
rng = random.Random(int(sys.argv[1]))
while True:
    end = time.time() + rng.uniform(1, 15)
    while time.time() < end:
        pass
    time.sleep(rng.uniform(1, 15))
"""


@dataclass(frozen=True)
class Outcome:
    protocol: str
    ratio: Ratio
    wall_s: float
    again: int = 0  # trials measured again because the host was busy

    @property
    def width(self) -> float:
        return (self.ratio.ci_high - self.ratio.ci_low) / self.ratio.ratio

    @property
    def per_second(self) -> float:
        """The width scaled to one second of machine time (a width shrinks as 1/√trials)."""
        return self.width * math.sqrt(self.wall_s)


def spec(name: str, stacks: list[dict], rounds: int, rebuild: str, again: int = 0, runtime_s: int = 2) -> dict:
    return {
        "name": name,
        "device": DEVICE,
        "stacks": stacks,
        "workloads": [{**WORKLOAD, "runtime_s": runtime_s}],
        "trials": {"repetitions": rounds, "rebuild": rebuild, "again_if_contended": again},
    }


def run(spec_data: dict, tmp: Path, seed: int) -> tuple[Path, float]:
    """One `layerbench run` to its exit, in a database of its own; its wall time."""
    name = spec_data["name"]
    path, db = tmp / f"{name}.yaml", tmp / f"{name}.db"
    path.write_text(yaml.safe_dump(spec_data))
    argv = [sys.executable, "-m", "layerbench.cli", "run", str(path), "--db", str(db), "--seed", str(seed)]
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    wall = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"layerbench run {name} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return db, wall


def iops(db: Path) -> dict[str, dict[int, float]]:
    """Per engine kind, each round's read IOPS (summed over fio's jobs)."""
    frame = layerbench.api.open(db).samples()
    frame = frame[(frame.metric == "iops") & (frame.direction == "read")]
    sums = frame.groupby(["stack.engine.kind", "repetition"])["value"].sum()
    out: dict[str, dict[int, float]] = {}
    for (kind, rep), value in sums.items():
        out.setdefault(str(kind), {})[int(rep)] = float(value)
    return out


def measure(
    protocol: str, rounds: int, tmp: Path, tag: str, seed: int, again_if_contended: int = 0, runtime_s: int = 2
) -> Outcome:
    if protocol == "seeds":
        walls, got = 0.0, {}
        for label, stack in (("native", NATIVE), ("docker", VOLUME)):
            db, wall = run(spec(f"seeds-{label}-{tag}", [stack], rounds, "once", runtime_s=runtime_s), tmp, seed)
            walls += wall
            got.update(iops(db))
        return Outcome(protocol, ratio(list(got["docker"].values()), list(got["native"].values())), walls)
    again = again_if_contended if protocol == "once" else 0
    db, wall = run(spec(f"{protocol}-{tag}", [NATIVE, VOLUME], rounds, protocol, again, runtime_s), tmp, seed)
    got = iops(db)
    return Outcome(protocol, paired_ratio(got["docker"], got["native"]), wall, measured_again(db))


def outside_cpu(db: Path) -> dict[str, dict[int, float]]:
    """Per engine kind, each round's mean of the monitor's ``cpu.outside`` (cores other processes used)."""
    query = """SELECT c.config_json, t.repetition, avg(m.value) FROM trials t
               JOIN cells c ON c.run_id = t.run_id AND c.cell_id = t.cell_id
               JOIN monitor m ON m.trial_id = t.id AND m.series = 'cpu.outside'
               WHERE t.status = 'ok' GROUP BY t.id"""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(query).fetchall()
    out: dict[str, dict[int, float]] = {}
    for config, rep, value in rows:
        out.setdefault(json.loads(config)["stack"]["engine"]["kind"], {})[int(rep)] = float(value)
    return out


def adjusted_log_ratio(db: Path) -> tuple[float, float, float]:
    """A paired run's mean log ratio, and the same taken where its two trials' other CPU use was equal (each
    round's log ratio against the difference in ``cpu.outside``, least squares); and the slope per core."""
    got, load = iops(db), outside_cpu(db)
    rounds = sorted(set(got["docker"]) & set(got["native"]))
    logs = [math.log(got["docker"][r] / got["native"][r]) for r in rounds]
    diffs = [load["docker"][r] - load["native"][r] for r in rounds]
    slope, intercept = statistics.linear_regression(diffs, logs)
    return statistics.fmean(logs), intercept, slope


def adjustment(kept: Path) -> None:
    """For each paired protocol's kept runs: how much its answer moved from repeat to repeat, as measured and
    adjusted for other processes' CPU use."""
    for protocol in ("once", "every-round"):
        found = [adjusted_log_ratio(db) for db in sorted(kept.glob(f"{protocol}-*.db"))]
        if len(found) < 2:
            continue
        slopes = ", ".join(f"{f[2]:+.3f}" for f in found)
        print(f"{protocol}: repeats' SD of log ratio {statistics.stdev(f[0] for f in found):.4f} as measured, "
              f"{statistics.stdev(f[1] for f in found):.4f} adjusted; slopes per core {slopes}")  # fmt: skip


def shared_noise(kept: Path) -> None:
    """For each paired protocol's kept runs: how much of a trial's noise the other trial of its round shares
    (the correlation of their log IOPS around each run's means), which is all that pairing by round cancels."""
    for protocol in ("once", "every-round"):
        native: list[float] = []
        docker: list[float] = []
        for db in sorted(kept.glob(f"{protocol}-*.db")):
            got = iops(db)
            rounds = sorted(set(got["docker"]) & set(got["native"]))
            for kind, out in (("native", native), ("docker", docker)):
                logs = [math.log(got[kind][r]) for r in rounds]
                out += [x - statistics.fmean(logs) for x in logs]
        if len(native) > 2:
            sd = statistics.pstdev(native), statistics.pstdev(docker)
            shared = statistics.correlation(native, docker)
            print(f"{protocol}: a trial's SD of log IOPS around its run's mean: native {sd[0]:.4f}, docker "
                  f"{sd[1]:.4f}; the two trials of a round correlate {shared:+.2f}")  # fmt: skip


def fio_cpu(kept: Path) -> None:
    """Over every kept run's trials: how much fio's own CPU share (its jobs' usr+sys, from its output) moved
    beside its IOPS, each around its run's and cell's mean: IOPS that move while fio keeps its CPU are not
    slowed by CPU time the host's accounting sees."""
    iops_dev: list[float] = []
    cpu_dev: list[float] = []
    for db in sorted(kept.glob("*.db")):
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT cell_id, raw_output FROM trials WHERE status = 'ok'").fetchall()
        per: dict[str, list[tuple[float, float]]] = {}
        for cell, raw in rows:
            job = json.loads(raw)["jobs"][0]
            per.setdefault(cell, []).append((math.log(job["read"]["iops"]), math.log(job["usr_cpu"] + job["sys_cpu"])))
        for points in per.values():
            iops_dev += [a - statistics.fmean(a for a, _ in points) for a, _ in points]
            cpu_dev += [b - statistics.fmean(b for _, b in points) for _, b in points]
    if len(iops_dev) > 2:
        together = statistics.correlation(iops_dev, cpu_dev)
        print(f"fio, {len(iops_dev)} trials: SD of log IOPS {statistics.pstdev(iops_dev):.4f}, of log CPU share "
              f"{statistics.pstdev(cpu_dev):.4f}, correlation {together:+.2f}")  # fmt: skip


def measured_again(db: Path) -> int:
    """How many attempts the run measured again (each trial's ``info.disturbed``)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT info_json FROM trials").fetchall()
    return sum(len(json.loads(info).get("disturbed", [])) for (info,) in rows)


@contextlib.contextmanager
def hog(enabled: bool, seed: int) -> Iterator[None]:
    if not enabled:
        yield
        return
    p = subprocess.Popen([sys.executable, "-c", HOG, str(seed)])
    try:
        yield
    finally:
        p.kill()
        p.wait()


def spread(outcomes: list[Outcome]) -> float:
    """The SD of the repeats' log ratios: how much the protocol's answer actually moves from one run to the
    next (each repeat builds afresh, at another time), whatever its intervals claim."""
    return statistics.stdev(math.log(o.ratio.ratio) for o in outcomes) if len(outcomes) > 1 else math.nan


def pooled(runs: list[list[Outcome]]) -> tuple[float, int]:
    """``spread`` over several runs of the bench (each around its own mean: another day's load may move the
    answer), and its degrees of freedom."""
    runs = [r for r in runs if len(r) > 1]
    df = sum(len(r) - 1 for r in runs)
    return (math.sqrt(sum((len(r) - 1) * spread(r) ** 2 for r in runs) / df) if df else math.nan), df


def interval(ratio_: float, df_top: int, df_bottom: int, level: float = 0.95) -> tuple[float, float]:
    """Where a ratio of two SDs from ``df_top`` and ``df_bottom`` degrees of freedom puts the true one (their
    squares' ratio over the true one's is F-distributed, for normal errors), the wall times taken as known:
    five repeats each leave a factor of 3.1 either way."""
    tail = (1 - level) / 2
    return (
        ratio_ / math.sqrt(scipy.stats.f.ppf(1 - tail, df_top, df_bottom)),
        ratio_ / math.sqrt(scipy.stats.f.ppf(tail, df_top, df_bottom)),
    )


def claimed(outcomes: list[Outcome]) -> float:
    """The mean standard error the protocol's own intervals claimed, on the same log scale."""
    return statistics.fmean((math.log(o.ratio.ci_high) - math.log(o.ratio.ci_low)) / (2 * 1.96) for o in outcomes)


def main(
    rounds: int,
    repeats: int,
    load: bool,
    seed: int,
    again: int = 0,
    keep: Path | None = None,
    runtime_s: int = 2,
    protocols: tuple[str, ...] = PROTOCOLS,
) -> None:
    rng = random.Random(seed)
    found: dict[str, list[Outcome]] = {p: [] for p in protocols}
    with tempfile.TemporaryDirectory(prefix="lb-efficiency-") as tmp, hog(load, seed):
        where = keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        for rep in range(repeats):
            for protocol in sorted(protocols, key=lambda _: rng.random()):
                o = measure(protocol, rounds, where, f"{rep}", rng.randrange(10**6), again, runtime_s)
                found[protocol].append(o)
                r = o.ratio
                print(f"repeat {rep + 1} {protocol:<11} ×{r.ratio:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] "
                      f"width {o.width:.1%} in {o.wall_s:.0f} s, {o.again} measured again", flush=True)  # fmt: skip
    report([found])


LINE = re.compile(r"repeat \d+ (\S+)\s+×([\d.]+) \[([\d.]+), ([\d.]+)\] width [\d.]+% in (\d+) s")


def replay(log: Path) -> dict[str, list[Outcome]]:
    """A log's repeat lines as outcomes (their figures as printed, to three decimals)."""
    found: dict[str, list[Outcome]] = {p: [] for p in PROTOCOLS}
    for m in LINE.finditer(log.read_text()):
        protocol, r, lo, hi, wall = m.groups()
        found[protocol].append(Outcome(protocol, Ratio(float(r), float(lo), float(hi), math.nan), float(wall)))
    return found


def report(runs: list[dict[str, list[Outcome]]]) -> None:
    """Per protocol: its claimed width, wall time and actual spread (pooled over ``runs``, each the repeats of
    one run of the bench); then the two efficiency ratios against the seeds': by the actual spread
    (``ratio=``, with its interval) and by the claimed width (which flatters a protocol whose intervals are
    too narrow)."""
    every = {p: [o for run in runs for o in run.get(p, [])] for p in PROTOCOLS}
    every = {p: outcomes for p, outcomes in every.items() if outcomes}
    wall = {p: statistics.fmean(o.wall_s for o in every[p]) for p in every}
    moved = {p: pooled([run.get(p, []) for run in runs]) for p in every}
    for p, outcomes in every.items():
        sd, df = moved[p]
        geo = math.exp(statistics.fmean(math.log(o.ratio.ratio) for o in outcomes))
        print(f"{p}: ratio ×{geo:.3f} (geometric mean of the repeats'), "
              f"mean width {statistics.fmean(o.width for o in outcomes):.1%}, mean wall {wall[p]:.0f} s, "
              f"width·√s {statistics.fmean(o.per_second for o in outcomes):.3f}; repeats' SD of log ratio "
              f"{sd:.4f} ({df} df) against a claimed SE of {claimed(outcomes):.4f} (×{sd / claimed(outcomes):.2f}: "
              f"above 1, its intervals are too narrow), SD·√s {sd * math.sqrt(wall[p]):.4f}")  # fmt: skip
    seeds_claim = statistics.fmean(o.per_second for o in every["seeds"])
    seeds_spread = moved["seeds"][0] * math.sqrt(wall["seeds"])
    for p in [p for p in ("every-round", "once") if p in every]:
        claim = statistics.fmean(o.per_second for o in every[p]) / seeds_claim
        by_spread = moved[p][0] * math.sqrt(wall[p]) / seeds_spread
        low, high = interval(by_spread, moved[p][1], moved["seeds"][1])
        print(f"{p}/seeds: by claimed width {claim:.2f}, by actual spread {by_spread:.2f} "
              f"(95% interval {low:.2f}-{high:.2f}: an SD from few repeats is itself uncertain)")  # fmt: skip
    print(f"ratio={moved['once'][0] * math.sqrt(wall['once']) / seeds_spread:.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6, help="trials per cell in each protocol's run")
    ap.add_argument("--repeats", type=int, default=5, help="runs of each protocol")
    ap.add_argument("--runtime", type=int, default=2, help="each trial's measured seconds (after a 0.5 s ramp)")
    ap.add_argument("--load", action="store_true", help="beside a CPU hog with random busy and idle spells")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument(
        "--protocols",
        nargs="+",
        choices=PROTOCOLS,
        default=list(PROTOCOLS),
        help="which protocols to run (seeds and once: the goal's two)",
    )
    ap.add_argument("--again", type=int, default=0, help="once: trials.again_if_contended (default 0, as in a run)")
    ap.add_argument(
        "--replay", type=Path, nargs="+", help="only the summary, from logs of this bench's repeat lines (pooled)"
    )
    ap.add_argument("--keep", type=Path, help="keep every run's spec and database in this folder")
    ap.add_argument(
        "--adjusted", type=Path, help="only the adjustment for other CPU use and the shared noise (a --keep folder)"
    )
    a = ap.parse_args()
    if a.replay:
        report([replay(log) for log in a.replay])
    elif a.adjusted:
        adjustment(a.adjusted)
        shared_noise(a.adjusted)
        fio_cpu(a.adjusted)
    else:
        main(a.rounds, a.repeats, a.load, a.seed, a.again, a.keep, a.runtime, tuple(a.protocols))
