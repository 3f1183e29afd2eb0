"""A Ceph cluster the user runs (make test-ceph): a cluster layerbench's own code builds here in the test, under
a ledger of the test's, stands in for the user's; a run pointed at its conf and pool makes an image of its own
there, measures through librbd, and removes the image, leaving the pool's images and settings as they were. A
fault cell on it is refused before anything runs unless `--allow-faults-on` names the cluster's fsid; named,
one of its OSDs is held down around the trial and freed after. A run killed mid-trial, one OSD held down,
leaves its image and that OSD's flag to `cleanup`, which removes both (last: the OSD's recovery is not waited
for).

About 2 minutes here: the stand-in cluster (two OSDs, two replicas) to HEALTH_OK, a trial, a degraded trial,
`doctor` asked of it, and a killed run and its cleanup."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from layerbench import proc
from layerbench.spec.models import DeviceSpec
from layerbench.stack.ledger import Ledger
from layerbench.stack.remote.ceph import cli, cluster
from layerbench.stack.target import BuildContext
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

WRITE = {"name": "RW", "rw": "randwrite", "bs": "4k", "iodepth": 16, "size": "64MiB", "runtime_s": 3, "ramp_s": 0}


@pytest.fixture(scope="module")
def theirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[cluster.Cluster]:
    """A cluster no run under test built: two OSDs, its pool ``lb`` of two replicas holding an image of its own;
    one for the module's tests (each leaves it as it found it, which is what they check)."""
    base = tmp_path_factory.mktemp("theirs")
    work = base / "work"
    work.mkdir(mode=0o700)
    ctx = BuildContext(work, Ledger(base / "ledger.db", "theirs"), "theirs", proc.run)
    built = {"kind": "loop", "size": "1GiB", "remote": {"transport": "rbd", "cluster": {"osds": 2, "size": 2}}}
    spec = DeviceSpec.model_validate(built)
    assert spec.remote is not None
    plan = spec.remote.cluster_built()
    assert plan is not None
    with cluster.built(spec, plan, spec.remote.link, ctx) as made:
        yield made


def _images(c: cluster.Cluster) -> list[str]:
    return sorted(json.loads(cli.rbd(proc.run, c.conf, "ls", c.pool, "--format=json")))


def _pool(c: cluster.Cluster) -> dict[str, object]:
    return dict(json.loads(cli.ceph(proc.run, c.conf, "osd", "pool", "get", c.pool, "all")))


def _left(work: Path, theirs: cluster.Cluster) -> list[str]:
    """What the run left: leftovers looks machine-wide, and sees the stand-in's storage host too."""
    hosts = {name for _, h in theirs.osds for name in (f"netns {h.netns}", f"link {h.veth}")}
    return [found for found in leftovers(work) if found not in hosts]


def _spec(c: cluster.Cluster, name: str, states: list[str], runtime_s: int, pool: str = "") -> dict:
    own = [{"conf": str(c.conf), "pool": pool or c.pool, **({"state": s} if s != "healthy" else {})} for s in states]
    remote = [{"remote": {"transport": "rbd", "client": "fio", "cluster": o}} for o in own]
    return {
        "name": name,
        "device": {"kind": "loop", "size": "256MiB"},
        "stacks": [{"device": remote, "filesystem": "none", "placement": "raw"}],
        "workloads": [{**WRITE, "runtime_s": runtime_s}],
        "trials": {"repetitions": 1},
    }


def test_a_run_on_the_users_cluster_adds_and_removes_only_its_image(tmp_path: Path, theirs: cluster.Cluster) -> None:
    images, pool = _images(theirs), _pool(theirs)
    assert images == [theirs.image]  # the stand-in's own data, which the run must leave alone
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(_spec(theirs, "own-cluster", ["healthy", "degraded"], 3)))
    done = support.run(["run", str(path)], dirs, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shown = json.loads(support.run(["show", "latest", "--json"], dirs).stdout)
    (cell,) = shown["cells"]
    assert cell["stack_label"] == "loop@rbd-fio(own:lb)/none/native/raw"
    assert cell["summary"]["n"] == 1 and cell["summary"]["mean"] > 0
    assert "would hold one of your OSDs down; allow it with --allow-faults-on FSID" in done.stdout + done.stderr
    assert _images(theirs) == images and _pool(theirs) == pool
    assert _left(dirs["work"], theirs) == []


def test_a_fault_there_runs_only_where_the_flag_names_the_cluster_and_frees_its_osd(
    tmp_path: Path, theirs: cluster.Cluster
) -> None:
    images, pool = _images(theirs), _pool(theirs)
    fsid = json.loads(cli.ceph(proc.run, theirs.conf, "fsid"))["fsid"]
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(_spec(theirs, "own-degraded", ["degraded"], 3)))
    other = support.run(["run", str(path), "--dry-run", "--allow-faults-on", "0" * 8], dirs, timeout=300)
    said = " ".join(other.stdout.split())  # the plan's lines fold at the terminal's width
    assert f"--allow-faults-on names 00000000, not this cluster (fsid {fsid} in its conf)" in said, other.stdout
    done = support.run(["run", str(path), "--allow-faults-on", fsid], dirs, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with sqlite3.connect(dirs["db"]) as db:
        ((status, info),) = db.execute("SELECT status, info_json FROM trials").fetchall()
        checks = dict(db.execute("SELECT name, status FROM checks").fetchall())
    held = json.loads(info)["cluster"]
    assert status == "ok" and held["state"] == "degraded" and held["stopped"] in ("osd.0", "osd.1"), held
    assert (held["start"]["osds_up"], held["end"]["osds_up"]) == (1, 1), held  # down from start to end
    assert checks["cluster-state"] == "pass" and checks["ceph-hdd-settings"] == "skip", checks
    dump = json.loads(cli.ceph(proc.run, theirs.conf, "osd", "dump"))
    assert all(o["up"] == 1 and "noup" not in o["state"] for o in dump["osds"]), dump["osds"]  # freed
    assert _images(theirs) == images and _pool(theirs) == pool
    assert _left(dirs["work"], theirs) == []


def test_a_pool_that_is_not_there_fails_the_trial_in_cephs_words(tmp_path: Path, theirs: cluster.Cluster) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(_spec(theirs, "own-no-pool", ["healthy"], 3, pool="nosuchpool")))
    done = support.run(["run", str(path)], dirs, timeout=300)
    assert done.returncode != 0
    with sqlite3.connect(dirs["db"]) as db:
        ((category, said),) = db.execute("SELECT category, stderr FROM trials").fetchall()
    assert category == "setup-error" and "pool nosuchpool: ceph exited 2: Error ENOENT: unrecognized pool" in said
    assert _left(dirs["work"], theirs) == []


def test_doctor_asks_the_users_cluster_as_their_user_and_creates_nothing(theirs: cluster.Cluster) -> None:
    images, pool = _images(theirs), _pool(theirs)

    def rows(pool_name: str) -> list[dict[str, object]]:
        asked = ["doctor", "--json", "--ceph-conf", str(theirs.conf), "--ceph-pool", pool_name]
        done = support.run(asked, {}, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return [r for r in json.loads(done.stdout) if r["axis"] == "ceph"]

    answers, active, rbd_pool, caps = rows(theirs.pool)
    assert answers["ok"] and "HEALTH_OK" in str(answers["note"]) and "Ceph 16." in str(answers["note"])
    assert active["ok"] and rbd_pool["ok"] and rbd_pool["value"] == f"pool {theirs.pool}"
    assert caps["ok"] and "mon 'allow *'" in str(caps["note"])  # the stand-in's user is its client.admin
    _, _, missing, _ = rows("nosuchpool")
    assert not missing["ok"] and "unrecognized pool" in str(missing["note"])
    assert _images(theirs) == images and _pool(theirs) == pool


def test_a_killed_run_leaves_its_image_and_held_osd_to_cleanup(tmp_path: Path, theirs: cluster.Cluster) -> None:
    """Killed mid-trial with one OSD held down (a fault the flag allowed): `cleanup` frees the OSD and removes
    the image."""
    images = _images(theirs)
    fsid = json.loads(cli.ceph(proc.run, theirs.conf, "fsid"))["fsid"]
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(_spec(theirs, "own-killed", ["degraded"], 120)))
    ledger = dirs["state"] / "ledger.db"
    run = support.start(["run", str(path), "--allow-faults-on", fsid], dirs)
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while {"process", "rbd-own-noup"} - live_kinds(ledger):  # the OSD held down and fio running
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the run never started its workload"
        time.sleep(0.2)
    run.send_signal(signal.SIGKILL)  # only the process this test started
    run.wait()
    assert {"rbd-own-image", "rbd-own-noup"} <= live_kinds(ledger) and len(_images(theirs)) == len(images) + 1
    assert cli.parse_status(cli.ceph(proc.run, theirs.conf, "status")).osds_up == 1
    cleanup = support.run(["cleanup"], dirs, timeout=300)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert live_kinds(ledger) == set(), cleanup.stdout + cleanup.stderr
    assert _images(theirs) == images
    assert _left(dirs["work"], theirs) == []
    # Freed: the OSD boots back (the module's last test: its cluster goes next, recovered or not).
    cluster.healthy(theirs.conf, proc.run, wanted=lambda s: s.osds_up == s.osds == 2)
