"""A real Kubernetes cluster on this host: etcd, the control plane, and kubelets in network namespaces.

Built from what `tools/build-k8s.sh` leaves in the cache (kube-apiserver, kube-controller-manager,
kube-scheduler, kubelet v1.32.2, the pause binary) and Debian's etcd, containerd and CNI plugins. Every
node is a network namespace with its own containerd (own root, state, socket and CNI bridge) and
kubelet (own root dir, cgroup root, pod logs). The control plane runs on the host, listening on the
nodes' bridge. Everything lives under one directory and is described by its state.json, so `down`
can take a cluster apart from another process, after a crash too.

Fixes this host needs (cgroup v1 without systemd), measured in issue 14: the kubelet's cgroup root
made in every hierarchy beforehand, `failCgroupV1: false`, containerd's `restrict_oom_score_adj`
(runc fails on negative OOM scores here), the apiserver reaching kubelets by InternalIP (a node IP
cannot be loopback: hence the namespaces).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import ssl
import subprocess
import sys
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from layerbench.stack.image_archive import ImageRecipe, write_archive
from layerbench.stack.ports import free_ports
from localcluster import netns, procs, provisioner
from localcluster.netns import Network, Node

PAUSE_IMAGE = "layerbench/pause:1"
APISERVER_PORT = 6443
CRI_SOCKET_ANNOTATION = "kubeadm.alpha.kubernetes.io/cri-socket"  # kubeadm's convention; layerbench reads it
# Each wait of `up` guards against a hang: the whole takes 8 s alone and must fail with its reasons inside
# the first test's own limit (pytest-timeout's 300 s), not be cut off by it.
START_LIMIT_S = 120.0
# klog's error and fatal lines (E1127 21:42:11.123456 ...) but those every kubelet here logs, Ready or not:
# cAdvisor finds no device for a loop-backed or virtual disk.
KLOG_ERROR = r"^[EF]\d{4} (?!.*filesystem info)"


@dataclass
class State:
    root: str
    tag: str
    subnet: int
    names: list[str]
    token: str
    etcd_port: int = 0
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def network(self) -> Network:
        return netns.plan(self.tag, self.subnet, self.names)

    @property
    def kubeconfig(self) -> Path:
        return Path(self.root) / "admin.kubeconfig"

    def save(self) -> None:
        (Path(self.root) / "state.json").write_text(json.dumps(asdict(self), indent=1))


def load(root: Path) -> State:
    return State(**json.loads((root / "state.json").read_text()))


def up(root: Path, bin_dir: Path, nodes: int = 3, subnet: int = 77) -> State:
    """A cluster of ``nodes`` Ready nodes under ``root`` (which must not exist); on failure, nothing left."""
    root.mkdir(parents=True)
    names = [f"node{i + 1}" for i in range(nodes)]
    state = State(str(root), secrets.token_hex(2), subnet, names, secrets.token_hex(16))
    state.save()
    try:
        netns.create(state.network)
        state.save()
        _control_plane(state, bin_dir)
        pause = write_archive(
            ImageRecipe(PAUSE_IMAGE, {"pause": str(bin_dir / "pause")}, [], [str(bin_dir / "pause")]),
            root / "pause.tar",
        )
        for i, node in enumerate(state.network.nodes):
            _node(state, node, i, bin_dir, pause)
        procs.wait_for(lambda: _ready(state), START_LIMIT_S, f"{nodes} nodes Ready", why=lambda: _not_ready(state))
        for i, node in enumerate(state.network.nodes):
            _annotate(state, node, i)
        _provisioner(state)
    except BaseException:
        down(root)
        raise
    return state


def _control_plane(state: State, bin_dir: Path) -> None:
    root = Path(state.root)
    host = state.network.host_ip
    (root / "tokens.csv").write_text(f'{state.token},admin,admin,"system:masters"\n')
    subprocess.run(
        ["openssl", "genrsa", "-out", str(root / "sa.key"), "2048"], check=True, capture_output=True, timeout=60
    )
    _kubeconfig(state, state.kubeconfig)
    # etcd's fsyncs on a busy disk (a build beside the tests) stall the apiserver until nodes look dead:
    # a throwaway cluster's store lives in memory.
    (root / "etcd").mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=512m,mode=0700", "lb-etcd", str(root / "etcd")], check=True, timeout=60
    )
    state.etcd_port, peer = free_ports(2)
    etcd = f"http://127.0.0.1:{state.etcd_port}"
    state.pids["etcd"] = procs.start(
        ["etcd", "--name", "lb", "--data-dir", str(root / "etcd"), "--listen-client-urls", etcd,
         "--advertise-client-urls", etcd, "--listen-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-cluster", f"lb=http://127.0.0.1:{peer}"],
        root / "etcd.log")  # fmt: skip
    state.save()
    state.pids["kube-apiserver"] = procs.start(
        [str(bin_dir / "kube-apiserver"), f"--etcd-servers={etcd}", f"--bind-address={host}",
         f"--advertise-address={host}", f"--secure-port={APISERVER_PORT}", f"--cert-dir={root / 'pki'}",
         f"--token-auth-file={root / 'tokens.csv'}", "--authorization-mode=RBAC",
         "--service-cluster-ip-range=10.96.0.0/16", "--service-account-issuer=https://kubernetes.default.svc",
         f"--service-account-key-file={root / 'sa.key'}", f"--service-account-signing-key-file={root / 'sa.key'}",
         "--kubelet-preferred-address-types=InternalIP", "--allow-privileged=true", "--profiling=false"],
        root / "kube-apiserver.log")  # fmt: skip
    state.save()
    procs.wait_for(lambda: _api(state, "/readyz") == "ok", START_LIMIT_S, "the apiserver's /readyz")
    admin = ["--kubeconfig", str(state.kubeconfig), "--leader-elect=false", "--profiling=false"]
    state.pids["kube-controller-manager"] = procs.start(
        # A node is given minutes, not 40 s, before it counts as dead: a loaded test host is slow, not down.
        [str(bin_dir / "kube-controller-manager"), *admin, "--secure-port=0", "--use-service-account-credentials=false",
         "--node-monitor-grace-period=5m",
         f"--service-account-private-key-file={root / 'sa.key'}", f"--root-ca-file={root / 'pki' / 'apiserver.crt'}"],
        root / "kube-controller-manager.log")  # fmt: skip
    state.pids["kube-scheduler"] = procs.start(
        [str(bin_dir / "kube-scheduler"), *admin, "--secure-port=0"], root / "kube-scheduler.log"
    )
    state.save()


def _node(state: State, node: Node, i: int, bin_dir: Path, pause: Path) -> None:
    d = Path(state.root) / node.name
    d.mkdir()
    (d / "cni").mkdir()
    (d / "cni" / "10-bridge.conflist").write_text(json.dumps(_cni(state, node, i, d)))
    (d / "containerd.toml").write_text(_containerd_config(d))
    sock = d / "containerd.sock"
    state.pids[f"{node.name}/containerd"] = procs.start(
        [*node.enter(), "containerd", "--config", str(d / "containerd.toml")], d / "containerd.log"
    )
    state.save()
    procs.wait_for(sock.exists, START_LIMIT_S, f"{node.name}'s containerd socket")
    subprocess.run(["ctr", "--address", str(sock), "-n", "k8s.io", "images", "import", str(pause)],
                   check=True, capture_output=True, timeout=60)  # fmt: skip
    procs.make_cgroup(_cgroup_root(state, node))
    (d / "kubelet.yaml").write_text(json.dumps(_kubelet_config(state, node, d)))
    _kubeconfig(state, d / "kubelet.kubeconfig")
    state.pids[f"{node.name}/kubelet"] = procs.start(
        [*node.enter(), str(bin_dir / "kubelet"), f"--config={d / 'kubelet.yaml'}",
         f"--kubeconfig={d / 'kubelet.kubeconfig'}", f"--root-dir={d / 'kubelet'}", f"--cert-dir={d / 'pki'}",
         f"--hostname-override={node.name}", f"--node-ip={node.ip}"],
        d / "kubelet.log")  # fmt: skip
    state.save()
    netns.route_to(state.network, node, _pod_cidr(state, i))


def _provisioner(state: State) -> None:
    """The StorageClass local-path and its provisioner (provisioner.py), a process of the cluster's."""
    root = Path(state.root)
    script = Path(__file__).with_name("provisioner.py")
    argv = [sys.executable, str(script), str(state.kubeconfig), str(root / "volumes")]
    state.pids["provisioner"] = procs.start(argv, root / "provisioner.log")
    state.save()
    path = f"/apis/storage.k8s.io/v1/storageclasses/{provisioner.CLASS}"
    procs.wait_for(lambda: bool(_api(state, path)), START_LIMIT_S, f"the StorageClass {provisioner.CLASS}")


def _pod_cidr(state: State, i: int) -> str:
    return f"10.{state.subnet + 1}.{i + 1}.0/24"


def _cgroup_root(state: State, node: Node) -> str:
    return f"lb{state.tag}-{node.name}"


def _cni(state: State, node: Node, i: int, d: Path) -> dict[str, Any]:
    # The default route: a pod answers this host (a database client) through its node.
    ipam = {
        "type": "host-local",
        "ranges": [[{"subnet": _pod_cidr(state, i)}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": str(d / "ipam"),
    }
    bridge = {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": False, "ipam": ipam}
    return {"cniVersion": "1.0.0", "name": f"lb{state.tag}-{node.name}", "plugins": [bridge]}


def _containerd_config(d: Path) -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{d / "containerd"}"
state = "{d / "containerd-state"}"
[grpc]
  address = "{d / "containerd.sock"}"
[ttrpc]
  address = "{d / "containerd.sock.ttrpc"}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{d / "opt"}"
[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
[{cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{d / "cni"}"
[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[{cri}.containerd.runtimes.runc.options]
  Root = "{d / "runc"}"
"""


def _kubelet_config(state: State, node: Node, d: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{_cgroup_root(state, node)}",
        "containerRuntimeEndpoint": f"unix://{d / 'containerd.sock'}",
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "address": node.ip,
        "readOnlyPort": 0,
        "healthzPort": 0,
        "failSwapOn": False,
        # A shared test host's disk and memory are not the node's to defend: no evictions.
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "resolvConf": "",
        "podLogsDir": str(d / "pod-logs"),
        "localStorageCapacityIsolation": False,
    }


def _kubeconfig(state: State, path: Path) -> None:
    server = f"https://{state.network.host_ip}:{APISERVER_PORT}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        # The apiserver's certificate is the self-signed one it made for itself: a test cluster's.
        "clusters": [{"name": "lb", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "admin", "user": {"token": state.token}}],
        "contexts": [{"name": "lb", "context": {"cluster": "lb", "user": "admin"}}],
        "current-context": "lb",
    }
    path.write_text(json.dumps(config))


def _api(state: State, path: str, patch: dict[str, Any] | None = None) -> str:
    """The apiserver's answer to a GET (or a merge PATCH) as text; "" while it cannot answer."""
    tls = ssl.create_default_context()
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE  # its own self-signed certificate
    data = json.dumps(patch).encode() if patch is not None else None
    req = urllib.request.Request(f"https://{state.network.host_ip}:{APISERVER_PORT}{path}", data=data)
    req.add_header("Authorization", f"Bearer {state.token}")
    if patch is not None:
        req.method = "PATCH"
        req.add_header("Content-Type", "application/merge-patch+json")
    try:
        with urllib.request.urlopen(req, context=tls, timeout=5) as resp:
            return resp.read().decode()
    except OSError:
        return ""


def _ready(state: State) -> bool:
    text = _api(state, "/api/v1/nodes")
    if not text:
        return False
    ready = [
        n["metadata"]["name"]
        for n in json.loads(text)["items"]
        if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
    ]
    return sorted(ready) == sorted(state.names)


def _not_ready(state: State) -> str:
    """Each node's condition and its processes' latest errors: why the cluster is not up."""
    text = _api(state, "/api/v1/nodes")
    seen = {n["metadata"]["name"]: n for n in json.loads(text)["items"]} if text else {}
    parts = [] if text else ["the apiserver does not answer"]
    for node in state.names:
        d = Path(state.root) / node
        procs_alive = ", ".join(
            f"{what} {'running' if procs.alive(state.pids.get(f'{node}/{what}', 0)) else 'not running'}"
            for what in ("containerd", "kubelet")
        )
        conditions = [
            f"{c['type']}={c['status']} ({c.get('message', '')})"
            for c in seen.get(node, {}).get("status", {}).get("conditions", [])
            if c["type"] == "Ready"
        ] or ["not registered"]
        errors = [
            *procs.log_tail(d / "kubelet.log", pattern=KLOG_ERROR),
            *procs.log_tail(d / "containerd.log", 2, pattern="level=(error|fatal)"),
        ]
        parts.append(f"{node}: {procs_alive}; {'; '.join(conditions)}; latest: {' | '.join(errors) or 'none'}")
    return " / ".join(parts)


def _annotate(state: State, node: Node, i: int) -> None:
    """Where the node's containerd listens, as kubeadm records it: layerbench loads its images there."""
    sock = Path(state.root) / node.name / "containerd.sock"
    patch = {"metadata": {"annotations": {CRI_SOCKET_ANNOTATION: f"unix://{sock}"}}}
    if not _api(state, f"/api/v1/nodes/{node.name}", patch):
        raise RuntimeError(f"could not annotate {node.name} with its containerd socket")


def down(root: Path) -> list[str]:
    """Take the cluster under ``root`` apart, whatever state it is in; what could not be removed, named."""
    if not (root / "state.json").exists():
        shutil.rmtree(root, ignore_errors=True)
        return []
    state = load(root)
    for name in [n for n in state.pids if n.endswith("/kubelet")]:
        procs.stop(state.pids.pop(name))
    for node in state.network.nodes:
        _stop_runtime(state, node)
    for name in ("provisioner", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
        if name in state.pids:
            procs.stop(state.pids.pop(name))
    left = procs.unmount_under(root)
    for node in state.network.nodes:
        left += procs.remove_cgroup(_cgroup_root(state, node))
        for cached in Path("/var/lib/cni/results").glob(f"lb{state.tag}-{node.name}-*"):
            cached.unlink()
    left += netns.delete(state.network)
    if not left:
        shutil.rmtree(root, ignore_errors=True)
    return left


def _stop_runtime(state: State, node: Node) -> None:
    """The node's containers (their shims exit with them), then its containerd."""
    sock = str(Path(state.root) / node.name / "containerd.sock")
    key = f"{node.name}/containerd"
    if key not in state.pids:
        return
    if procs.alive(state.pids[key]):
        ctr = ["ctr", "--address", sock, "-n", "k8s.io"]
        tasks = subprocess.run([*ctr, "tasks", "ls", "-q"], capture_output=True, text=True, timeout=60).stdout.split()
        for task in tasks:
            subprocess.run([*ctr, "tasks", "kill", "-s", "SIGKILL", task], capture_output=True, timeout=60)
        for task in tasks:
            subprocess.run([*ctr, "tasks", "delete", "-f", task], capture_output=True, timeout=60)
        listed = subprocess.run([*ctr, "containers", "ls", "-q"], capture_output=True, text=True, timeout=60)
        for c in listed.stdout.split():
            subprocess.run([*ctr, "containers", "delete", c], capture_output=True, timeout=60)
    procs.stop(state.pids.pop(key))
    for pid in _shims(sock):
        with contextlib.suppress(ProcessLookupError):
            procs.stop(pid, grace_s=5.0)


def _shims(sock: str) -> list[int]:
    """Shims of this node's containerd: started with its socket as their -address."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            args = cmdline.read_bytes().split(b"\0")
            if sock.encode() in args and any(a.endswith(b"containerd-shim-runc-v2") for a in args[:1]):
                found.append(int(cmdline.parent.name))
    return found
