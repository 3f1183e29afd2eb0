"""Kubernetes through its official Python client: the cluster's nodes, a run's namespace, pods, exec.

Everything layerbench creates in a cluster carries the label ``layerbench.run=<run id>`` and lives in
a namespace of the run's own (pods, claims), except persistent volumes, which are cluster-wide: the
namespace is recorded in the ledger before it is made, and removing it (after a SIGKILL, by
``cleanup``) deletes the namespace and every volume with the run's label.

What layerbench can see of a node beyond the API depends on where it is. A node whose boot id is
this host's (a local cluster, or a one-node cluster on this machine) shares this host's filesystem
and cgroups: its pods can use the filesystem under test, and their limits are read back from the
kernel. Any other node is reached through the API only.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream
from kubernetes.stream.ws_client import ERROR_CHANNEL
from kubernetes.utils import parse_quantity

from layerbench.errors import LayerbenchError, PrerequisiteError
from layerbench.proc import Completed
from layerbench.spec.engines.kubernetes import ClusterNode, KubeCaps, is_csi
from layerbench.spec.models import EngineSpec
from layerbench.stack.ledger import Resource, tracked
from layerbench.stack.protocols import HostProbe
from layerbench.stack.target import BuildContext, Exec, Put

# Fields of a volume's spec that are not its source (what kind of storage it is: local, csi, nfs, hostPath...).
NOT_SOURCES = frozenset({"capacity", "claim_ref", "node_affinity", "mount_options", "access_modes"})
RUN_LABEL = "layerbench.run"
SCOPE_LABEL = "layerbench.scope"  # the namespace a cluster-wide volume belongs to (held stacks each have one)
CRI_SOCKET = "kubeadm.alpha.kubernetes.io/cri-socket"  # where kubeadm (and our local cluster) say the runtime is
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
POD_LIMIT_S = 300.0  # a guard against a pod that never starts (an image pull loop), not a deadline
GONE_LIMIT_S = 300.0
EXEC_POLL_S = 1.0
PID_WAIT_S = 30.0
PROTECTION_WAIT_S = 30.0
DATA = "/data"


@dataclass(frozen=True)
class NodeFacts:
    name: str
    ready: bool
    local: bool  # its boot id is this host's: it shares this host's filesystem and cgroups
    cri_socket: str | None  # unix path of its containerd, where it says
    images: frozenset[str]  # the image names its runtime holds


def kubeconfig() -> str | None:
    """The cluster's kubeconfig: `--kubeconfig` (the CLI sets KUBECONFIG), else the client's default."""
    return os.environ.get("KUBECONFIG") or None


def connect(kubeconfig: str | None = None) -> client.CoreV1Api:
    """The cluster of ``kubeconfig`` (default: $KUBECONFIG, then ~/.kube/config)."""
    # A kubeconfig with insecure-skip-tls-verify asked for it; urllib3 would say so at every request.
    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    try:
        return client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    except (config.ConfigException, OSError) as exc:
        raise PrerequisiteError(
            f"no Kubernetes cluster to reach: {exc}", hint="pass --kubeconfig FILE, or set KUBECONFIG"
        ) from exc


def nodes(core: client.CoreV1Api) -> dict[str, NodeFacts]:
    here = BOOT_ID.read_text().strip()
    found = {}
    for n in core.list_node(_request_timeout=30).items:
        conditions = n.status.conditions or []
        socket = (n.metadata.annotations or {}).get(CRI_SOCKET, "")
        found[n.metadata.name] = NodeFacts(
            n.metadata.name,
            any(c.type == "Ready" and c.status == "True" for c in conditions),
            n.status.node_info.boot_id == here,
            socket.removeprefix("unix://") or None,
            frozenset(name for image in n.status.images or [] for name in image.names or []),
        )
    return found


def cluster_nodes(kubeconfig: str | None) -> dict[str, ClusterNode] | str:
    """The cluster's nodes as the feasibility rules see them, or why the cluster could not be reached."""
    try:
        core = connect(kubeconfig)
        found = nodes(core)
        drivers = csi_drivers(core)
    except (PrerequisiteError, ApiException, OSError) as exc:
        return str(exc).splitlines()[0]
    except Exception as exc:  # urllib3's connection errors: the cluster is not there
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    known = lambda name: None if drivers is None else drivers.get(name, frozenset())  # noqa: E731
    return {name: ClusterNode(n.ready, n.local, known(name)) for name, n in found.items()}


def csi_drivers(core: client.CoreV1Api) -> dict[str, frozenset[str]] | None:
    """The CSI drivers each node runs, as its CSINode lists them (a driver registers there once its node plugin
    is up); None where the user may not list CSINodes (then no claim is judged by its driver)."""
    api = client.StorageV1Api(core.api_client)
    try:
        # Read as JSON: the client's model refuses the CSINode of a node that runs no driver ("drivers": null).
        listed = json.loads(api.list_csi_node(_request_timeout=30, _preload_content=False).data)["items"]
    except ApiException as exc:
        if exc.status in (401, 403):
            return None
        raise
    named = lambda n: frozenset(d["name"] for d in (n.get("spec") or {}).get("drivers") or [])  # noqa: E731
    return {n["metadata"]["name"]: named(n) for n in listed}


def room(core: client.CoreV1Api, node: str) -> tuple[float, int]:
    """(cpus, memory bytes) a pod pinned to ``node`` can still request: its allocatable, less what the
    pods already on it request (a pod whose requests do not fit is never scheduled there)."""
    facts = core.read_node(node, _request_timeout=30)
    cpus = float(parse_quantity(facts.status.allocatable.get("cpu", "0")))
    memory = int(parse_quantity(facts.status.allocatable.get("memory", "0")))
    selector = f"spec.nodeName={node},status.phase!=Succeeded,status.phase!=Failed"
    for pod in core.list_pod_for_all_namespaces(field_selector=selector, _request_timeout=30).items:
        for c in pod.spec.containers:
            asked = (c.resources.requests if c.resources else None) or {}
            cpus -= float(parse_quantity(asked.get("cpu", "0")))
            memory -= int(parse_quantity(asked.get("memory", "0")))
    return cpus, memory


def storage_classes(kubeconfig: str | None) -> dict[str, str]:
    """The cluster's StorageClasses by name, each with its provisioner; none where the cluster cannot be reached
    (its nodes say why)."""
    try:
        api = client.StorageV1Api(connect(kubeconfig).api_client)
        return {c.metadata.name: c.provisioner for c in api.list_storage_class(_request_timeout=30).items}
    except Exception:  # what the client raises when the cluster is not there varies (urllib3, API)
        return {}


def describe(kubeconfig: str | None) -> list[tuple[str, bool, str]]:
    """`doctor`'s rows for the cluster: (what, usable, note): the cluster, each node, its StorageClasses."""
    try:
        core = connect(kubeconfig)
        version = client.VersionApi(core.api_client).get_code(_request_timeout=30).git_version
        found = nodes(core)
        classes = client.StorageV1Api(core.api_client).list_storage_class(_request_timeout=30).items
    except Exception as exc:  # what the client raises when the cluster is not there varies (urllib3, API)
        return [("cluster", False, f"{type(exc).__name__}: {exc}".splitlines()[0])]
    rows = [("cluster", True, f"Kubernetes {version} at {core.api_client.configuration.host}")]
    for n in found.values():
        where = (
            "this host: bind, volume (a local volume layerbench makes), claim and tmpfs"
            if n.local
            else "another machine: claim and tmpfs only (the filesystem under test is this host's)"
        )
        rows.append((f"node {n.name}", n.ready, where if n.ready else "not Ready"))
    drivers = csi_drivers(core) or {}
    named = ", ".join(f"{c.metadata.name} ({c.provisioner}{_driver_note(c.provisioner, drivers)})" for c in classes)
    rows.append(("storage classes", True, named or "none: no claim placement (volume makes local volumes itself)"))
    return rows


def _driver_note(provisioner: str, drivers: dict[str, frozenset[str]]) -> str:
    """Where a CSI class's driver runs: a claim of it on a node without it stays Pending."""
    if not is_csi(provisioner):
        return ""
    on = sorted(node for node, names in drivers.items() if provisioner in names)
    return f": its CSI driver on {', '.join(on)}" if on else ": its CSI driver runs on no node"


def safe_name(text: str) -> str:
    """A DNS label from a run id (lower case, digits and dashes)."""
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:40]


@contextmanager
def namespace(core: client.CoreV1Api, ctx: BuildContext, kubeconfig: str | None) -> Iterator[str]:
    """A namespace of the run's own, recorded first; removed last with the run's volumes."""
    name = f"lb-{safe_name(ctx.run_id)}-{secrets.token_hex(2)}"

    def create(rid: int) -> str:
        body = client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels={RUN_LABEL: label(ctx.run_id)}))
        core.create_namespace(body)
        return name

    with tracked(
        ctx.ledger, "k8s-namespace", name, create, lambda ns: remove_namespace(core, ns, f"{SCOPE_LABEL}={ns}"),
        kubeconfig=kubeconfig or "", run=ctx.run_id,
    ) as made:  # fmt: skip
        yield made


def label(run_id: str) -> str:
    return safe_name(run_id)


def remove_namespace(core: client.CoreV1Api, name: str, volumes: str) -> None:
    """The namespace (its pods and claims with it), then the volumes of the label selector ``volumes``
    (the namespace's own; after a kill, the run's); waits until they are gone."""
    with contextlib.suppress(ApiException):
        core.delete_namespace(name, grace_period_seconds=0)
    _wait(lambda: not _exists(core.read_namespace, name), GONE_LIMIT_S, f"namespace {name} to go")
    for pv in core.list_persistent_volume(label_selector=volumes).items:
        delete_volume(core, pv.metadata.name)


def delete_volume(core: client.CoreV1Api, name: str) -> None:
    """Delete one of the run's local volumes once its claim and pod are gone. Its protection finalizer
    (which waits for the controller to see it unused) is dropped if the controller has not done so
    within PROTECTION_WAIT_S: measured here, it sometimes kept a released volume for minutes."""
    with contextlib.suppress(ApiException):
        core.delete_persistent_volume(name)
    try:
        _wait(lambda: not _exists(core.read_persistent_volume, name), PROTECTION_WAIT_S, f"volume {name} to go")
    except LayerbenchError:
        with contextlib.suppress(ApiException):
            core.patch_persistent_volume(name, {"metadata": {"finalizers": None}})
        _wait(lambda: not _exists(core.read_persistent_volume, name), GONE_LIMIT_S, f"volume {name} to go")


def reclaim(res: Resource, runner: Any) -> None:
    """A dead run's namespace and volumes (``cleanup``), through the kubeconfig it was made with."""
    core = connect(res.detail.get("kubeconfig") or None)
    remove_namespace(core, res.ident, f"{RUN_LABEL}={label(res.detail.get('run', ''))}")


def reclaim_object(res: Resource, runner: Any) -> None:
    """A dead run's pod, claim or volume: each goes with the namespace or by the run's label, whose
    ledger row (older, so reclaimed after this one) removes them and waits."""


def reclaim_image(res: Resource, runner: Any) -> None:
    ctr = ["ctr", "--address", res.detail["socket"], "-n", "k8s.io"]
    runner([*ctr, "images", "rm", *res.detail.get("refs", [qualified(res.ident)])], timeout=120)


def _exists(read: Any, *args: str) -> bool:
    try:
        read(*args)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def _wait(done: Any, limit_s: float, what: str) -> None:
    deadline = time.monotonic() + limit_s
    while not done():
        if time.monotonic() > deadline:
            raise LayerbenchError(f"Kubernetes: gave up waiting for {what} after {limit_s:.0f} s")
        time.sleep(0.5)


@contextmanager
def load_image(node: NodeFacts, archive: Path, ref: str, ctx: BuildContext) -> Iterator[str]:
    """Import a docker-archive into a node's containerd (no registry needed), recorded and removed after."""
    if not (node.local and node.cri_socket):
        raise PrerequisiteError(
            f"node {node.name} lacks the image {ref}, and layerbench can load images only on nodes of this host "
            f"whose runtime socket is annotated ({CRI_SOCKET})",
            hint=f"import it there: `ctr -n k8s.io images import FILE` of the archive layerbench writes to {archive}",
        )
    ctr = ["ctr", "--address", node.cri_socket, "-n", "k8s.io", "images"]

    def refs() -> set[str]:
        return set(ctx.runner([*ctr, "ls", "-q"], timeout=120).check().stdout.split())

    def create(rid: int) -> list[str]:
        # The runtime names an imported image twice (its tag, and its config's digest): both are ours.
        before = refs()
        ctx.runner([*ctr, "import", str(archive)], timeout=600).check()
        made = sorted(refs() - before)
        ctx.ledger.update(rid, refs=made)
        return made

    def remove(made: list[str]) -> None:
        if made:
            ctx.runner([*ctr, "rm", *made], timeout=120)

    with tracked(ctx.ledger, "k8s-image", ref, create, remove, socket=node.cri_socket, refs=[qualified(ref)]):
        yield ref


def has_image(node: NodeFacts, ref: str, runner: Any) -> bool:
    """Whether the node's runtime holds ``ref``: asked of the runtime itself where it is on this host (the
    node's status lists images only every so often, and may still list one just removed)."""
    if not (node.local and node.cri_socket):
        return qualified(ref) in node.images
    listed = runner(["ctr", "--address", node.cri_socket, "-n", "k8s.io", "images", "ls", "-q"], timeout=120)
    return qualified(ref) in listed.check().stdout.split()


def qualified(ref: str) -> str:
    """How containerd names an image the way Docker does (docker.io/ for a bare name)."""
    first = ref.split("/", 1)[0]
    return ref if "/" in ref and ("." in first or ":" in first) else f"docker.io/{ref}"


@contextmanager
def pod(core: client.CoreV1Api, ns: str, body: client.V1Pod, ctx: BuildContext) -> Iterator[client.V1Pod]:
    """Create ``body`` and wait until it runs; deleted (and waited for) after."""
    name = body.metadata.name

    def create(rid: int) -> client.V1Pod:
        core.create_namespaced_pod(ns, body)
        return _running(core, ns, name)

    def remove(_: client.V1Pod) -> None:
        with contextlib.suppress(ApiException):
            core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
        _wait(lambda: not _exists(core.read_namespaced_pod, name, ns), GONE_LIMIT_S, f"pod {name} to go")

    with tracked(ctx.ledger, "k8s-object", f"pod/{ns}/{name}", create, remove) as made:
        yield made


@contextmanager
def local_claim(core: client.CoreV1Api, ns: str, name: str, node: str, path: Path, ctx: BuildContext) -> Iterator[str]:
    """A claim bound to a local volume at ``path`` on ``node``, as a static local-storage class gives;
    both removed after (the volume also by its namespace's label, or the run's should the run die)."""
    labels = {RUN_LABEL: label(ctx.run_id), SCOPE_LABEL: ns}
    size = "1Gi"  # a local volume's capacity is its directory's filesystem, whatever this says
    hostname = client.V1NodeSelectorRequirement(key="kubernetes.io/hostname", operator="In", values=[node])
    pv = client.V1PersistentVolume(
        metadata=client.V1ObjectMeta(name=f"{ns}-{name}", labels=labels),
        spec=client.V1PersistentVolumeSpec(
            capacity={"storage": size},
            access_modes=["ReadWriteOnce"],
            persistent_volume_reclaim_policy="Retain",
            storage_class_name="",
            local=client.V1LocalVolumeSource(path=str(path)),
            node_affinity=client.V1VolumeNodeAffinity(
                required=client.V1NodeSelector(
                    node_selector_terms=[client.V1NodeSelectorTerm(match_expressions=[hostname])]
                )
            ),
            claim_ref=client.V1ObjectReference(namespace=ns, name=name),
        ),
    )
    pvc = client.V1PersistentVolumeClaim(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PersistentVolumeClaimSpec(
            access_modes=["ReadWriteOnce"],
            storage_class_name="",
            volume_name=pv.metadata.name,
            resources=client.V1VolumeResourceRequirements(requests={"storage": size}),
        ),
    )

    def create_pv(rid: int) -> str:
        core.create_persistent_volume(pv)
        return pv.metadata.name

    def remove_pv(pv_name: str) -> None:
        delete_volume(core, pv_name)

    def create_pvc(rid: int) -> str:
        core.create_namespaced_persistent_volume_claim(ns, pvc)
        _wait(lambda: core.read_namespaced_persistent_volume_claim(name, ns).status.phase == "Bound",
              POD_LIMIT_S, f"claim {name} to be bound (is kube-controller-manager running?)")  # fmt: skip
        return name

    with (
        tracked(ctx.ledger, "k8s-object", f"pv/{pv.metadata.name}", create_pv, remove_pv),
        tracked(ctx.ledger, "k8s-object", f"pvc/{ns}/{name}", create_pvc, partial(_remove_claim, core, ns)) as claim,
    ):
        yield claim


@contextmanager
def class_claim(
    core: client.CoreV1Api, ns: str, name: str, storage_class: str, size: int, ctx: BuildContext
) -> Iterator[str]:
    """A claim of ``size`` bytes of the cluster's ``storage_class``, removed after. It binds when the pod
    that uses it is scheduled, or at once: whichever the class's binding mode says. What the class made
    of it (a dynamic volume) goes as the class's reclaim policy says; a volume it did not make is left."""
    pvc = client.V1PersistentVolumeClaim(
        metadata=client.V1ObjectMeta(name=name, labels={RUN_LABEL: label(ctx.run_id)}),
        spec=client.V1PersistentVolumeClaimSpec(
            access_modes=["ReadWriteOnce"],
            storage_class_name=storage_class,
            resources=client.V1VolumeResourceRequirements(requests={"storage": str(size)}),
        ),
    )

    def create(rid: int) -> str:
        core.create_namespaced_persistent_volume_claim(ns, pvc)
        return name

    with tracked(ctx.ledger, "k8s-object", f"pvc/{ns}/{name}", create, partial(_remove_claim, core, ns)) as claim:
        yield claim


def _remove_claim(core: client.CoreV1Api, ns: str, name: str) -> None:
    """Delete a claim of the run's and wait until it is gone (its volume then goes as its policy says)."""
    with contextlib.suppress(ApiException):
        core.delete_namespaced_persistent_volume_claim(name, ns)
    _wait(lambda: not _exists(core.read_namespaced_persistent_volume_claim, name, ns), GONE_LIMIT_S,
          f"claim {name} to go")  # fmt: skip


def claim_facts(core: client.CoreV1Api, ns: str, name: str) -> dict[str, Any]:
    """What a bound claim got: its volume, the volume's kind of source and capacity, the class's provisioner."""
    pvc = core.read_namespaced_persistent_volume_claim(name, ns)
    facts: dict[str, Any] = {"claim": name, "storage_class": pvc.spec.storage_class_name}
    facts["requested"] = (pvc.spec.resources.requests or {}).get("storage")
    if not pvc.spec.volume_name:
        return facts
    pv = core.read_persistent_volume(pvc.spec.volume_name)
    sources = [k for k, v in pv.spec.to_dict().items() if isinstance(v, dict) and k not in NOT_SOURCES and v]
    facts |= {
        "volume": pv.metadata.name,
        "capacity": (pv.spec.capacity or {}).get("storage"),
        "source": sources[0] if sources else None,
        "csi_driver": pv.spec.csi.driver if pv.spec.csi else None,
        "reclaim_policy": pv.spec.persistent_volume_reclaim_policy,
    }
    with contextlib.suppress(ApiException):
        sc = client.StorageV1Api(core.api_client).read_storage_class(pvc.spec.storage_class_name)
        facts |= {"provisioner": sc.provisioner, "binding_mode": sc.volume_binding_mode}
    return facts


def _running(core: client.CoreV1Api, ns: str, name: str) -> client.V1Pod:
    deadline = time.monotonic() + POD_LIMIT_S
    while True:
        p = core.read_namespaced_pod(name, ns)
        if p.status.phase == "Running" and all(s.ready for s in p.status.container_statuses or [False]):
            return p
        problem = _stuck(p)
        if problem or p.status.phase in ("Failed", "Succeeded") or time.monotonic() > deadline:
            events = core.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}").items
            said = "; ".join(f"{e.reason}: {e.message}" for e in events[-5:])
            raise LayerbenchError(f"pod {name} did not start ({problem or p.status.phase}): {said}")
        time.sleep(0.5)


def _stuck(p: client.V1Pod) -> str | None:
    """A waiting reason that will not resolve by itself (no registry will ever answer ErrImageNeverPull)."""
    for s in p.status.container_statuses or []:
        waiting = s.state.waiting if s.state else None
        if waiting and waiting.reason in ("ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError"):
            return f"{waiting.reason}: {waiting.message}"
    return None


def exec_in(core: client.CoreV1Api, ns: str, name: str) -> Exec:
    def run(argv: Sequence[str], timeout: float) -> Completed:
        return _exec(core, ns, name, list(argv), timeout)

    return run


def _exec(core: client.CoreV1Api, ns: str, name: str, argv: list[str], timeout: float) -> Completed:
    """One command through the API's exec (as `kubectl exec`); past ``timeout``, every process of the
    container but its first is killed, as a timed-out exec on Docker is."""
    resp = _open(core, ns, name, argv)
    out, err = [], []
    deadline = time.monotonic() + timeout
    try:
        while resp.is_open():
            more_out, more_err = _read(resp)
            out.append(more_out)
            err.append(more_err)
            if time.monotonic() > deadline:
                _exec(core, ns, name, ["sh", "-c", "kill -9 -1"], 60)
                said = f"\nkubernetes exec: timed out after {timeout:.0f} s"
                return Completed(argv, 124, "".join(out), "".join(err) + said)
        rc, why = exit_status(resp.read_channel(ERROR_CHANNEL))
    finally:
        resp.close()
    return Completed(argv, rc, "".join(out), "".join(err) + why)


def exit_status(raw: str) -> tuple[int, str]:
    """(exit code, what the API said beyond it) from an exec's status, its error channel's one message.

    Success is 0; a program that exited non-zero is its code (``NonZeroExitCode``, the code as the
    cause's message); an exec that never started (its program not in the image, the runtime failing) is
    126 with the API's message, as ``docker exec`` says 126; no status at all (the stream ended early) is
    125. (The client's own ``returncode`` takes every failure for an exit code, and raised ValueError on
    an exec whose program was missing.)"""
    try:
        status = yaml.safe_load(raw) if raw else None
    except yaml.YAMLError:
        status = None
    if not isinstance(status, dict):
        return 125, "\nkubernetes exec: the stream ended without an exit status"
    if status.get("status") == "Success":
        return 0, ""
    if status.get("reason") == "NonZeroExitCode":
        for cause in (status.get("details") or {}).get("causes") or []:
            if cause.get("reason") == "ExitCode" and str(cause.get("message", "")).isdigit():
                return int(cause["message"]), ""
    return 126, f"\nkubernetes exec: {status.get('message') or status}"


def _open(core: client.CoreV1Api, ns: str, name: str, argv: Sequence[str]) -> Any:
    """An exec's stream (stdout and stderr apart, no terminal), read with ``_read`` until it closes."""
    return stream(
        core.connect_get_namespaced_pod_exec, name, ns, command=list(argv),
        stdout=True, stderr=True, stdin=False, tty=False, _preload_content=False,
    )  # fmt: skip


def _read(resp: Any) -> tuple[str, str]:
    """What the exec wrote since the last read (waiting up to EXEC_POLL_S for it): (stdout, stderr)."""
    resp.update(timeout=EXEC_POLL_S)
    return (resp.read_stdout() if resp.peek_stdout() else "", resp.read_stderr() if resp.peek_stderr() else "")


def put_in(core: client.CoreV1Api, ns: str, name: str) -> Put:
    """A small file (a job file) into the pod's /tmp."""

    def put(file_name: str, text: str) -> str:
        return write_file(core, ns, name, f"/tmp/{file_name}", text)

    return put


def write_file(core: client.CoreV1Api, ns: str, name: str, path: str, text: str, private: bool = False) -> str:
    """``text`` into ``path`` in the pod, as the exec that writes it gets it (an argument), owned by the
    container's user; ``private``: readable by that user alone (0600)."""
    umask = "umask 077; " if private else ""
    done = _exec(core, ns, name, ["sh", "-c", umask + 'printf %s "$1" > "$2"', "sh", text, path], 60)
    if done.rc != 0:
        raise LayerbenchError(f"could not write {path} in pod {name}: {done.stderr.strip()}")
    return path


@dataclass
class ExecHandle:
    """A long-lived process exec'd in a pod of a node of this host (a database server): its output
    streamed into ``log`` by a thread, its host PID found by the container's cgroup, signalled by it."""

    log: Path
    _pid: int = 0
    _rc: int | None = None
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self._pid

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def signal(self, sig: int) -> None:
        if self._pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, sig)

    def wait(self, timeout: float) -> int | None:
        if self._thread is not None:
            self._thread.join(timeout)
        return None if self.alive() else self._rc


def start_exec(
    core: client.CoreV1Api, ns: str, name: str, container_id: str, argv: Sequence[str], log: Path
) -> ExecHandle:
    """``argv`` exec'd in the pod, its output pumped into ``log``; its host PID found before this returns
    (or it has already ended: its log says why). The PID is what signals it, and what the ledger records."""
    before = set(pids_in(container_id))
    resp = _open(core, ns, name, argv)
    handle = ExecHandle(log)
    handle._thread = threading.Thread(target=_pump, args=(resp, handle), daemon=True)
    handle._thread.start()
    deadline = time.monotonic() + PID_WAIT_S
    while handle.alive():
        found = exec_pid(container_id, before, argv[0])
        if found is not None:
            handle._pid = found
            break
        if time.monotonic() > deadline:
            resp.close()  # the exec's stream: the pod's deletion ends the process itself
            raise LayerbenchError(
                f"pod {name}: {Path(argv[0]).name} was exec'd but no process of it appeared in the container's "
                f"cgroup within {PID_WAIT_S:.0f} s"
            )
        time.sleep(0.05)
    return handle


def exec_pid(container_id: str, before: set[int], program: str, proc: Path = Path("/proc")) -> int | None:
    """The host PID of a process just exec'd in a container: one of its cgroup's that was not there
    ``before``, whose parent is outside the container (the runtime's shim, as for every exec; not one of
    the server's own children) and that already runs ``program`` (not the runtime's init in between).
    A server may rewrite its command line (Redis: ``/usr/bin/redis-server 10.1.2.3:6379``): its first
    word is still the program."""
    inside = set(pids_in(container_id, proc))
    new = [p for p in inside - before if _parent(p, proc) not in inside and _runs(p, program, proc)]
    return min(new, default=None)


def _runs(pid: int, program: str, proc: Path) -> bool:
    try:
        first = (proc / str(pid) / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return False
    return first == program or first.startswith(program + " ")


def _pump(resp: Any, handle: ExecHandle) -> None:
    with handle.log.open("a") as out:
        try:
            while resp.is_open():
                out.write("".join(_read(resp)))
                out.flush()
            handle._rc, why = exit_status(resp.read_channel(ERROR_CHANNEL))
            out.write(why)
        except Exception as exc:  # the pod went away under it: the server is gone
            out.write(f"\nkubernetes exec ended: {exc}\n")
            handle._rc = 137
        finally:
            resp.close()


def pids_in(container_id: str, proc: Path = Path("/proc")) -> list[int]:
    """Host PIDs of a container's processes (a node of this host), by its id in their cgroup paths."""
    cid = container_id.split("://", 1)[-1]
    found = []
    for entry in proc.glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and cid in (entry / "cgroup").read_text():
                found.append(int(entry.name))
    return found


def container_pid(container_id: str, proc: Path = Path("/proc")) -> int | None:
    """The host PID of a container's first process (a local node only): of the processes in the
    container's cgroup whose parent is not (the shim's children), the lowest; an exec is one too."""
    inside = set(pids_in(container_id, proc))
    first = [pid for pid in inside if _parent(pid, proc) not in inside]
    return min(first, default=None)


def _parent(pid: int, proc: Path) -> int | None:
    try:
        return int((proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def probe(ask: HostProbe) -> KubeCaps:
    """The cluster of the kubeconfig (``kubeconfig()``) as the rules see it: its nodes and StorageClasses."""
    config = kubeconfig()
    return KubeCaps(nodes=cluster_nodes(config), classes=storage_classes(config))


def local_nodes(specs: Sequence[EngineSpec]) -> dict[str, bool]:
    """Which of the cluster's nodes are this very machine (by boot id), for `--parallel-nodes`' warning."""
    found = cluster_nodes(kubeconfig())
    return {name: n.local for name, n in found.items()} if isinstance(found, dict) else {}
