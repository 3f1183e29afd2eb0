"""Job files written as Longhorn kbench writes its own (sections of ``readwrite=``, relative includes of
shared options, no size and no target), run through `layerbench run` natively and in a Docker volume with
``size:`` and ``env:`` in the spec, against bare fio given the same options on its command line, as kbench
runs them (issue 55, part 1).

Each job makes one pass over its file (``runtime=`` is only a cap), so the bytes it moves are exactly the
size it was given: a check that cannot fail by chance. Its IOPS, which vary with a busy machine, are only
held to within a factor of bare fio's range on the same kind of device (zram, ext4): a wrong size, a buffered
run or another device would be far outside it."""

from __future__ import annotations

import json
import sqlite3
import statistics
from pathlib import Path
from typing import Any

import pytest
import yaml

from layerbench import proc
from layerbench.spec.models import StackSpec
from layerbench.stack.build import single
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext
from layerbench.workloads import fio
from tests import support
from tests.integration.leftovers import leftovers

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_docker, pytest.mark.slow]

OWN = Path(__file__).parents[1] / "data" / "jobfiles" / "layerbench" / "own"
SIZE = 32 * 2**20
DEVICE = {"kind": "zram", "size": "1GiB"}
PLACES = {
    "native": {"filesystem": "ext4", "engine": "native", "placement": "host-dir"},
    "docker-volume": {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume"},
}
JOBS = ("rand-read-iops", "seq-read-iops", "rand-write-iops")
BARE_RUNS = 3
# Generous: bare fio and layerbench's fio on the same kind of device, minutes apart on a shared machine.
FACTOR = 4.0


def spec(tmp: Path) -> Path:
    data: dict[str, Any] = {
        "name": "own-jobfiles",
        "device": DEVICE,
        "stacks": list(PLACES.values()),
        "workloads": [
            {"name": "kbench-iops", "job_file": str(OWN / "iops-quick.fio"), "size": "32MiB"},
            {"name": "env-rw", "job_file": str(OWN / "env-rw.fio"), "size": "32MiB", "env": {"FIO_RW": "randread"}},
        ],
        "baseline": PLACES["native"],
        "trials": {"repetitions": 2},
    }
    path = tmp / "own.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def bare_iops(tmp: Path) -> dict[str, list[float]]:
    """Each job's IOPS from bare fio, as kbench runs it: ``fio --size=... --directory=... iops-quick.fio``."""
    stack = StackSpec.model_validate({"device": DEVICE, **PLACES["native"]})
    ctx = BuildContext(tmp, Ledger(tmp / "ledger.db", "bare"), "bare", proc.run)
    out: dict[str, list[float]] = {job: [] for job in JOBS}
    with single(stack, ctx, 0) as target:
        argv = ["fio", "--output-format=json", f"--size={SIZE}", f"--directory={target.path}", "iops-quick.fio"]
        for _ in range(BARE_RUNS):
            result = fio.parse(proc.run(argv, timeout=300, cwd=str(OWN)).check().stdout)
            for job in result.jobs:
                (direction,) = [d for d in job.directions.values() if d.total_ios]
                assert direction.io_bytes == SIZE, job.name  # one pass over the size given on the command line
                out[job.name].append(direction.iops)
    assert ctx.ledger.live() == []
    return out


def trials(db: Path) -> list[tuple[str, str, dict[str, Any], dict[tuple[str, str], float]]]:
    """Each trial: its cell's label, status, info and samples ((metric, job) → value)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT t.id, c.label, t.status, t.info_json FROM trials t JOIN cells c USING (run_id, cell_id)"
        ).fetchall()
        out = []
        for tid, label, status, info in rows:
            samples = conn.execute("SELECT metric, job, value FROM samples WHERE trial_id = ?", (tid,)).fetchall()
            out.append((label, status, json.loads(info), {(m, j): v for m, j, v in samples}))
    return out


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    return {"db": tmp_path / "results.db", "work": tmp_path / "work", "state": tmp_path / "state"}


def test_kbench_shaped_files_run_with_the_specs_size_as_bare_fio_runs_them(
    tmp_path: Path, dirs: dict[str, Path]
) -> None:
    bare = bare_iops(tmp_path / "bare")
    planned = support.run(["run", str(spec(tmp_path)), "--dry-run"], dirs, timeout=120)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "kbench-iops: size=33554432: applied to [rand-read-iops], [seq-read-iops], [rand-write-iops]" in (
        " ".join(planned.stdout.split())
    )
    done = support.run(["run", str(spec(tmp_path))], dirs, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = trials(dirs["db"])
    assert len(ran) == 2 * 2 * len(PLACES) and all(status == "ok" for _, status, _, _ in ran), ran
    for place in ("host-dir", "volume"):
        kbench = [(info, s) for label, _, info, s in ran if place in label and label.endswith("kbench-iops")]
        for info, samples in kbench:
            size = next(o for o in info["job_options"] if o["option"] == "size")
            assert size["applied"] == list(JOBS) and size["overridden"] == []
            assert next(o for o in info["job_options"] if o["option"] == "directory")["applied"] == list(JOBS)
            for job in JOBS:
                moved = sum(v for (m, j), v in samples.items() if m == "io_bytes" and j == job)
                assert moved == SIZE, (place, job)
        for job in JOBS:
            iops = statistics.median(v for _, s in kbench for (m, j), v in s.items() if m == "iops" and j == job and v)
            low, high = min(bare[job]) / FACTOR, max(bare[job]) * FACTOR
            assert low <= iops <= high, (place, job, iops, bare[job])
        env = [s for label, _, _, s in ran if place in label and label.endswith("env-rw")]
        for samples in env:  # ${FIO_RW} from env: read; ${LAYERBENCH_TARGET}/env-rw.dat: the placement's file
            assert samples[("io_bytes", "env-rw")] == SIZE
    # Ours only: other runs on a shared machine (a CI rehearsal's daemons) come and go meanwhile.
    assert Ledger(dirs["state"] / "ledger.db", "check").live() == []
    assert [left for left in leftovers(dirs["work"]) if str(dirs["work"]) in left] == []
