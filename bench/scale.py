"""Does layerbench keep up with big experiments?

1. Validates and expands a 10,500-cell spec (21 stacks by a 500-point iodepth sweep) in this process,
   and times `layerbench run --dry-run` on it (the same plus the CLI's start and its printed plan).
2. Writes a results store of about 1,000,000 samples: those 10,500 cells, 8 trials each, every trial the
   samples of a real fio run (tests/data/fio/3.33/native-randread-4k-32x32.json) with its values jittered;
   then times `show --json`, `export --format csv` and `report --html` on it, each a process of its own,
   with its peak memory.

Goals (issue 17): expansion under 1 s; each of show, export and report under 5 s. Prints one line per
measurement; the last lines are the times. Nothing here needs root or touches a device.

Usage: .venv/bin/python bench/scale.py [--skip-store]
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from layerbench.pipeline import register_cells
from layerbench.sample import Sample
from layerbench.spec import load
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import Matrix, expand
from layerbench.store.db import Store, TrialRecord
from layerbench.workloads import fio

ROOT = Path(__file__).resolve().parent.parent
FIO_OUTPUT = ROOT / "tests" / "data" / "fio" / "3.33" / "native-randread-4k-32x32.json"
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
        docker_drivers=frozenset({"overlay2", "btrfs", "vfs", "fuse-overlayfs"}),
        podman_drivers=frozenset(),
        servers=frozenset(),
        clients=frozenset(),
    )


def timed_expansion(text: str) -> tuple[Matrix, float]:
    start = time.perf_counter()
    matrix = expand(load.parse(text, "scale"), everything())
    return matrix, time.perf_counter() - start


def fill_store(path: Path, text: str, matrix: Matrix) -> tuple[str, int]:
    base = fio.samples(fio.parse(FIO_OUTPUT.read_text()))
    rng = random.Random(7)
    store = Store.open(path)
    run_id = store.new_run("scale", json.dumps(yaml.safe_load(text)), "scale", {"bench": "scale"})
    register_cells(store, run_id, matrix)
    count = 0
    for cell in matrix.cells:
        for rep in range(TRIALS):
            samples = [Sample(s.metric, s.value * rng.uniform(0.9, 1.1), s.unit, s.direction, s.job) for s in base]
            store.record_trial(run_id, TrialRecord(cell.id, rep, "ok", None, 0.0, 1.0, [], "", "", {}, samples))
            count += len(samples)
    store.finish_run(run_id, "finished")
    store.close()
    return run_id, count


def timed_cli(args: list[str], db: Path) -> tuple[float, int]:
    """Wall seconds and peak resident MiB of one `layerbench` command in a process of its own (its own peak:
    wait4 reports the child's, where RUSAGE_CHILDREN keeps the largest of every child so far)."""
    cmd = [sys.executable, "-m", "layerbench.cli", *args, "--db", str(db)]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(args)} failed ({child.returncode}): {err.read()[-2000:].decode()}")
    return wall, usage.ru_maxrss // 1024


def main() -> None:
    text = yaml.safe_dump(SPEC)
    matrix, seconds = timed_expansion(text)
    print(f"expand: {len(matrix.cells)} cells in {seconds:.2f} s (goal < 1 s)")
    keep = Path(sys.argv[sys.argv.index("--keep") + 1]) if "--keep" in sys.argv else None
    with tempfile.TemporaryDirectory() as scratch:
        tmp = keep or Path(scratch)
        spec = Path(tmp) / "scale.yaml"
        spec.write_text(text)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "layerbench.cli", "run", "--dry-run", str(spec)], capture_output=True, check=True,
            timeout=600,
        )
        print(f"run --dry-run: {time.perf_counter() - start:.2f} s (CLI start, host probe, expansion, plan)")
        if "--skip-store" in sys.argv:
            return
        db = Path(tmp) / "scale.db"
        start = time.perf_counter()
        run_id, count = fill_store(db, text, matrix)
        print(f"store: {count} samples written in {time.perf_counter() - start:.1f} s")
        for name, args in [
            ("show --json", ["show", run_id, "--json"]),
            ("export csv", ["export", run_id, "--format", "csv", "-o", str(Path(tmp) / "s.csv")]),
            ("report --html", ["report", run_id, "--html", str(Path(tmp) / "report")]),
        ]:
            wall, peak = timed_cli(args, db)
            print(f"{name}: {wall:.2f} s, peak RSS {peak} MiB (goal < 5 s)")


if __name__ == "__main__":
    main()
