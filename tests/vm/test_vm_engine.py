"""The vm and vm+docker engines, run from this host as a user runs it: fio in a guest whose disk is the
stack's loop device (raw), and in a container in a guest on a bind mount of the guest's filesystem
(seed 002's VM-C-H), beside the same cells natively; a personality's job file goes through each
engine's ``put``. seybold-models' rows boot the other guest paths with a real server: a guest whose
disk is a file on the stack's ext4 (VM-L) and a container's writable layer in a guest (VM-C-L).
Each guest path boots once in the tier: under emulation a boot takes minutes.

Under TCG (no usable KVM here) the spec must allow emulation, and every VM trial is flagged
not comparable: this proves function, never speed.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
import yaml

from layerbench.spec.load import preset_text
from layerbench.stack.capabilities import DEFAULT_CACHE
from layerbench.stack.engines.vm import qemu
from tests import support
from tests.integration.leftovers import leftovers

pytestmark = [
    pytest.mark.requires_vm,
    pytest.mark.requires_root,
    pytest.mark.requires_fio,
    pytest.mark.slow,
    # Each run boots two guests under emulation: about 5 minutes each here (measured). The deadline leaves
    # room after RUN_LIMIT_S for an interrupted run's teardown (tests/support.TEARDOWN_S).
    pytest.mark.timeout(1000),
]

SPEC = """\
name: vm-engine
emulation: {emulation}
device: {{kind: loop, size: 768MiB}}
stacks:
  - {{filesystem: none, engine: [native, vm], placement: raw}}
  - {{filesystem: ext4, engine: native, placement: host-dir}}
  - {{filesystem: ext4, engine: "vm+docker", placement: bind}}
workloads:
  - {{name: RR, rw: randread, bs: 4k, numjobs: 1, iodepth: 8, size: 64MiB, runtime_s: 2, ramp_s: 0.5}}
  - {{name: web, personality: webserver-like, scale: 0.05}}
baseline: {{engine: native}}
trials: {{repetitions: 1}}
"""
RUN_LIMIT_S = 840.0  # inside the test's own deadline, so a stuck run fails with its output


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    return {"db": tmp_path / "results.db", "work": tmp_path / "work", "state": tmp_path / "state"}


def _spec(tmp_path: Path, emulation: str) -> str:
    path = tmp_path / f"vm-{emulation}.yaml"
    path.write_text(SPEC.format(emulation=emulation))
    return str(path)


def _show(dirs: dict[str, Path]) -> dict:
    shown = support.run(["show", "latest", "--json"], dirs)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def test_fio_runs_in_a_guest_and_in_a_container_in_a_guest(dirs: dict[str, Path], tmp_path: Path) -> None:
    done = support.run(["run", _spec(tmp_path, "allow")], dirs, timeout=RUN_LIMIT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with sqlite3.connect(dirs["db"]) as db:
        rows = db.execute("SELECT status, category, stderr, info_json FROM trials").fetchall()
    assert rows and all(r[0] == "ok" for r in rows), [r[:3] for r in rows]
    infos = [json.loads(r[3]) for r in rows]
    guests = [(i["engine"], i["target"]) for i in infos if i["engine"] in ("vm", "vm+docker")]
    # The guest's disk file on the host's ext4 (VM-L) and a container's writable layer in a guest (VM-C-L)
    # boot in the seybold-models test below: each guest path once in the tier.
    assert {(e, t["placement"]) for e, t in guests} == {("vm", "raw"), ("vm+docker", "bind")}
    assert all(t["fio_sha256"] and t["guest_kernel"] and t["accel"] in ("kvm", "tcg") for _, t in guests)
    cells = _show(dirs)["cells"]
    in_guests = [c for c in cells if "/vm" in c["stack_label"]]
    assert len(in_guests) == 2 * 2  # both workloads in each of the two guest stacks
    if guests[0][1]["accel"] == "tcg":
        assert all(any(f["name"] == "not-comparable" for f in c["flags"]) for c in in_guests), in_guests
    assert leftovers(dirs["work"], beside_others=True) == []
    with sqlite3.connect(dirs["state"] / "ledger.db") as db:
        assert db.execute("SELECT kind, ident FROM resources WHERE removed_at IS NULL").fetchall() == []


def test_vm_cells_are_refused_where_only_emulation_could_run_them(dirs: dict[str, Path], tmp_path: Path) -> None:
    done = support.run(["run", _spec(tmp_path, "refuse"), "--dry-run"], dirs)
    assert done.returncode == 0, done.stderr
    accel = qemu.accel_for(qemu.require(DEFAULT_CACHE), tmp_path)  # the same probe the run made
    refused = "KVM cannot run a guest on this host" in " ".join(done.stdout.split())
    assert refused == (accel == "tcg"), done.stdout


def _seybold_models_small() -> dict:
    """The seybold-models preset as it is, but for its size: one small data set, one short mix, one round,
    and only the rows a guest adds: the host (the baseline), VM-L and VM-C-L. The container rows on the
    host (P-C-L, P-C-H) are the host tier's, and VM-C-H differs from VM-C-L only by a placement that
    test_fio_runs_in_a_guest_and_in_a_container_in_a_guest proves in a guest already."""
    spec = yaml.safe_load(preset_text("seybold-models"))
    small = {"kind": "postgres", "memory": "128MiB", "records": 2000}
    native, _containers, in_vm, in_vm_docker = spec["stacks"]
    stacks = [native, in_vm, {**in_vm_docker, "placement": "writable-layer"}]
    return {
        **spec,
        "emulation": "allow",
        "stacks": [{**entry, "server": [small]} for entry in stacks],
        "workloads": [{**spec["workloads"][1], "runtime_s": 3, "warmup_s": 1}],
        "trials": {"repetitions": 1},
    }


@pytest.mark.requires_db
@pytest.mark.requires_docker
def test_seybold_models_vm_rows_run_a_real_server_in_a_guest(tmp_path: Path) -> None:
    # Below /var/tmp, as the default work dir is: the native server's user must pass (pytest's tmp is 0700).
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="lb-vm-db-test-"))
    base.chmod(0o711)
    try:
        _seybold_models_small_runs({"db": base / "r.db", "work": base / "work", "state": base / "state"}, tmp_path)
    finally:
        shutil.rmtree(base)


def _seybold_models_small_runs(dirs: dict[str, Path], tmp_path: Path) -> None:
    spec = tmp_path / "seybold-small.yaml"
    spec.write_text(yaml.safe_dump(_seybold_models_small()))
    done = support.run(["run", str(spec)], dirs, timeout=RUN_LIMIT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with sqlite3.connect(dirs["db"]) as db:
        rows = db.execute("SELECT status, stderr, info_json FROM trials").fetchall()
    assert len(rows) == 3 and all(r[0] == "ok" for r in rows), [r[:2] for r in rows]  # P, VM-L and VM-C-L
    endpoints = [e for r in rows for e in json.loads(r[2])["endpoints"]]
    in_guest = [e for e in endpoints if "accel" in e]
    assert len(in_guest) == 2 and all(e["host"] == "127.0.0.1" and e["guest_kernel"] for e in in_guest)
    assert sum("container" in e for e in in_guest) == 1  # VM-C-L: a container in the guest
    shown = _show(dirs)
    assert not shown["refused"]
    guest_cells = [c for c in shown["cells"] if "/vm" in c["stack_label"]]
    assert len(guest_cells) == 2 and all(c["summary"]["n"] == 1 for c in guest_cells)
    if in_guest[0]["accel"] == "tcg":
        assert all(any(f["name"] == "not-comparable" for f in c["flags"]) for c in guest_cells), guest_cells
    assert leftovers(dirs["work"], beside_others=True) == []
