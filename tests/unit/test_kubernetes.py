"""The kubernetes engine's spec, its feasibility rules, and the adapter's pure parts."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from layerbench.spec.engines import kubernetes
from layerbench.spec.engines.kubernetes import ClusterNode, KubeCaps
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.load import validate
from layerbench.spec.matrix import expand
from layerbench.spec.models import CLAIM_SIZE, EngineSpec, Limits, PlacementSpec
from layerbench.stack.engines.kubernetes import _resources, kube_api


def cluster(full_caps: HostCaps, **nodes: ClusterNode) -> HostCaps:
    return full_caps.with_engine(kubernetes.KIND, KubeCaps(nodes))


def refusals(caps: HostCaps, placement: str, node: str = "n1", **stack: object) -> list[str]:
    workload = {"kind": "ycsb", "name": "A", "mix": "a"} if "server" in stack else {"name": "RR", "rw": "randread"}
    engine = {"kind": "kubernetes", "node": node}
    one = {"device": {"kind": "zram"}, "filesystem": "ext4", "engine": engine, "placement": placement, **stack}
    spec = {"name": "k", "stacks": [one], "workloads": [workload]}
    return [r.reason for r in expand(validate(spec), caps).refused]


def test_the_kubernetes_engine_needs_a_node_and_only_it_takes_one() -> None:
    assert EngineSpec.model_validate({"kind": "kubernetes", "node": "n1"}).label() == "kubernetes(n1)"
    with pytest.raises(ValidationError, match="engine kubernetes needs node"):
        EngineSpec.model_validate({"kind": "kubernetes"})
    with pytest.raises(ValidationError, match="node is the kubernetes engine's"):
        EngineSpec.model_validate({"kind": "docker", "node": "n1"})


def test_engines_without_a_node_dump_as_before_so_their_cell_ids_stay() -> None:
    assert EngineSpec.model_validate("docker:overlay2").model_dump() == {"kind": "docker", "driver": "overlay2"}


def test_a_local_node_runs_bind_volume_and_tmpfs(full_caps: HostCaps) -> None:
    caps = cluster(full_caps, n1=ClusterNode(ready=True, local=True))
    for placement in ("bind", "volume", "tmpfs"):
        assert refusals(caps, placement) == [], placement


def test_the_filesystem_under_test_is_refused_on_a_node_of_another_machine(full_caps: HostCaps) -> None:
    caps = cluster(full_caps, n1=ClusterNode(ready=True, local=False))
    (reason,) = refusals(caps, "volume")
    assert "node 'n1' is another machine" in reason and "use tmpfs" in reason
    assert refusals(caps, "tmpfs") == []


def test_what_a_pod_cannot_be_is_refused_with_the_reason(full_caps: HostCaps) -> None:
    caps = cluster(full_caps, n1=ClusterNode(ready=True, local=True), n2=ClusterNode(ready=False, local=True))
    assert "node's container runtime keeps its root" in refusals(caps, "writable-layer")[0]
    assert refusals(caps, "tmpfs", node="n3") == ["node 'n3' is not in the cluster; its nodes: n1, n2"]
    assert refusals(caps, "tmpfs", node="n2") == ["node 'n2' is not Ready"]
    assert "no block-I/O limit" in refusals(caps, "tmpfs", limits={"read_bps": "10MiB"})[0]
    assert "static CPU manager" in refusals(caps, "tmpfs", limits={"cpuset": "0"})[0]


def test_an_unreachable_cluster_refuses_its_cells_with_why(full_caps: HostCaps) -> None:
    caps = full_caps.with_engine(kubernetes.KIND, KubeCaps("connection refused by 10.0.0.1:6443"))
    assert refusals(caps, "tmpfs") == ["no Kubernetes cluster: connection refused by 10.0.0.1:6443"]


def test_limits_become_a_guaranteed_pods_resources() -> None:
    assert _resources(Limits(cpus=0.5, memory="256MiB")) == {"cpu": "500m", "memory": str(256 * 2**20)}
    assert _resources(Limits()) == {}


def test_image_names_are_qualified_as_containerd_names_them() -> None:
    assert kube_api.qualified("layerbench/tools:abc") == "docker.io/layerbench/tools:abc"
    assert kube_api.qualified("registry.local:5000/x/y:1") == "registry.local:5000/x/y:1"
    assert kube_api.safe_name("20261126-040542-FD16") == "20261126-040542-fd16"


def test_a_containers_first_process_is_found_by_its_cgroup(tmp_path: Path) -> None:
    cid = "7ddf5598579d19ac3620ca0b3a22904c3ad373473d750e93a20a380c494795d0"
    shim, init, exec_ = tmp_path / "100", tmp_path / "200", tmp_path / "300"
    cgroup = f"4:memory:/lb30bf-node2/kubepods/besteffort/pod62/{cid}\n"
    for d, parent, group in ((shim, 1, "4:memory:/\n"), (init, 100, cgroup), (exec_, 100, cgroup)):
        d.mkdir()
        (d / "cgroup").write_text(group)
        (d / "stat").write_text(f"{d.name} (x) S {parent} 0 0\n")
    (exec_ / "stat").write_text("300 (fio) S 100 0 0\n")  # an exec is also the shim's child: the lower wins
    assert kube_api.container_pid(f"containerd://{cid}", tmp_path) == 200
    assert kube_api.container_pid("containerd://absent", tmp_path) is None


def test_an_exec_d_server_is_found_by_its_cgroup_parent_and_program(tmp_path: Path) -> None:
    """The exec's process is the shim's child in the container's cgroup, new since the exec, running the
    program: not the runtime's init on its way there, not a child of the server's, not the pod's first
    process; found also once the server has rewritten its command line (Redis's title)."""
    cid = "7ddf5598579d19ac3620ca0b3a22904c3ad373473d750e93a20a380c494795d0"
    cgroup = f"4:memory:/lb30bf-node2/kubepods/besteffort/pod62/{cid}\n"
    redis = "/usr/bin/redis-server"

    def process(pid: int, parent: int, cmdline: bytes, group: str = cgroup) -> None:
        d = tmp_path / str(pid)
        d.mkdir()
        (d / "cgroup").write_text(group)
        (d / "stat").write_text(f"{pid} (x) S {parent} 0 0\n")
        (d / "cmdline").write_bytes(cmdline)

    process(100, 1, b"containerd-shim-runc-v2\0-namespace\0k8s.io\0", "4:memory:/\n")
    process(200, 100, b"sleep\0infinity\0")  # the pod's first process, there before the exec
    process(300, 100, b"runc\0init\0")  # the runtime on its way to the program
    before = {200}
    assert kube_api.exec_pid(cid, before, redis, tmp_path) is None
    (tmp_path / "300" / "cmdline").write_bytes(b"/usr/bin/redis-server 10.21.2.5:6379" + b"\0" * 8)  # its title
    process(301, 300, b"redis-rdb-bgsave 10.21.2.5:6379\0")  # a child of the server's
    assert kube_api.exec_pid(f"containerd://{cid}", before, redis, tmp_path) == 300
    assert kube_api.exec_pid(cid, before, "/usr/lib/postgresql/15/bin/postgres", tmp_path) is None


def test_a_database_server_needs_a_node_of_this_host(full_caps: HostCaps) -> None:
    caps = cluster(full_caps, n1=ClusterNode(ready=True, local=False), n2=ClusterNode(ready=True, local=True))
    server = {"kind": "postgres", "records": 1000}
    (reason,) = refusals(caps, "tmpfs", node="n1", server=server)
    assert "reaches its server at the pod's IP" in reason
    assert refusals(caps, "tmpfs", node="n2", server=server) == []


CLAIM = {"kind": "claim", "storage_class": "fast"}


def claim_refusals(caps: HostCaps, placement: object = CLAIM, **stack: object) -> list[str]:
    one = {"device": {"kind": "none"}, "filesystem": "none", "engine": {"kind": "kubernetes", "node": "n1"}}
    one |= {"placement": placement, **stack}
    spec = {"name": "k", "stacks": [one], "workloads": [{"name": "RR", "rw": "randread"}]}
    return [r.reason for r in expand(validate(spec), caps).refused]


def test_a_claim_of_a_storage_class_runs_on_any_node_with_nothing_built_here(full_caps: HostCaps) -> None:
    caps = full_caps.with_engine(
        kubernetes.KIND,
        KubeCaps({"n1": ClusterNode(ready=True, local=False)}, {"fast": "rancher.io/local-path", "slow": "x.io/y"}),
    )
    assert claim_refusals(caps) == []  # another machine's node: the class's storage is not this host's
    assert claim_refusals(caps, {**CLAIM, "storage_class": "nvme"}) == [
        "the cluster has no StorageClass 'nvme'; its StorageClasses: fast, slow"
    ]
    (built,) = claim_refusals(caps, filesystem="ext4")
    assert "device and filesystem are the StorageClass's" in built
    (nothing,) = claim_refusals(caps, "tmpfs")
    assert "device 'none' builds nothing on this host" in nothing
    (docker,) = claim_refusals(caps, engine="docker:overlay2")
    assert "placement claim is a Kubernetes PersistentVolumeClaim" in docker


def test_a_claim_of_a_csi_class_whose_driver_the_node_does_not_run_is_refused(full_caps: HostCaps) -> None:
    """A Ceph RBD class on a cluster without Rook or ceph-csi running (here: no registry to pull their images)."""
    classes = {"ceph-rbd": "rook-ceph.rbd.csi.ceph.com", "local-path": "rancher.io/local-path"}
    runs = ClusterNode(ready=True, local=False, csi_drivers=frozenset({"rook-ceph.rbd.csi.ceph.com"}))
    caps = full_caps.with_engine(kubernetes.KIND, KubeCaps({"n1": ClusterNode(True, False, frozenset())}, classes))
    assert claim_refusals(caps, {**CLAIM, "storage_class": "ceph-rbd"}) == [
        "StorageClass 'ceph-rbd' is provisioned by the CSI driver rook-ceph.rbd.csi.ceph.com, which does not run "
        "on node 'n1' (its CSI drivers: none): a claim of it would stay Pending. Deploy the driver (for Ceph RBD: "
        "Rook or ceph-csi; a cluster that cannot pull their images cannot run them)"
    ]
    assert claim_refusals(caps, {**CLAIM, "storage_class": "local-path"}) == []  # not CSI: no CSINode lists it
    caps = full_caps.with_engine(kubernetes.KIND, KubeCaps({"n1": runs}, classes))
    assert claim_refusals(caps, {**CLAIM, "storage_class": "ceph-rbd"}) == []
    unknown = full_caps.with_engine(kubernetes.KIND, KubeCaps({"n1": ClusterNode(True, False)}, classes))
    assert claim_refusals(unknown, {**CLAIM, "storage_class": "ceph-rbd"}) == []  # CSINodes not listable: not judged
    assert [kubernetes.is_csi(p) for p in ("rbd.csi.ceph.com", "ebs.csi.aws.com", "kubernetes.io/no-provisioner")] == [
        True, True, False
    ]  # fmt: skip


def test_a_claim_names_its_class_and_dumps_a_size_other_placements_do_not() -> None:
    claim = PlacementSpec.model_validate(CLAIM)
    assert claim.label() == "claim(fast)" and claim.size == CLAIM_SIZE
    assert PlacementSpec.model_validate("bind").model_dump() == {"kind": "bind"}  # cell ids stay
    with pytest.raises(ValidationError, match="placement claim needs storage_class"):
        PlacementSpec.model_validate("claim")
    with pytest.raises(ValidationError, match="storage_class and size are placement claim's; bind has none"):
        PlacementSpec.model_validate({"kind": "bind", "storage_class": "fast"})


def test_servers_in_pods_take_cpu_and_memory_profiles_not_bandwidth_nor_tunings(full_caps: HostCaps) -> None:
    caps = cluster(full_caps, n1=ClusterNode(ready=True, local=True))
    server = {"kind": "postgres"}
    assert refusals(caps, "bind", server=server, instances=2, profile="CPU+MEM") == []
    (bandwidth,) = refusals(caps, "bind", server=server, instances=2, profile="ALL")
    assert "shares the device's bandwidth: a pod has no block-I/O limit" in bandwidth
    (tuning,) = refusals(caps, "bind", server=server, tuning="seccomp-unconfined")
    assert (
        tuning
        == "tuning 'seccomp-unconfined' is a Docker container option, not a pod's: drop it (or use engine docker)"
    )


# An exec's status as the API sends it on the error channel (the start failure's message is the one a run
# on the local cluster got when Redis's image had no sh; the status around it is the API's metav1.Status).
MISSING_SH = (
    '{"metadata":{},"status":"Failure","message":"Internal error occurred: error executing command in container: '
    'failed to exec in container: failed to start exec \\"338f6c69\\": OCI runtime exec failed: exec failed: unable '
    'to start container process: exec: \\"sh\\": executable file not found in $PATH: unknown",'
    '"reason":"InternalError","details":{"causes":[{"message":"error executing command in container"}]},"code":500}'
)


def test_an_exec_s_status_gives_its_exit_code_or_why_it_never_started() -> None:
    assert kube_api.exit_status('{"metadata":{},"status":"Success"}') == (0, "")
    failed = (
        '{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing '
        'command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode",'
        '"message":"3"}]}}'
    )
    assert kube_api.exit_status(failed) == (3, "")
    rc, why = kube_api.exit_status(MISSING_SH)
    assert rc == 126 and 'exec: "sh": executable file not found in $PATH' in why
    assert kube_api.exit_status("")[0] == 125


def test_many_clients_need_a_node_that_is_this_host(full_caps: HostCaps) -> None:
    """The fio client here reaches each pod's server through the pod's root: a node elsewhere is refused."""
    caps = cluster(full_caps, n1=ClusterNode(True, True), n2=ClusterNode(True, False))
    assert refusals(caps, "bind", "n1", clients=3) == []
    assert refusals(caps, "tmpfs", "n1", clients=[1, 2]) == []
    (far,) = refusals(caps, "tmpfs", "n2", clients=3)
    assert far.startswith("clients: the fio client on this host reaches each pod's fio server") and "'n2'" in far
    (shared,) = refusals(caps, "tmpfs", "n1", clients={"count": 2, "shared": True})
    assert shared.startswith("clients.shared: placement tmpfs cannot be shared"), shared
    assert refusals(caps, "bind", "n1", clients={"count": 2, "shared": True}) == []  # one host directory


def test_clients_dealt_over_nodes_need_every_node_here_and_ready(full_caps: HostCaps) -> None:
    """Each node a stack's clients are dealt to is checked as the engine's own node is, and named."""
    caps = cluster(full_caps, n1=ClusterNode(True, True), n2=ClusterNode(True, True), n3=ClusterNode(True, False))
    assert refusals(caps, "tmpfs", "n1", clients={"count": 4, "nodes": ["n1", "n2"]}) == []
    (far,) = refusals(caps, "tmpfs", "n1", clients={"count": 3, "nodes": ["n1", "n2", "n3"]})
    assert far.startswith("clients.nodes: clients: the fio client on this host") and "'n3'" in far, far
    (missing,) = refusals(caps, "tmpfs", "n1", clients={"count": 2, "nodes": ["n1", "n9"]})
    assert missing.startswith("clients.nodes: node 'n9' is not in the cluster"), missing


def test_a_database_s_clients_on_another_machine_s_node_are_refused_for_the_server_s_reason(
    full_caps: HostCaps,
) -> None:
    caps = cluster(full_caps, n2=ClusterNode(True, False))
    (reason,) = refusals(caps, "tmpfs", "n2", server="redis", clients=2)
    assert reason.startswith("the database client runs on this host"), reason
