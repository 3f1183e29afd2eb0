"""fio as pods on a named node of a real three-node cluster: a hostPath, a claim on a local volume, an
emptyDir in memory; limits read back from the kernel; refusals with reasons; nothing left after a run,
nor after a SIGKILL and `cleanup`."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.utils import parse_quantity

from layerbench.stack import mountinfo
from tests import support
from tests.deadlines import wait_for
from tests.integration.leftovers import assert_nothing_left, bridges, leftovers, server_dirs
from tests.k8s.cells import NODE, RR, assert_seen_or_skipped, node_spec, trials_by_label
from tests.k8s.daemons import FIO_START_S

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_k8s, pytest.mark.slow]


def layerbench(args: list[str], dirs: dict[str, Path], kubeconfig: Path) -> subprocess.CompletedProcess[str]:
    return support.run([*args, "--kubeconfig", str(kubeconfig)] if args[0] != "cleanup" else args, dirs)


def api(kubeconfig: Path) -> client.CoreV1Api:
    warnings.filterwarnings("ignore")
    return client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))


def node_images(root: Path) -> set[str]:
    """Every image name on every node's containerd (the pause image among them: the cluster's own)."""
    found = set()
    for sock in root.glob("node*/containerd.sock"):
        listed = subprocess.run(["ctr", "--address", str(sock), "-n", "k8s.io", "images", "ls", "-q"],
                                capture_output=True, text=True, check=True, timeout=60).stdout.split()  # fmt: skip
        found |= {f"{sock.parent.name}:{ref}" for ref in listed}
    return found


def cluster_leftovers(core: client.CoreV1Api, root: Path, images_before: set[str]) -> list[str]:
    """What a run may leave in the cluster: its namespaces, volumes, pods, and images on the nodes."""
    found = [f"namespace {n.metadata.name}" for n in core.list_namespace().items if n.metadata.name.startswith("lb-")]
    found += [f"volume {v.metadata.name}" for v in core.list_persistent_volume().items]
    found += [f"pod {p.metadata.name}" for p in core.list_pod_for_all_namespaces().items]
    return found + [f"image {i}" for i in sorted(node_images(root) - images_before)]


def test_fio_runs_in_pods_on_the_named_node_and_nothing_is_left(cluster: Any) -> None:
    core = api(cluster.kubeconfig)
    before, images = bridges(), node_images(Path(cluster.root))
    with server_dirs("lbk8s-run-") as dirs:
        dirs["spec"].write_text(yaml.safe_dump(node_spec("kubernetes", ["bind", "volume", "tmpfs"])))
        done = layerbench(["run", str(dirs["spec"])], dirs, cluster.kubeconfig)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "3 trials ok, 0 failed" in done.stdout
        trials = trials_by_label(dirs["db"])
        assert len(trials) == 3
        for label, (info, status) in trials.items():
            assert status == "ok", label
            target = info["target"]
            assert target["node"] == NODE and target["pod"].startswith("lb-"), target
            assert target["pid"] > 1  # found on this host by the container's cgroup
        # The node is this host (its boot id): the CPU checks read the node's own figures, the pod's
        # cgroup as the cell; a node elsewhere would record "skip: cannot see node ...".
        assert_seen_or_skipped(dirs["db"], {label: info["target"] for label, (info, _) in trials.items()})
        assert_nothing_left(dirs, before)
    assert cluster_leftovers(core, Path(cluster.root), images) == []


def claim_stack(node: str = NODE, **extra: Any) -> dict[str, Any]:
    """A stack of nothing built here: the local cluster's StorageClass local-path gives the pod its /data."""
    engine = {"kind": "kubernetes", "node": node}
    placement = {"kind": "claim", "storage_class": "local-path", "size": "1GiB"}
    return {"device": {"kind": "none"}, "filesystem": "none", "engine": engine, "placement": placement, **extra}


def test_a_claim_of_the_clusters_storage_class_gets_what_the_class_provisions(cluster: Any) -> None:
    core = api(cluster.kubeconfig)
    before, images = bridges(), node_images(Path(cluster.root))
    with server_dirs("lbk8s-claim-") as dirs:
        # With limits: read back from the pod's cgroup (node3 is this host) though no device is here.
        limited = claim_stack("node3", limits={"cpus": 0.5, "memory": "256MiB"})
        spec = {**node_spec("kubernetes", ["tmpfs"]), "stacks": [limited]}
        dirs["spec"].write_text(yaml.safe_dump(spec))
        done = layerbench(["run", str(dirs["spec"])], dirs, cluster.kubeconfig)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 trials ok, 0 failed" in done.stdout
        ((info, status),) = trials_by_label(dirs["db"]).values()
        assert status == "ok"
        claim, data = info["target"]["claim"], info["target"]["data_mount"]
        enforced = info["target"]["limits_enforced"]
        assert (enforced["cpus"], enforced["memory"]) == (pytest.approx(0.5), 256 * 2**20), enforced
        assert claim["provisioner"] == "layerbench.local/local-path" and claim["source"] == "local", claim
        assert claim["capacity"] == claim["requested"] == str(2**30), claim
        # What the class gave: a directory the provisioner made on this host's root filesystem.
        assert data["root"] == f"{cluster.root}/volumes/{claim['volume']}", data
        (host_fs, *_) = mountinfo.holding(mountinfo.parse(mountinfo.read(None)), cluster.root)
        assert (data["fs_type"], data["source"]) == (host_fs.fs_type, host_fs.source), (data, host_fs)
        with sqlite3.connect(dirs["db"]) as db:
            checks = dict(db.execute("SELECT name, status FROM checks"))
        assert checks["device-accounting"] == "skip"  # no device here to count: the check says it cannot see
        assert_seen_or_skipped(
            dirs["db"], {label: i["target"] for label, (i, _) in trials_by_label(dirs["db"]).items()}
        )
        assert_nothing_left(dirs, before)
    assert cluster_leftovers(core, Path(cluster.root), images) == []
    assert list((Path(cluster.root) / "volumes").iterdir()) == []  # the class reclaimed its volume


def test_cells_a_cluster_cannot_run_are_refused_with_reasons(cluster: Any) -> None:
    """Each with its reason, a Ceph RBD StorageClass among them: the class exists, its CSI driver (Rook's, whose
    images this cluster cannot pull) runs on no node."""
    storage = client.StorageV1Api(api(cluster.kubeconfig).api_client)
    ceph = client.V1StorageClass(metadata=client.V1ObjectMeta(name="ceph-rbd"), provisioner=CEPH_CSI)
    storage.create_storage_class(ceph, _request_timeout=30)
    try:
        _refused_with_reasons(cluster)
    finally:
        storage.delete_storage_class("ceph-rbd", _request_timeout=30)


CEPH_CSI = "rook-ceph.rbd.csi.ceph.com"


def _refused_with_reasons(cluster: Any) -> None:
    with server_dirs("lbk8s-refused-") as dirs:
        wrong = node_spec("kubernetes", ["writable-layer"])
        wrong["stacks"].append({"filesystem": "ext4", "engine": {"kind": "kubernetes", "node": "node9"},
                                "placement": "tmpfs"})  # fmt: skip
        wrong["stacks"].append({"filesystem": "ext4", "engine": {"kind": "kubernetes", "node": NODE},
                                "placement": "tmpfs", "limits": {"write_bps": "10MiB"}})  # fmt: skip
        wrong["stacks"].append({**claim_stack(), "placement": {"kind": "claim", "storage_class": "nvme"}})
        wrong["stacks"].append({**claim_stack(), "placement": {"kind": "claim", "storage_class": "ceph-rbd"}})
        dirs["spec"].write_text(yaml.safe_dump(wrong))
        done = layerbench(["run", str(dirs["spec"]), "--dry-run"], dirs, cluster.kubeconfig)
        assert done.returncode == 0, done.stderr
        text = " ".join(done.stdout.split())
        assert "writable layer is wherever the node's container runtime keeps its root" in text
        assert "node 'node9' is not in the cluster; its nodes: node1, node2, node3" in text
        assert "Kubernetes has no block-I/O limit" in text
        assert "the cluster has no StorageClass 'nvme'; its StorageClasses: ceph-rbd, local-path" in text
        assert (
            f"StorageClass 'ceph-rbd' is provisioned by the CSI driver {CEPH_CSI}, which does not run on node" in text
        )


def test_sigkill_then_cleanup_leaves_nothing_in_the_cluster(cluster: Any) -> None:
    core = api(cluster.kubeconfig)
    before, images = bridges(), node_images(Path(cluster.root))
    with server_dirs("lbk8s-kill-") as dirs:
        long = {**RR, "runtime_s": 600}
        dirs["spec"].write_text(yaml.safe_dump(node_spec("kubernetes", ["volume"], workload=long)))
        proc = support.start(["run", str(dirs["spec"]), "--kubeconfig", str(cluster.kubeconfig)], dirs)
        try:
            _wait_for_fio(core, proc)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate()
        assert [n for n in core.list_namespace().items if n.metadata.name.startswith("lb-")]  # the kill left it
        cleaned = support.run(["cleanup"], dirs)
        assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
        assert "k8s-namespace" in cleaned.stdout
        assert leftovers(dirs["work"]) == [] and bridges() <= before  # the run's dir stays, for `resume`
        with sqlite3.connect(dirs["state"] / "ledger.db") as db:
            assert db.execute("SELECT kind, ident FROM resources WHERE removed_at IS NULL").fetchall() == []
    assert cluster_leftovers(core, Path(cluster.root), images) == []


def _wait_for_fio(core: client.CoreV1Api, proc: subprocess.Popen[str]) -> None:
    """Until a pod of the run is running fio (a state, whatever the machine's speed)."""

    def running() -> bool:
        pods = core.list_pod_for_all_namespaces(label_selector="layerbench.run").items
        return bool(pods) and pods[0].status.phase == "Running" and _fio_in(pods[0])

    wait_for(running, "a pod of the run to run fio", FIO_START_S, alive=lambda: proc.poll() is None)


def _fio_in(pod: client.V1Pod) -> bool:
    status = (pod.status.container_statuses or [None])[0]
    if status is None or not status.container_id:
        return False
    cid = status.container_id.split("://")[-1]
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"fio" in cmdline.read_bytes().split(b"\0")[0] and cid in (cmdline.parent / "cgroup").read_text():
                return True
        except OSError:
            continue
    return False


def test_doctor_reports_the_cluster_its_nodes_and_storage_classes(cluster: Any) -> None:
    argv = [sys.executable, "-m", "layerbench.cli", "doctor", "--json", "--kubeconfig", str(cluster.kubeconfig)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = {r["value"]: r for r in json.loads(done.stdout) if r["axis"] == "kubernetes"}
    assert rows["cluster"]["ok"] and "Kubernetes v1.32.2" in rows["cluster"]["note"]
    for name in ("node1", "node2", "node3"):
        assert rows[f"node {name}"]["ok"] and rows[f"node {name}"]["note"].startswith("this host")
    assert rows["storage classes"]["note"] == "local-path (layerbench.local/local-path)"  # the claim's class


@pytest.mark.requires_db
def test_postgresql_serves_from_pods_on_a_hostpath_and_a_class_claim(cluster: Any) -> None:
    core = api(cluster.kubeconfig)
    before, images = bridges(), node_images(Path(cluster.root))
    server = {"kind": "postgres", "records": 2000, "scale": 2}
    workloads = [
        {"kind": "ycsb", "name": "A", "mix": "a", "threads": 2, "runtime_s": 2, "warmup_s": 1},
        {"kind": "pgbench", "name": "tpcb", "clients": 2, "runtime_s": 2},
    ]
    with server_dirs("lbk8s-db-") as dirs:
        # A hostPath and a class's claim (the local volume's claim is fio's test: the same pod path).
        db_spec = {**node_spec("kubernetes", ["bind"], server=server), "workloads": workloads}
        # Seed 000's CPU+MEM profile: two servers share what a pod can still request on the node.
        db_spec["stacks"].append(claim_stack(server=server, instances=2, profile="CPU+MEM"))
        dirs["spec"].write_text(yaml.safe_dump(db_spec))
        done = layerbench(["run", str(dirs["spec"])], dirs, cluster.kubeconfig)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "4 trials ok, 0 failed" in done.stdout
        with sqlite3.connect(dirs["db"]) as db:
            ops = db.execute("SELECT COUNT(*) FROM samples WHERE metric='ops' AND value > 0").fetchone()[0]
        assert ops >= 4  # every trial measured operations against the server in its pod
        shared = [info["endpoints"] for info, _ in trials_by_label(dirs["db"]).values() if len(info["endpoints"]) == 2]
        assert len(shared) == 2, shared  # the profiled stack's two trials
        (room,) = {tuple(e["limits_enforced"][k] for k in ("cpus", "memory")) for e in shared[0] + shared[1]}
        allocatable = core.read_node(NODE).status.allocatable
        assert 2 * room[0] <= float(allocatable["cpu"]) and room[0] > 0, room  # halves, read back from the cgroup
        assert 2 * room[1] <= parse_quantity(allocatable["memory"]), room
        assert_nothing_left(dirs, before)
    assert cluster_leftovers(core, Path(cluster.root), images) == []


def test_parallel_nodes_gives_one_run_per_node(cluster: Any) -> None:
    core = api(cluster.kubeconfig)
    before, images = bridges(), node_images(Path(cluster.root))
    with server_dirs("lbk8s-nodes-") as dirs:
        two = node_spec("kubernetes", ["tmpfs"])
        two["stacks"][0]["engine"] = [{"kind": "kubernetes", "node": n} for n in ("node1", "node3")]
        dirs["spec"].write_text(yaml.safe_dump(two))
        done = layerbench(["run", str(dirs["spec"]), "--parallel-nodes"], dirs, cluster.kubeconfig)
        assert done.returncode == 0, done.stdout + done.stderr
        said = " ".join(done.stdout.split())
        assert "[node1]" in said and "[node3]" in said
        warned = " ".join(done.stderr.split())
        assert "node1, node3 run on this one machine and contend" in warned  # the local cluster shares one host
        with sqlite3.connect(dirs["db"]) as db:
            runs = db.execute("SELECT id, host_json, status FROM runs").fetchall()
            per_run = dict(db.execute("SELECT run_id, COUNT(*) FROM trials WHERE status='ok' GROUP BY run_id"))
        assert sorted(json.loads(h)["node"] for _, h, _ in runs) == ["node1", "node3"]
        assert all(status == "finished" and per_run[rid] == 1 for rid, _, status in runs)
        assert_nothing_left(dirs, before)
    assert cluster_leftovers(core, Path(cluster.root), images) == []


OWN = Path(__file__).parents[1] / "data" / "jobfiles" / "layerbench" / "own"
JOB_SIZE = 32 * 2**20
KBENCH_JOBS = ("rand-read-iops", "seq-read-iops", "rand-write-iops")


def test_a_kbench_shaped_job_file_runs_on_a_claim_each_job_moving_the_size_given(cluster: Any) -> None:
    """Our job file written as Longhorn kbench writes its own (sections in turn, relative includes, no size and
    no target) in a pod on a claim: its includes read here, the file fio runs sent to the pod, and every job
    makes one pass over the workload's size (issue 55: job files on every engine)."""
    core = api(cluster.kubeconfig)
    before, images = bridges(), node_images(Path(cluster.root))
    with server_dirs("lbk8s-jobfile-") as dirs:
        workload = {"name": "kbench", "job_file": str(OWN / "iops-quick.fio"), "size": "32MiB"}
        spec = {**node_spec("kubernetes", ["tmpfs"], workload=workload), "stacks": [claim_stack()]}
        dirs["spec"].write_text(yaml.safe_dump(spec))
        done = layerbench(["run", str(dirs["spec"])], dirs, cluster.kubeconfig)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 trials ok, 0 failed" in done.stdout
        ((info, status),) = trials_by_label(dirs["db"]).values()
        assert status == "ok" and info["target"]["claim"]["provisioner"] == "layerbench.local/local-path"
        given = {o["option"]: o for o in info["job_options"]}
        assert given["size"]["applied"] == list(KBENCH_JOBS) and given["size"]["overridden"] == []
        with sqlite3.connect(dirs["db"]) as db:
            query = "SELECT job, sum(value) FROM samples WHERE metric = 'io_bytes' GROUP BY job"
            moved = dict(db.execute(query).fetchall())
        assert moved == dict.fromkeys(KBENCH_JOBS, JOB_SIZE)
        assert_nothing_left(dirs, before)
    assert cluster_leftovers(core, Path(cluster.root), images) == []
