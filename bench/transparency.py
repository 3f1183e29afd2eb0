"""How much does layerbench itself cost a measurement, or add to it?

Two stacks on the same storage (ext4 on a zram device), each built as a run
builds it, its test file filled once:

- native: bare fio started directly, as from a shell, against layerbench's
  trial path (trial.run_trial: ledger, monitor thread, parsing, checks);
- container (a Docker volume, a private overlay2 dockerd): bare fio by the
  docker CLI, `docker -H unix://<the daemon's socket> exec <container> fio ...`
  (what a user types, and no line of layerbench's code in it), against the
  trial path, which execs the same binary in the same container through the
  Docker SDK.

Each round runs every path twice, in a freshly shuffled order and then that
order reversed (ABBA for two paths): a drift within the round falls equally
on every path, and no path is always first. A path's round ratio is its two
runs' mean IOPS over bare's two. `--components` adds the halves of the trial
path: natively fio in its own session with stdin closed (as layerbench starts
it) and bare fio with the monitor thread beside it; in the container the
SDK's exec alone (the trial's exec call, with no monitor, ledger or parsing)
and the CLI's bare fio with the monitor beside it.

Each run also records what else the machine did meanwhile: the host's busy
CPU (cores, from /proc/stat), this process's own CPU (all its threads, from
getrusage), and fio's own CPU per I/O (its usr_cpu + sys_cpu over its IOPS):
a round that dips says whether the machine or our process was busy, or
whether fio's core simply ran slower (each I/O cost more CPU with nothing
else busy: a hypervisor's neighbour on this VM's core, which no counter here
shows). A round in which the rest of the host (this process's own CPU left
out, so layerbench's cost cannot hide there) kept more than 1.10 cores busy
beside fio's one was disturbed by someone else: it is measured again (at most
`--again` times, by default as many as rounds), and the figure with those
rounds kept is printed too. Per path: the geometric mean of the round ratios, its 95%
Student-t interval on their logarithms, and the worst round. Last line per
stack `<stack>: ratio=<layerbench / bare> ci=[low, high] worst=<lowest round
ratio>`; the goal is a CI inside [0.99, 1.01] and no round below 0.95 (issue 31).

`--iodepth`, `--runtime` and `--once` (each path once per round, in a
shuffled order) reproduce the former bench: `--iodepth 32 --runtime 4 --once`.

Usage (as root, nothing else running):
  .venv/bin/python bench/transparency.py [rounds] [--path native|container|both] [--components]
      [--iodepth N] [--runtime S] [--once] [--seed N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from layerbench import proc
from layerbench.analysis.stats import t_quantile
from layerbench.run.kinds.single import lat_log_prefix, precondition, run_trial, workload_argv
from layerbench.run.measure.monitor import Monitor, devices_beneath, parse_proc_stat
from layerbench.run.schedule import Trial
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.stack.device import device
from layerbench.stack.engines import engine_type
from layerbench.stack.filesystem import filesystem
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext, Target
from layerbench.workloads import fio

# One job on a 2-core host, a moderate queue: fio keeps one core busy and leaves the other to the rest.
IODEPTH, RUNTIME_S = 8, 2


def workload(iodepth: int, runtime_s: int) -> FioWorkload:
    return FioWorkload(name="RR", rw="randread", bs="4k", iodepth=iodepth, size="256MiB", runtime_s=runtime_s, ramp_s=1)


DEVICE = {"kind": "zram", "size": "512MiB"}
STACKS = {
    "native": StackSpec.model_validate(
        {"device": DEVICE, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
    ),
    "container": StackSpec.model_validate(
        {"device": DEVICE, "filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume"}
    ),
}
EXEC_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Run:
    iops: float
    host_cores: float  # the host's busy CPU over the run, in cores
    own_ms: float  # this process's CPU (every thread) during the run
    fio_us: float  # fio's own CPU per I/O, in µs (its usr_cpu + sys_cpu over its IOPS): how fast its core ran
    others: float  # the host's busy CPU less this process's own, in cores: fio (about 1) and everyone else


Got = tuple[float, str]  # the IOPS the path reports, and fio's JSON
Path_ = Callable[[int], Got]


def read_iops(stdout: str) -> Got:
    return fio.parse(stdout).jobs[0].directions["read"].iops, stdout


def cpu_per_io_us(stdout: str, iops: float) -> float:
    job = json.loads(stdout[stdout.index("{") :])["jobs"][0]
    return (job["usr_cpu"] + job["sys_cpu"]) / 100 / iops * 1e6


def busy_ticks() -> tuple[int, int]:
    cpu = parse_proc_stat(Path("/proc/stat").read_text())
    return cpu.total - cpu.idle - cpu.iowait, cpu.total


def measured(path: Path_, rep: int) -> Run:
    cores = os.cpu_count() or 1
    b0, t0 = busy_ticks()
    r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    iops, stdout = path(rep)
    r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    b1, t1 = busy_ticks()
    own = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    host = cores * (b1 - b0) / max(t1 - t0, 1)
    return Run(iops, host, own * 1000, cpu_per_io_us(stdout, iops), host - own / max(w1 - w0, 1e-3))


# fio keeps one core busy; a run in which the rest of the host (this process's own CPU left out, so that
# layerbench's cost cannot hide behind it) used more than this beside it was disturbed by someone else.
DISTURBED_CORES = 1.10


def trial_path(target: Target, cell: Cell) -> Path_:
    def layerbench(rep: int) -> Got:
        rec = run_trial(target, Trial(cell, rep), {})
        assert rec.status == "ok", rec.stderr
        return next(s.value for s in rec.samples if s.metric == "iops" and s.direction == "read"), rec.raw_output

    return layerbench


def native_paths(target: Target, cell: Cell, components: bool) -> dict[str, Path_]:
    argv = workload_argv(cell.workload, target)

    def bare(_: int) -> Got:
        return read_iops(subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout)

    def session(_: int) -> Got:
        return read_iops(proc.run(argv, timeout=60).check().stdout)

    def monitored(_: int) -> Got:
        with Monitor(devices_beneath(target.device.path)):
            return bare(0)

    logged_argv = workload_argv(cell.workload, target, lat_log=lat_log_prefix(cell.workload, target))

    def logged(_: int) -> Got:
        return read_iops(subprocess.run(logged_argv, capture_output=True, text=True, check=True, timeout=60).stdout)

    chosen = {"bare": bare, "layerbench": trial_path(target, cell)}
    return chosen | ({"own session": session, "monitor beside": monitored, "latency log": logged} if components else {})


def container_paths(target: Target, cell: Cell, socket: Path, components: bool) -> dict[str, Path_]:
    argv = workload_argv(cell.workload, target)
    cli = ["docker", "-H", f"unix://{socket}", "exec", str(target.info["container"]), *argv]
    cgroup = {k: Path(v) for k, v in target.facts.cgroup.items()} or None

    def bare(_: int) -> Got:
        return read_iops(subprocess.run(cli, capture_output=True, text=True, check=True, timeout=60).stdout)

    def sdk(_: int) -> Got:
        return read_iops(target.run(argv, EXEC_TIMEOUT_S).check().stdout)

    def monitored(_: int) -> Got:
        with Monitor(devices_beneath(target.device.path), cgroup=cgroup):
            return bare(0)

    logged_argv = workload_argv(cell.workload, target, lat_log=lat_log_prefix(cell.workload, target))
    logged_cli = [*cli[: -len(argv)], *logged_argv]

    def logged(_: int) -> Got:
        return read_iops(subprocess.run(logged_cli, capture_output=True, text=True, check=True, timeout=60).stdout)

    chosen = {"bare": bare, "layerbench": trial_path(target, cell)}
    return chosen | ({"sdk exec": sdk, "monitor beside": monitored, "latency log": logged} if components else {})


@contextlib.contextmanager
def built(kind: str, ctx: BuildContext, data_bytes: int) -> Iterator[tuple[Target, Path | None]]:
    """The layers stack.build.single builds, entered one by one so the bench holds the engine (its socket)."""
    stack = STACKS[kind]
    with contextlib.ExitStack() as exits:
        dev = exits.enter_context(device(stack.device, ctx))
        mount = exits.enter_context(filesystem(dev, stack.filesystem, ctx))
        engine = exits.enter_context(engine_type(stack.engine.kind).start(mount, stack.engine, ctx))
        target = exits.enter_context(engine.place(mount, stack, data_bytes, ctx))
        daemon = getattr(engine, "daemon", None)
        yield target, (daemon.socket if daemon is not None else None)


def interval(ratios: list[float]) -> tuple[float, float, float]:
    """Geometric mean of the per-round ratios and its 95% Student-t interval (on the logarithms)."""
    logs = [math.log(r) for r in ratios]
    mean, half = statistics.fmean(logs), t_quantile(0.95, len(logs) - 1) * statistics.stdev(logs) / len(logs) ** 0.5
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def bench(kind: str, w: FioWorkload, rounds: int, components: bool, once: bool, seed: int, again: int) -> None:
    with tempfile.TemporaryDirectory(prefix="lb-bench-") as tmp:
        ledger = Ledger(Path(tmp) / "ledger.db", "bench")
        ctx = BuildContext(work_dir=Path(tmp), ledger=ledger, run_id="bench", runner=proc.run)
        with built(kind, ctx, int(w.size)) as (target, socket):
            precondition(target, [w])
            cell = Cell(stack=STACKS[kind], workload=w)
            if kind == "native":
                chosen = native_paths(target, cell, components)
            else:
                assert socket is not None
                chosen = container_paths(target, cell, socket, components)
            got, dropped = run_rounds(kind, chosen, rounds, once, random.Random(seed), again)
    summarize(kind, got, dropped)


def run_rounds(
    kind: str, chosen: dict[str, Path_], rounds: int, once: bool, rng: random.Random, again: int
) -> tuple[dict[str, list[list[Run]]], dict[str, list[list[Run]]]]:
    """``rounds`` undisturbed rounds, and the disturbed ones measured again (at most ``again`` of them)."""
    got: dict[str, list[list[Run]]] = {name: [] for name in chosen}
    dropped: dict[str, list[list[Run]]] = {name: [] for name in chosen}
    attempt = 0
    while len(got["bare"]) < rounds:
        attempt += 1
        order = list(chosen)
        rng.shuffle(order)
        runs: dict[str, list[Run]] = {name: [] for name in chosen}
        # A palindrome: every path's mean position is the same (``once``: the former protocol, each path once).
        for name in order if once else order + order[::-1]:
            runs[name].append(measured(chosen[name], attempt))
        others = max(x.others for r in runs.values() for x in r)
        disturbed = others > DISTURBED_CORES and len(dropped["bare"]) < again
        for name, pair in runs.items():
            (dropped if disturbed else got)[name].append(pair)
        print(round_line(kind, attempt, runs, f"disturbed ({others:.2f} cores), measured again" if disturbed else ""))
    return got, dropped


def round_line(kind: str, attempt: int, runs: dict[str, list[Run]], note: str) -> str:
    base = mean_iops(runs["bare"])
    return (
        f"{kind} round {attempt}: "
        + ", ".join(
            f"{n} {mean_iops(r):,.0f} (x{mean_iops(r) / base:.3f}; host "
            + "/".join(f"{x.host_cores:.2f}" for x in r)
            + " cores; own "
            + "/".join(f"{x.own_ms:.0f}" for x in r)
            + " ms; fio "
            + "/".join(f"{x.fio_us:.2f}" for x in r)
            + " µs/io)"
            for n, r in runs.items()
        )
        + (f" {note}" if note else "")
    )


def mean_iops(runs: list[Run]) -> float:
    return statistics.fmean(r.iops for r in runs)


def summarize(kind: str, got: dict[str, list[list[Run]]], dropped: dict[str, list[list[Run]]]) -> None:
    if dropped["bare"]:
        every = {name: got[name] + dropped[name] for name in got}
        r, lo, hi, worst = figure(every)
        print(
            f"{kind}: {len(dropped['bare'])} rounds disturbed by other processes, measured again; "
            f"with them kept: ratio={r:.4f} ci=[{lo:.4f}, {hi:.4f}] worst={worst:.4f} over {len(every['bare'])} rounds"
        )
    bare = [mean_iops(r) for r in got["bare"]]
    host_bare = statistics.fmean(x.host_cores for r in got["bare"] for x in r)
    print(f"{kind} bare: mean {statistics.fmean(bare):,.0f} IOPS, host busy {host_bare:.2f} cores")
    for name, values in got.items():
        if name == "bare":
            continue
        ratios = [mean_iops(v) / b for v, b in zip(values, bare, strict=True)]
        r, lo, hi = interval(ratios)
        host = statistics.fmean(x.host_cores for v in values for x in v)
        own = statistics.fmean(x.own_ms for v in values for x in v)
        cpu = [
            statistics.fmean(x.fio_us for x in v) / statistics.fmean(x.fio_us for x in b)
            for v, b in zip(values, got["bare"], strict=True)
        ]
        print(
            f"{kind} {name} / bare: {r:.4f} (95% CI {lo:.4f} to {hi:.4f}), "
            f"worst round x{min(ratios):.3f}, best x{max(ratios):.3f}, "
            f"host busy {host:.2f} cores, own CPU {own:.0f} ms per run, fio's CPU per I/O x{interval(cpu)[0]:.4f}"
        )
    r, lo, hi, worst = figure(got)
    print(f"{kind}: ratio={r:.4f} ci=[{lo:.4f}, {hi:.4f}] worst={worst:.4f}", flush=True)


def figure(got: dict[str, list[list[Run]]]) -> tuple[float, float, float, float]:
    """layerbench / bare: the geometric mean of the round ratios, its 95% interval, the worst round."""
    ratios = [mean_iops(v) / mean_iops(b) for v, b in zip(got["layerbench"], got["bare"], strict=True)]
    return (*interval(ratios), min(ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="?", type=int, default=24)
    parser.add_argument("--path", choices=["native", "container", "both"], default="both")
    parser.add_argument("--components", action="store_true")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--iodepth", type=int, default=IODEPTH)
    parser.add_argument("--runtime", type=int, default=RUNTIME_S, help="fio's measured seconds (after 1 s of ramp)")
    parser.add_argument("--once", action="store_true", help="each path once per round (the former protocol)")
    parser.add_argument(
        "--again", type=int, default=None, help="disturbed rounds measured again, at most (default: rounds; 0: none)"
    )
    args = parser.parse_args()
    started = time.monotonic()
    for kind in ["native", "container"] if args.path == "both" else [args.path]:
        again = args.rounds if args.again is None else args.again
        bench(kind, workload(args.iodepth, args.runtime), args.rounds, args.components, args.once, args.seed, again)
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
