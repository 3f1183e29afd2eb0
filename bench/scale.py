"""Does layerbench keep up with big experiments?

1. Validates and expands a 10,500-cell spec (21 stacks by a 500-point iodepth sweep) in this process,
   and times `layerbench run --dry-run` on it (the same plus the CLI's start and its printed plan).
2. Writes two runs of about 1,000,000 samples each (each in a database of its own): those 10,500 cells,
   8 trials each, every trial what a real fio trial stores: the samples of a real fio run
   (tests/data/fio/3.33/native-randread-4k-32x32.json) with its values jittered, that run's JSON as raw
   output, a real latency log (write_lat_log: latlog-randread-4k-2x4.log), that JSON's completion histograms
   as trial.py keeps them (fio.BINS_LOG), its conditions, its four checks
   and its monitor series (a 1 s trial after a 1 s ramp: two
   ticks of the host's series, and a container's for a Docker cell); then times `show`, `show --json`,
   `export` as CSV and as Parquet, `report --html` and `compare` of the two runs, each a process of its
   own, with its peak memory. Each read command runs twice: the first reads the database (and may write
   the run's columnar cache, store/cache.py), the second what a user sees every time after. Before them,
   each run's end is done as `layerbench run` does it for a run this big (report/prepared.py: every part
   the reads would build, built then, timed); with --cold it is not, and the first reads build the cache,
   as they do for a database copied without its cache or read by another version of layerbench.

Goals (issue 31): expansion under 1 s; every command at most 2 s. Prints one line per measurement; the
last lines are the times. Nothing here needs root or touches a device.

Usage: .venv/bin/python bench/scale.py [--skip-store] [--keep DIR] [--reuse] [--once] [--cold] [--limit SECONDS]
  --keep DIR: write the databases there and leave them; --reuse: with --keep, use databases already there;
  --once: each command once; --limit: a command still running after SECONDS (600) is killed, printed as inf.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

from layerbench.records.checks import Check
from layerbench.records.info import TrialInfo
from layerbench.records.sample import Sample
from layerbench.records.trial import MonitorPoint, TrialRecord
from layerbench.run.loop import register_cells
from layerbench.spec import load
from layerbench.spec.engines import docker
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import Matrix, expand
from layerbench.store.db import Store
from layerbench.workloads import fio

ROOT = Path(__file__).resolve().parent.parent
FIO_OUTPUT = ROOT / "tests" / "data" / "fio" / "3.33" / "native-randread-4k-32x32.json"
FIO_LAT_LOG = ROOT / "tests" / "data" / "fio" / "3.33" / "latlog-randread-4k-2x4.log"  # write_lat_log, 100 ms
TRIALS = 8
SPEC = {
    "name": "scale",
    "device": {"kind": "loop", "size": "2GiB", "direct_io": True},
    "stacks": [
        {"filesystem": "none", "placement": "raw"},
        {"filesystem": ["ext4", "xfs", "btrfs"], "engine": "native", "placement": "host-dir"},
        {
            "filesystem": ["ext4", "xfs", "btrfs"],
            "engine": "docker:overlay2",
            "placement": ["writable-layer", "volume", "bind", "tmpfs"],
        },
        {"filesystem": ["ext4", "xfs"], "engine": "docker:vfs", "placement": "writable-layer"},
        {"filesystem": "btrfs", "engine": "docker:btrfs", "placement": "writable-layer"},
        {"filesystem": ["ext4", "xfs"], "engine": "docker:fuse-overlayfs", "placement": "writable-layer"},
    ],
    "workloads": [
        {
            "name": "RR",
            "rw": "randread",
            "bs": "4k",
            "size": "64MiB",
            "runtime_s": 1,
            "sweep": {"iodepth": list(range(1, 501))},
        }
    ],
    "baseline": {"filesystem": "none", "placement": "raw"},
}


def everything() -> HostCaps:
    """A host that has every layer the spec names: the bench measures expansion, not this machine's refusals."""
    return HostCaps(
        is_root=True,
        kernel="bench",
        filesystems=frozenset({"ext4", "xfs", "btrfs", "overlay", "tmpfs", "fuse"}),
        mkfs=frozenset({"ext4", "xfs", "btrfs"}),
        loop=True,
        zram=True,
        device_mapper=False,
        fuse=True,
        binaries=frozenset({"fio", "dockerd", "containerd", "runc", "fuse-overlayfs", "losetup", "mount"}),
        servers=frozenset(),
        clients=frozenset(),
        engines={docker.KIND: docker.DockerCaps(drivers=frozenset({"overlay2", "btrfs", "vfs", "fuse-overlayfs"}))},
    )


def timed_expansion(text: str) -> tuple[Matrix, float]:
    start = time.perf_counter()
    matrix = expand(load.parse(text, "scale"), everything())
    return matrix, time.perf_counter() - start


# What the monitor records each tick (monitor.py) for a fio trial on a loop device: the host's CPU shares, each
# core's, other processes' CPU, memory and the device's counters; a container's own series on Docker cells.
HOST_SERIES = [
    ("cpu.user", "%"), ("cpu.system", "%"), ("cpu.iowait", "%"), ("cpu.idle", "%"), ("cpu.cpu0.busy", "%"),
    ("cpu.cpu1.busy", "%"), ("cpu.outside", "cores"), ("mem.used", "B"), ("disk.loop0.read_bps", "B/s"),
    ("disk.loop0.write_bps", "B/s"), ("disk.loop0.read_iops", "IO/s"), ("disk.loop0.write_iops", "IO/s"),
    ("disk.loop0.util", "%"),
]  # fmt: skip
CONTAINER_SERIES = [("container.cpu_cores", "cores"), ("container.memory", "B"), ("container.read_bps", "B/s"),
                    ("container.write_bps", "B/s")]  # fmt: skip
TICKS = 2  # a 1 s trial after fio's default 1 s ramp
CHECKS = [
    ("device-accounting", "pass", "the device moved 1.02x the bytes fio read (255.1 of 250.0 MiB)"),
    ("bottleneck", "pass", "CPU 61% busy, device 88% utilized"),
    ("contended", "pass", "other processes used 0.02 of 2 cores"),
    ("volatile-mount", "pass", "the measured path is on a mount whose fsync reaches the device"),
]


def trial_record(
    cell_id: str, rep: int, docker: bool, raw: str, logs: dict[str, str], base: list[Sample], rng: random.Random
) -> TrialRecord:
    samples = [Sample(s.metric, s.value * rng.uniform(0.9, 1.1), s.unit, s.direction, s.job) for s in base]
    series = HOST_SERIES + (CONTAINER_SERIES if docker else [])
    monitor = [
        MonitorPoint(tick + rng.uniform(0, 0.01), name, rng.uniform(0, 100), unit)
        for tick in range(1, TICKS + 1)
        for name, unit in series
    ]
    info = {
        "lat_log_ms": 100,
        "precondition": {"67108864:fill": {"seconds": 0.412}},
        "target": {"placement": "volume" if docker else "host-dir", "path": "/var/tmp/layerbench/w/fio.dat",
                   "device": "/dev/loop0", "cgroup": {"cpu": "/sys/fs/cgroup/cpu/docker/0123abcd"} if docker else {}},
        "engine": {"kind": "docker" if docker else "native", "version": "20.10.24", "driver": "overlay2"},
    }  # fmt: skip
    checks = [Check(*c) for c in CHECKS]
    argv = ["fio", "--output-format=json+", "--name=RR", "--rw=randread", "--bs=4k", f"--iodepth={rep + 1}"]
    conditions = TrialInfo.from_json(info)  # the store writes a trial's conditions typed, as the run stage makes them
    return TrialRecord(
        cell_id, rep, "ok", None, 0.0, 2.0, argv, raw, "", conditions, samples, checks, monitor, None, logs
    )


def fill_store(path: Path, text: str, matrix: Matrix, seed: int) -> tuple[str, int]:
    raw = FIO_OUTPUT.read_text()
    result = fio.parse(raw)
    base = fio.samples(result)
    # fio's latency log and its completion histograms, as trial.py keeps them beside the output.
    logs = {"lat": FIO_LAT_LOG.read_text(), fio.BINS_LOG: fio.bins_text(fio.completion_bins(result))}
    rng = random.Random(seed)
    store = Store.open(path)
    run_id = store.new_run("scale", json.dumps(yaml.safe_load(text)), "scale", {"bench": "scale"})
    register_cells(store, run_id, matrix)
    count = 0
    for cell in matrix.cells:
        docker = cell.stack.engine.kind == "docker"
        for rep in range(TRIALS):
            record = trial_record(cell.id, rep, docker, raw, logs, base, rng)
            store.record_trial(run_id, record)
            count += len(record.samples)
    store.finish_run(run_id, "finished")
    store.close()
    return run_id, count


COMMAND_LIMIT_S = float(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else 600.0


def timed_cli(args: list[str], db: Path) -> tuple[float, int]:
    """Wall seconds and peak resident MiB of one `layerbench` command in a process of its own."""
    return timed_process([sys.executable, "-m", "layerbench.cli", *args, "--db", str(db)], " ".join(args))


# What `layerbench run` does at the end of a run this big (cli/app.py's _prepare_reads), alone.
PREPARE = """import sys
from pathlib import Path
from layerbench.report import prepared
from layerbench.store.db import Store
store = Store.open(Path(sys.argv[1]), create=False)
assert prepared.worth_preparing(store, sys.argv[2])
for name, seconds in prepared.ahead(store, sys.argv[2]):
    print(f"{name} {seconds:.1f} s", file=sys.stderr)
"""


def timed_prepare(db: Path, run_id: str) -> tuple[float, int]:
    """The run's end, its parts' seconds printed as it prints them."""
    return timed_process([sys.executable, "-c", PREPARE, str(db), run_id], "the run's end", echo=True)


def timed_process(cmd: list[str], what: str, echo: bool = False) -> tuple[float, int]:
    """Wall seconds and peak resident MiB of ``cmd`` (its own peak: wait4 reports the child's, where
    RUSAGE_CHILDREN keeps the largest of every child so far). A command still running after
    COMMAND_LIMIT_S is killed and reported as taking longer (``inf``). With ``echo``, its standard error
    is printed after it ends."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        killer = threading.Timer(COMMAND_LIMIT_S, child.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            killer.cancel()
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode == -9 and wall >= COMMAND_LIMIT_S:
            return math.inf, usage.ru_maxrss // 1024
        if child.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{what} failed ({child.returncode}): {err.read()[-2000:].decode()}")
        if echo:
            err.seek(0)
            print(err.read().decode(errors="replace"), end="")
    return wall, usage.ru_maxrss // 1024


def stored_run(db: Path, text: str, matrix: Matrix, seed: int, reuse: bool) -> str:
    """The run in ``db``: the one there with --reuse, else written afresh."""
    if reuse and db.exists():
        store = Store.open(db, create=False)
        run_id = store.resolve_run("latest")
        store.close()
        print(f"store: reusing run {run_id} in {db}")
        return run_id
    db.unlink(missing_ok=True)
    start = time.perf_counter()
    run_id, count = fill_store(db, text, matrix, seed)
    print(f"store: {count} samples written to {db.name} in {time.perf_counter() - start:.1f} s")
    return run_id


def main() -> None:
    text = yaml.safe_dump(SPEC)
    matrix, seconds = timed_expansion(text)
    print(f"expand: {len(matrix.cells)} cells in {seconds:.2f} s (goal < 1 s)")
    keep = Path(sys.argv[sys.argv.index("--keep") + 1]) if "--keep" in sys.argv else None
    with tempfile.TemporaryDirectory() as scratch:
        tmp = keep or Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)  # --keep's folder, made where it is missing
        spec = Path(tmp) / "scale.yaml"
        spec.write_text(text)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "layerbench.cli", "run", "--dry-run", str(spec)],
            capture_output=True,
            check=True,
            timeout=600,
        )
        print(f"run --dry-run: {time.perf_counter() - start:.2f} s (CLI start, host probe, expansion, plan)")
        if "--skip-store" in sys.argv:
            return
        reuse = "--reuse" in sys.argv
        db, db_b = Path(tmp) / "scale.db", Path(tmp) / "scale-b.db"
        run_id = stored_run(db, text, matrix, 7, reuse)
        run_b = stored_run(db_b, text, matrix, 8, reuse)
        if "--cold" not in sys.argv:  # as a run leaves its database: its reads prepared at its end
            for path, ref in ((db, run_id), (db_b, run_b)):
                wall, peak = timed_prepare(path, ref)
                print(f"prepare {path.name} at the run's end: {wall:.1f} s, peak RSS {peak} MiB", flush=True)
        commands = [
            ("show", ["show", run_id]),
            ("show --json", ["show", run_id, "--json"]),
            ("export csv", ["export", run_id, "--format", "csv", "-o", str(Path(tmp) / "s.csv")]),
            ("export parquet", ["export", run_id, "--format", "parquet", "-o", str(Path(tmp) / "s.parquet")]),
            ("report --html", ["report", run_id, "--html", str(Path(tmp) / "report")]),
            ("compare", ["compare", run_id, run_b, "--db-b", str(db_b)]),
        ]
        table = []
        for attempt in ("first",) if "--once" in sys.argv else ("first", "again"):
            for name, args in commands:
                wall, peak = timed_cli(args, db)
                table.append((name, attempt, wall, peak))
                print(f"{name} ({attempt}): {wall:.2f} s, peak RSS {peak} MiB (goal <= 2 s)", flush=True)
        print("| command | first: s, peak MiB | again: s, peak MiB |")
        for name, _ in commands:
            cells = [f"{w:.2f} s, {p} MiB" for n, _, w, p in table if n == name]
            print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
