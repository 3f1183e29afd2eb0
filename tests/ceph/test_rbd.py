"""RBD for real (make test-ceph): layerbench builds a Ceph cluster of three OSDs, each on a storage host of its
own (a network namespace on a veth link), from the distribution's daemons; fio reaches its image through librbd,
natively and from a Docker container, and through rbd-fuse under a loop device with ext4 on it, natively and
under a Docker volume. Each cluster is torn down with nothing left.

About 3 to 5 minutes here (2 cores, quiet or busy): each cluster takes 25-60 s to build and reach HEALTH_OK,
and as long to precondition, measure and tear down."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

import pytest
import yaml

from tests import support
from tests.integration.leftovers import leftovers
from tests.reliability.test_kill_cleanup import STATE_TIMEOUT_S, live_kinds

pytestmark = [
    pytest.mark.requires_root,
    pytest.mark.requires_fio,
    pytest.mark.requires_ceph,
    pytest.mark.slow,
    pytest.mark.timeout(600),
]

# Size 3 against size 1 on the same backing devices, 4k random writes at QD16 through librbd: measured by hand
# here 1,550 against 3,735 IOPS (a ratio of 0.41, 20 s each, quiet); by this test 918 against 3,085 (0.30) and
# 1,292 against 2,931 (0.44), 6 s each, both cores busy. A write at size 3 waits for two more OSDs across two
# more links. The three ratios' logs have a mean of -0.97 and a standard deviation of 0.20; taking 0.3 instead
# (one trial each on a busy machine, 20-25% per trial), 0.9 lies 2.9 of them above the mean: a false failure in
# about 1 run of 500, while a size 3 that cost nothing (a ratio near 1) fails it.
SIZE3_AT_MOST = 0.9
WRITE = {"name": "RW", "rw": "randwrite", "bs": "4k", "iodepth": 16, "size": "256MiB", "runtime_s": 6, "ramp_s": 1}


def _dirs(tmp_path: Path) -> dict[str, Path]:
    return {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}


def _rbd(client: str, size: int) -> dict:
    return {"remote": {"transport": "rbd", "client": client, "cluster": {"osds": 3, "size": size}}}


def _run(tmp_path: Path, spec: dict) -> dict:
    dirs = _dirs(tmp_path)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    done = support.run(["run", str(path)], dirs, timeout=540)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert leftovers(dirs["work"]) == []
    return dict(json.loads(support.run(["show", "latest", "--json"], dirs).stdout))


def test_librbd_writes_at_size_3_are_slower_than_at_size_1_and_each_cluster_leaves_nothing(tmp_path: Path) -> None:
    """Natively at both sizes, and from a Docker container on the size 3 cluster (the same cluster: stacks that
    share their device are built together)."""
    spec = {
        "name": "rbd-replication",
        "device": {"kind": "loop", "size": "2GiB"},
        "stacks": [
            {"device": [_rbd("fio", 3), _rbd("fio", 1)], "filesystem": "none", "placement": "raw"},
            {"device": _rbd("fio", 3), "filesystem": "none", "engine": "docker:overlay2", "placement": "raw"},
        ],
        "workloads": [WRITE],
        "trials": {"repetitions": 1},
    }
    shown = _run(tmp_path, spec)
    cells = {c["stack_label"]: c for c in shown["cells"]}
    size3, size1 = "loop@rbd-fio(3osd,size3/2)/none/native/raw", "loop@rbd-fio(3osd,size1/1)/none/native/raw"
    docker = "loop@rbd-fio(3osd,size3/2)/none/docker:overlay2/raw"
    assert set(cells) == {size3, size1, docker}
    assert all(c["summary"]["n"] == 1 and c["summary"]["mean"] > 0 for c in cells.values()), cells
    ratio = cells[size3]["summary"]["mean"] / cells[size1]["summary"]["mean"]
    assert ratio < SIZE3_AT_MOST, (ratio, cells[size3]["summary"], cells[size1]["summary"])
    (target,) = [t["info"]["target"] for t in _trials(tmp_path / "r.db") if t["label"] == docker]
    assert target["container"] and target["image"].startswith("layerbench/tools:"), target  # fio ran in it


def test_rbd_fuse_under_ext4_runs_fio_natively_and_in_a_docker_volume_and_leaves_no_fuse_mount(tmp_path: Path) -> None:
    spec = {
        "name": "rbd-fuse",
        "device": {"kind": "loop", "size": "2GiB"},
        "stacks": [
            {"device": _rbd("fuse", 3), "filesystem": "ext4", "placement": "host-dir"},
            {"device": _rbd("fuse", 3), "filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume"},
        ],
        "workloads": [{**WRITE, "size": "128MiB", "runtime_s": 3}],
        "trials": {"repetitions": 1},
    }
    shown = _run(tmp_path, spec)
    cells = {c["stack_label"]: c["summary"] for c in shown["cells"]}
    assert set(cells) == {
        "loop@rbd-fuse(3osd,size3/2)/ext4/native/host-dir",
        "loop@rbd-fuse(3osd,size3/2)/ext4/docker:overlay2/volume",
    }
    assert all(s["n"] == 1 and s["mean"] > 0 for s in cells.values()), cells
    assert "rbd-fuse" not in Path("/proc/mounts").read_text()


def test_a_run_killed_mid_trial_leaves_nothing_after_cleanup(tmp_path: Path) -> None:
    """SIGKILL while fio writes through rbd-fuse, ext4 and a loop device: `layerbench cleanup` ends the cluster's
    daemons and rbd-fuse by PID and start time and removes the mounts, loop devices and storage hosts."""
    dirs = _dirs(tmp_path)
    spec = {
        "name": "rbd-killed",
        "device": {"kind": "loop", "size": "2GiB"},
        "stacks": [{"device": _rbd("fuse", 3), "filesystem": "ext4", "placement": "host-dir"}],
        "workloads": [{**WRITE, "size": "64MiB", "runtime_s": 120, "ramp_s": 0}],
        "trials": {"repetitions": 1},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    ledger = dirs["state"] / "ledger.db"
    run = support.start(["run", str(path)], dirs)
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while "process" not in live_kinds(ledger):  # the workload's fio runs: the whole stack is up
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the run never started its workload"
        time.sleep(0.2)
    run.send_signal(signal.SIGKILL)  # only the process this test started
    run.wait()
    assert {"server", "rbd-fuse", "loop", "netns", "rbd-image"} <= live_kinds(ledger)
    assert _ceph_processes(dirs["work"]), "no daemon of the cluster was up: the check below would see nothing"
    cleanup = support.run(["cleanup"], dirs, timeout=300)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert live_kinds(ledger) == set()
    assert leftovers(dirs["work"]) == []
    assert _ceph_processes(dirs["work"]) == []


def _trials(db_path: Path) -> list[dict]:
    """Each trial's cell label and recorded info."""
    sql = (
        "SELECT c.stack_label, t.info_json FROM trials t JOIN cells c ON c.cell_id = t.cell_id AND c.run_id = t.run_id"
    )
    with sqlite3.connect(db_path) as db:
        return [{"label": label, "info": json.loads(info)} for label, info in db.execute(sql)]


def _ceph_processes(work: Path) -> list[str]:
    """Ceph's daemons and rbd-fuse of this run (their configuration is below its work directory)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            line = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        if line.startswith(("ceph-", "rbd-fuse")) and str(work.resolve()) in line:
            found.append(line)
    return found
