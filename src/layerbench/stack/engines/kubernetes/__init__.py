"""The Kubernetes engine: the workload in a pod pinned to a named node of a cluster layerbench did not make.

A stack's engine layer is a namespace of the run's own; its placement is a pod (``sleep infinity``,
every command of the trial an exec through the API, as on Docker) on ``engine.node``, holding /data:

- bind: a hostPath volume on the filesystem under test (the node must be this host);
- volume: a PersistentVolumeClaim bound to a local PersistentVolume layerbench makes on that
  filesystem (a static volume, as a local-storage class gives: the node must be this host);
- claim: a PersistentVolumeClaim of one of the cluster's own StorageClasses (kubestr's question: what
  does this class give a pod?); the stack builds nothing here (device none), any node may take it, and
  the trial records what the claim got and what /data is in the pod;
- tmpfs: an emptyDir in memory (a control, as on Docker).

(No writable-layer: a pod's own layer is wherever the node's runtime keeps its root, not on the
filesystem layerbench builds, so the stack's label would lie; spec/engines/kubernetes.py refuses it.)

The image is layerbench's tools image (host binaries), handed to the node's containerd as a
docker-archive when the node lacks it (no registry needed), and removed from it after. Limits are the
container's resource limits (requests equal: the Guaranteed class), read back from the kernel's
cgroup where the node is this host.

A database server listens at its pod's IP only (never the pod's wildcard, as on a Docker bridge it
listens at its container's address), where this host reaches it: whoever reaches the pod network
reaches it, so it requires the run's password (docs/how-to/server-security.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from kubernetes import client

from layerbench.errors import LayerbenchError, PrerequisiteError
from layerbench.spec.engines.kubernetes import KUBE_LOCAL_PLACEMENTS
from layerbench.spec.models import EngineSpec, Limits, PlacementSpec, StackSpec
from layerbench.spec.profiles import Budget
from layerbench.stack import mountinfo
from layerbench.stack.cgroups import majmin, process_dirs, read_limits
from layerbench.stack.engines.container import tools
from layerbench.stack.engines.kubernetes import kube_api
from layerbench.stack.fleet import (
    IMAGE_TOOLS,
    PREPARE_TIMEOUT_S,
    Endpoint,
    ServerError,
    Starter,
    data_bytes,
    server_config,
    server_log,
    serving,
)
from layerbench.stack.image import REPOSITORY, binary_digests, recipe, resolve
from layerbench.stack.image_archive import ImageRecipe, write_archive
from layerbench.stack.placement import host_dir
from layerbench.stack.route import source_address
from layerbench.stack.target import BuildContext, Mount, Target
from layerbench.workloads.servers import SERVER_UID, ServerDef

# What a server's pod needs beyond the server and IMAGE_TOOLS: kube_api.write_file writes its config files
# (Redis's password among them) with `sh -c printf`, the API having no copy; a server's own binaries may
# lack a shell (Redis's and Cassandra's do: without it, writing redis.conf failed to exec).
POD_TOOLS = ["sh"]


@dataclass
class KubeEngine:
    core: client.CoreV1Api
    namespace: str
    node: kube_api.NodeFacts
    exits: contextlib.ExitStack  # what lives as long as the engine: the tools image on the node
    tools_image: str | None = None
    kind: str = "kubernetes"

    def place(
        self, mount: Mount, stack: StackSpec, data_bytes: int, ctx: BuildContext
    ) -> AbstractContextManager[Target]:
        if self.tools_image is None:
            self.tools_image = self._load(tools(ctx), ctx)
        return _placement(self, self.tools_image, mount, stack, data_bytes, ctx)

    @contextmanager
    def shared_places(
        self, mount: Mount, stack: StackSpec, data_bytes: int, count: int, ctx: BuildContext
    ) -> Iterator[list[Target]]:
        """``count`` pods on one volume: one claim (all the pods are on the stack's node, so a ReadWriteOnce
        claim serves them all) or one host directory."""
        if self.tools_image is None:
            self.tools_image = self._load(tools(ctx), ctx)
        with contextlib.ExitStack() as exits:
            volume = _volume(self, f"lb-{secrets.token_hex(4)}", stack.placement, mount, data_bytes, ctx, exits)
            made = partial(_placement, self, self.tools_image, mount, stack, data_bytes, ctx, volume=volume)
            yield [exits.enter_context(made()) for _ in range(count)]

    def server_starter(self, definition: ServerDef, exits: contextlib.ExitStack, ctx: BuildContext) -> Starter:
        """A database fleet here: a pod per server on the node, reached from this host at the pod's IP."""
        binaries = {**resolve([*IMAGE_TOOLS, *POD_TOOLS]), **definition.binaries(ctx.cache_dir)}
        return partial(_server, self, self._load(binaries, ctx, definition.files(ctx.cache_dir)))

    def budget(self, budget: Budget) -> Budget:
        """What the profiles divide on this node: the run's budget, within what a pod can still request
        there (requests equal limits: shares of more than that would never be scheduled)."""
        cpus, memory = kube_api.room(self.core, self.node.name)
        memory = min(budget.memory, memory) if budget.memory else memory
        return dataclasses.replace(budget, cpus=min(budget.cpus, cpus), memory=memory)

    def start_in(self, target: Target, argv: Sequence[str], log: Path) -> kube_api.ExecHandle:
        """Through the API's exec, its host PID found in the pod's cgroup (the node is this host: the rules
        refuse many clients on another machine's node)."""
        pod, container = str(target.info["pod"]), str(target.info["container_id"])
        return kube_api.start_exec(self.core, self.namespace, pod, container, argv, log)

    def _load(self, binaries: dict[str, str], ctx: BuildContext, files: tuple[str, ...] = ()) -> str:
        """The image of these host binaries on the node: loaded there unless the node has it, removed when
        no engine of the run uses it there (stack/shared.py)."""
        _, _, tag = recipe(binaries, ctx, files)
        ref = f"{REPOSITORY}:{tag}"

        def load(owned: contextlib.ExitStack) -> str:
            if kube_api.has_image(self.node, ref, ctx.runner):
                return ref
            archive = ctx.work_dir / f"k8s-image-{tag}.tar"
            write_archive(ImageRecipe(ref, binaries, list(files), ["sleep", "infinity"]), archive)
            try:
                owned.enter_context(kube_api.load_image(self.node, archive, ref, ctx))
            finally:
                archive.unlink(missing_ok=True)
            return ref

        return str(self.exits.enter_context(ctx.shared.use((self.node.name, ref), load)))


@contextmanager
def start(mount: Mount, spec: EngineSpec, ctx: BuildContext) -> Iterator[KubeEngine]:
    """The run's namespace on the cluster, once the pinned node is found Ready."""
    config = kube_api.kubeconfig()
    core = kube_api.connect(config)
    facts = kube_api.nodes(core)
    node = facts.get(spec.node or "")
    if node is None or not node.ready:
        state = "is not Ready" if node else f"is not in the cluster (its nodes: {', '.join(sorted(facts))})"
        raise PrerequisiteError(f"Kubernetes node {spec.node!r} {state}")
    with contextlib.ExitStack() as exits:
        ns = exits.enter_context(kube_api.namespace(core, ctx, config))
        images = exits.enter_context(contextlib.ExitStack())  # closed before the namespace goes
        yield KubeEngine(core, ns, node, images)


@contextmanager
def _server(
    engine: KubeEngine,
    image: str,
    index: int,
    stack: StackSpec,
    definition: ServerDef,
    limits: Limits,
    mount: Mount,
    ctx: BuildContext,
) -> Iterator[Endpoint]:
    """One server in a pod of its own, run as the server's user: its data at the placement, prepared,
    configured and started by exec, listening at the pod's IP alone, where this host reaches it."""
    assert stack.server is not None  # a fleet is built only for stacks with a server
    placed = stack.model_copy(update={"limits": limits})
    with _placement(engine, image, mount, placed, data_bytes(stack.server), ctx, SERVER_UID) as target:
        pod, host = target.info["pod"], target.info["pod_ip"]
        data = f"{target.path}/{definition.kind}"
        target.run(["mkdir", "-p", data], 60).check()
        config = server_config(stack, data, host, definition.default_port, limits, ctx.cache_dir, ctx.password)
        config = dataclasses.replace(config, client_address=source_address(host, ctx.runner))
        for name, text in definition.setup_files(config).items():
            kube_api.write_file(engine.core, engine.namespace, pod, f"{target.path}/{name}", text, private=True)
        for step in definition.prepare(config):
            done = target.run(step, PREPARE_TIMEOUT_S)
            if done.rc != 0:
                raise ServerError(f"{definition.kind} #{index}: {Path(step[0]).name} exited {done.rc}:\n{done.stderr}")
        for name, text in definition.config_files(config).items():
            kube_api.write_file(engine.core, engine.namespace, pod, f"{data}/{name}", text, private=True)
        with server_log(ctx.work_dir / f"{definition.kind}-{index}-{pod}.log") as log:
            cid = target.info["container_id"]
            launch = partial(kube_api.start_exec, engine.core, engine.namespace, pod, cid, definition.argv(config), log)
            with serving(definition, config, launch, ctx, index, host) as h:
                yield Endpoint(index, host, config.port, config.memory, limits, h, dict(target.info))


@contextmanager
def _placement(
    engine: KubeEngine,
    image: str,
    mount: Mount,
    stack: StackSpec,
    data_bytes: int,
    ctx: BuildContext,
    user: int | None = None,
    volume: client.V1Volume | None = None,
) -> Iterator[Target]:
    """A pod holding /data at the placement (on ``volume`` when given: one other pods share); as ``user``
    (a server's), the data owned by it."""
    kind = stack.placement.kind
    if kind in KUBE_LOCAL_PLACEMENTS and not engine.node.local:
        raise PrerequisiteError(f"placement {kind!r} on node {engine.node.name}: the node is not this host")
    name = f"lb-{secrets.token_hex(4)}"
    with contextlib.ExitStack() as exits:
        if volume is None:
            volume = _volume(engine, name, stack.placement, mount, data_bytes, ctx, exits, user)
        body = _pod(name, image, engine.node.name, stack.limits, volume, ctx.run_id, user)
        running = exits.enter_context(kube_api.pod(engine.core, engine.namespace, body, ctx))
        info = {"placement": kind, **_info(engine, running, image, stack.limits, mount)}
        run = kube_api.exec_in(engine.core, engine.namespace, name)
        put = kube_api.put_in(engine.core, engine.namespace, name)
        table = None if "pid" in info else partial(_mount_table, run)  # another machine's pod: ask it
        if kind == "claim":
            assert volume is not None and volume.persistent_volume_claim is not None  # _volume's, or shared
            info["claim"] = kube_api.claim_facts(
                engine.core, engine.namespace, volume.persistent_volume_claim.claim_name
            )
            info["data_mount"] = _data_mount(info.get("pid"), table)
        yield Target(run, put, kube_api.DATA, False, mount.device, "kubernetes", info, mount_table=table)


def _volume(
    engine: KubeEngine,
    name: str,
    placement: PlacementSpec,
    mount: Mount,
    data_bytes: int,
    ctx: BuildContext,
    exits: contextlib.ExitStack,
    user: int | None = None,
) -> client.V1Volume | None:
    kind = placement.kind
    if kind == "tmpfs":
        size = str(data_bytes + 64 * 2**20)
        return client.V1Volume(name="data", empty_dir=client.V1EmptyDirVolumeSource(medium="Memory", size_limit=size))
    if kind == "claim":
        assert placement.storage_class is not None and placement.size is not None  # the spec's validator
        made = kube_api.class_claim(engine.core, engine.namespace, name, placement.storage_class, placement.size, ctx)
        source = client.V1PersistentVolumeClaimVolumeSource(claim_name=exits.enter_context(made))
        return client.V1Volume(name="data", persistent_volume_claim=source)
    assert mount.mountpoint is not None  # a container placement has a filesystem (spec/rules.py)
    path = exits.enter_context(host_dir(mount.mountpoint / f"{name}-data", ctx))
    if user is not None:
        os.chown(path, user, user)
    if kind == "bind":
        return client.V1Volume(name="data", host_path=client.V1HostPathVolumeSource(path=str(path), type="Directory"))
    claim = exits.enter_context(kube_api.local_claim(engine.core, engine.namespace, name, engine.node.name, path, ctx))
    source = client.V1PersistentVolumeClaimVolumeSource(claim_name=claim)
    return client.V1Volume(name="data", persistent_volume_claim=source)


def _mount_table(run: Any) -> str:
    """The pod's own mount table (its tools image has cat; a server's image has not, and says so)."""
    return str(run(["cat", "/proc/self/mountinfo"], 60).check().stdout)


def _data_mount(pid: int | None, table: Any) -> dict[str, Any]:
    """What /data is in the pod, as its own mount table says: what the claim gave (a filesystem, a source)."""
    try:
        entries = mountinfo.parse(table() if table else mountinfo.read(pid))
    except (OSError, LayerbenchError, mountinfo.MountinfoError) as exc:
        return {"unknown": f"cannot read the pod's mounts: {exc}"}
    held = mountinfo.holding(entries, kube_api.DATA)
    if not held:
        return {"unknown": f"no mount holds {kube_api.DATA} in the pod's mount table"}
    return {"source": held[0].source, "fs_type": held[0].fs_type, "root": held[0].root}


def _pod(
    name: str, image: str, node: str, limits: Limits, volume: client.V1Volume | None, run_id: str, user: int | None
) -> client.V1Pod:
    resources = _resources(limits)
    container = client.V1Container(
        name="tools",
        image=image,
        image_pull_policy="Never",  # no registry: the image was loaded onto the node
        command=["sleep", "infinity"],
        resources=client.V1ResourceRequirements(limits=resources, requests=resources) if resources else None,
        volume_mounts=[client.V1VolumeMount(name="data", mount_path=kube_api.DATA)] if volume else None,
    )
    spec = client.V1PodSpec(
        containers=[container],
        node_selector={"kubernetes.io/hostname": node},
        restart_policy="Never",
        automount_service_account_token=False,
        enable_service_links=False,
        termination_grace_period_seconds=1,  # sleep as PID 1 ignores SIGTERM
        volumes=[volume] if volume else None,
        # fsGroup: an emptyDir is made writable for the server's group.
        security_context=client.V1PodSecurityContext(run_as_user=user, run_as_group=user, fs_group=user)
        if user is not None
        else None,
    )
    meta = client.V1ObjectMeta(name=name, labels={kube_api.RUN_LABEL: kube_api.label(run_id)})
    return client.V1Pod(metadata=meta, spec=spec)


def _resources(limits: Limits) -> dict[str, str]:
    """cpus and memory; cpuset and block-I/O limits have no pod field (spec/engines/kubernetes.py refuses them)."""
    found = {}
    if limits.cpus is not None:
        found["cpu"] = f"{round(limits.cpus * 1000)}m"
    if limits.memory is not None:
        found["memory"] = str(int(limits.memory))
    return found


def _info(engine: KubeEngine, running: client.V1Pod, image: str, limits: Limits, mount: Mount) -> dict[str, Any]:
    info: dict[str, Any] = {
        "pod": running.metadata.name,
        "pod_ip": running.status.pod_ip,
        "namespace": engine.namespace,
        "node": engine.node.name,
        "image": image,
        "limits": limits.model_dump(mode="json", exclude_none=True),
        "fio_sha256": binary_digests(["fio"])["fio"],  # the image holds this host's fio
    }
    status = (running.status.container_statuses or [None])[0]
    pid = kube_api.container_pid(status.container_id) if engine.node.local and status and status.container_id else None
    if status and status.container_id:
        info["container_id"] = status.container_id
    if pid is None:
        # The monitor reads this host's /proc: it cannot tell this pod's CPU from the rest, nor see another
        # machine's at all, so `bottleneck` and `contended` skip (monitor_checks).
        where = "" if engine.node.local else ", not this host"
        info["unseen"] = f"{engine.node.name} (Kubernetes{where})"
    else:
        info["pid"] = pid  # whose /proc/<pid>/mountinfo the checks read
        dirs = process_dirs(pid)
        info["cgroup"] = {controller: str(path) for controller, path in dirs.items()}
        if info["limits"]:
            info["limits_enforced"] = read_limits(dirs, majmin(mount.device.path))
    return info
