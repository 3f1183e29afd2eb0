"""The vm+docker engine: a container in a qemu guest (seed 002's VM-C-L and VM-C-H).

The guest is the vm engine's (engines/vm/: its disk a file on the stack's filesystem, with a filesystem
of the same type made in the guest). A dockerd runs there as a transient systemd unit, with the same
arguments as a private dockerd on the host (stack/dockerd.py) and its data-root on the guest's disk; the
tools image is the host's binaries and libraries (stack/image.py), imported in the guest, so fio is the
same file as in every other container cell. The placements are the container's: writable-layer (VM-C-L),
bind (a directory of the guest's filesystem: VM-C-H), volume, tmpfs. Everything is driven with the docker
CLI in the guest, over the guest's command channel: argument lists, never a shell.

The ledger records the guest (engines/vm/guest.py), not what runs in it: the guest's root is a snapshot that
its power-off discards and its disk file is removed with the stack, so nothing made in it can outlive
the guest.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from layerbench.errors import PrerequisiteError, ToolError
from layerbench.proc import Completed
from layerbench.spec.models import EngineSpec, Limits, PlacementSpec, StackSpec
from layerbench.stack import dockerd, image
from layerbench.stack.engines.container import tools
from layerbench.stack.engines.vm import SETUP_TIMEOUT_S, forwards, guest_on
from layerbench.stack.engines.vm.guest import GUEST_MOUNT, Guest
from layerbench.stack.engines.vm.guest_servers import GuestHandle, prepare, server_unit
from layerbench.stack.fleet import (
    IMAGE_TOOLS,
    Endpoint,
    Starter,
    data_bytes,
    server_config,
    wait_ready,
)
from layerbench.stack.target import BuildContext, Exec, Mount, Put, Target
from layerbench.workloads.servers import SERVER_UID, ServerDef

EXEC_ROOT = Path("/run/layerbench/vm-docker")
DATA_ROOT = Path(GUEST_MOUNT) / "docker"
SOCKET = f"unix://{EXEC_ROOT}/docker.sock"
UNIT = "layerbench-dockerd"
DOCKER = ["docker", "--host", SOCKET]
DATA = "/data"
TMPFS_HEADROOM = 64 * 2**20
# dockerd's start under emulation on a busy host: it is polled (its `docker version`) until it answers.
READY_LIMIT_S = 600.0
READY_POLL_S = 1.0
# What the docker CLI says when the daemon or the container went away: the engine's failure, not the tool's.
GONE_MARKERS = ("Cannot connect to the Docker daemon", "No such container", "is not running")


@dataclass
class VmDockerEngine:
    guest: Guest
    tools_image: str
    ports: list[tuple[int, int]]  # (host, guest): one forwarded port per database server
    kind: str = "vm+docker"
    facts: dict[str, Any] = field(default_factory=dict)

    def place(
        self, mount: Mount, stack: StackSpec, data_bytes: int, ctx: BuildContext
    ) -> AbstractContextManager[Target]:
        return _placed(self, mount, stack.placement, data_bytes, ctx)

    def server_starter(self, definition: ServerDef, exits: contextlib.ExitStack, ctx: BuildContext) -> Starter:
        """A database fleet here: one container per server, on the guest's network (its port forwarded)."""
        ref, _ = _import_image(
            self.guest,
            ctx,
            {**image.resolve(IMAGE_TOOLS), **definition.binaries(ctx.cache_dir)},
            definition.files(ctx.cache_dir),
        )
        return partial(_server, self, ref)


@contextmanager
def start(mount: Mount, spec: EngineSpec, ctx: BuildContext) -> Iterator[VmDockerEngine]:
    ports = forwards()
    with guest_on(mount, ctx, ports) as (guest, facts), _dockerd(guest, spec.driver or "overlay2"):
        ref, digests = _import_image(guest, ctx, tools(ctx))  # fio, its helpers, IOzone
        facts = {**facts, "fio_sha256": digests.get("fio"), "driver": spec.driver}
        yield VmDockerEngine(guest, ref, ports, facts=facts)


def failure(rc: int | None, stderr: str) -> str | None:
    """The guest's daemon or container went away under the command: rebuild the stack."""
    return "engine-error" if rc in (1, 125, 126) and any(m in stderr for m in GONE_MARKERS) else None


def _docker(guest: Guest, *args: str, timeout: float = SETUP_TIMEOUT_S) -> Completed:
    return guest.run([*DOCKER, *args], timeout).check()


@contextmanager
def _dockerd(guest: Guest, driver: str) -> Iterator[None]:
    config = guest.put("daemon.json", json.dumps(dockerd.daemon_config(EXEC_ROOT)))
    guest.run(["mkdir", "-p", str(EXEC_ROOT)], SETUP_TIMEOUT_S).check()
    guest.run(["cp", config, str(EXEC_ROOT / "daemon.json")], SETUP_TIMEOUT_S).check()
    argv = dockerd.dockerd_argv(DATA_ROOT, EXEC_ROOT, driver)
    guest.run(["systemd-run", f"--unit={UNIT}", "--collect", "--quiet", *argv], SETUP_TIMEOUT_S).check()
    try:
        _wait_ready(guest)
        yield
    finally:
        if guest.alive():
            guest.run(["systemctl", "stop", UNIT], SETUP_TIMEOUT_S)


def _wait_ready(guest: Guest) -> None:
    deadline = time.monotonic() + READY_LIMIT_S
    while guest.run([*DOCKER, "version"], SETUP_TIMEOUT_S).rc != 0:
        if time.monotonic() > deadline:
            journal = guest.run(["journalctl", "-u", UNIT, "-n", "20", "--no-pager"], SETUP_TIMEOUT_S).stdout
            raise PrerequisiteError(f"dockerd in the guest did not answer in {READY_LIMIT_S:.0f}s: {journal}")
        time.sleep(READY_POLL_S)


def _import_image(
    guest: Guest, ctx: BuildContext, paths: dict[str, str], files: list[str] | tuple[str, ...] = ()
) -> tuple[str, dict[str, str]]:
    """An image of these host binaries (and files), built here as for the host's daemons and imported in
    the guest; its reference and each binary's sha256."""
    entries, labels, tag = image.recipe(paths, ctx, files)
    ref = f"{image.REPOSITORY}:{tag}"
    changes = [x for c in image.changes(paths, labels) for x in ("--change", c)]
    with guest.staged_rootfs(entries, f"image-{tag}.tar") as tar:
        _docker(guest, "import", *changes, tar, ref)
    digests = {k.removeprefix(image.LABEL_PREFIX): v for k, v in labels.items()}
    return ref, digests


@contextmanager
def _placed(
    engine: VmDockerEngine, mount: Mount, spec: PlacementSpec, data_bytes: int, ctx: BuildContext
) -> Iterator[Target]:
    guest = engine.guest
    with contextlib.ExitStack() as stack:
        data = stack.enter_context(_data_options(guest, spec, data_bytes))
        name = stack.enter_context(_container(guest, engine.tools_image, ["--network", "none", *data], spec, ctx))
        info = {"placement": spec.kind, "container": name, **engine.facts}
        yield Target(_exec(guest, name), _put(guest, name), DATA, False, mount.device, engine.kind, info,
                     mount_table=_mount_table(guest, name))  # fmt: skip


@contextmanager
def _data_options(guest: Guest, spec: PlacementSpec, data_bytes: int) -> Iterator[list[str]]:
    """The docker create options that put /data where the placement says, and what they need made."""
    kind, suffix = spec.kind, uuid.uuid4().hex[:8]
    if kind == "writable-layer":
        yield []
    elif kind == "tmpfs":
        yield ["--tmpfs", f"{DATA}:size={data_bytes + TMPFS_HEADROOM}"]
    elif kind == "volume":
        _docker(guest, "volume", "create", f"lb-{suffix}")
        try:
            yield ["--mount", f"type=volume,src=lb-{suffix},dst={DATA}"]
        finally:
            _quietly(guest, [*DOCKER, "volume", "rm", "--force", f"lb-{suffix}"])
    elif kind == "bind":
        path = f"{GUEST_MOUNT}/lb-bind-{suffix}"
        guest.run(["mkdir", path], SETUP_TIMEOUT_S).check()
        try:
            yield ["--mount", f"type=bind,src={path},dst={DATA}"]
        finally:
            _quietly(guest, ["rm", "-rf", path])
    else:
        raise PrerequisiteError(f"placement {kind!r} is not a container placement")


@contextmanager
def _container(guest: Guest, ref: str, options: list[str], spec: PlacementSpec, ctx: BuildContext) -> Iterator[str]:
    """A container that sleeps while commands are exec'd into it; ``options``: its network and its /data."""
    name = f"lb-{uuid.uuid4().hex[:8]}"
    labels = ["--label", f"layerbench.run={ctx.run_id}", "--label", f"layerbench.placement={spec.kind}"]
    try:
        _docker(guest, "create", "--name", name, *labels, *options, ref, "sleep", "infinity")
        _docker(guest, "start", name)
        yield name
    finally:
        _quietly(guest, [*DOCKER, "rm", "--force", "--volumes", name])


def _exec(guest: Guest, name: str) -> Exec:
    def run(argv: Sequence[str], timeout: float) -> Completed:
        done = guest.run([*DOCKER, "exec", name, *argv], timeout)
        return Completed([str(a) for a in argv], done.rc, done.stdout, done.stderr)

    return run


def _put(guest: Guest, name: str) -> Put:
    """A small file (a job file) copied into the container's /tmp, beside the data, not in it."""

    def put(file_name: str, text: str) -> str:
        _docker(guest, "cp", guest.put(file_name, text), f"{name}:/tmp/{file_name}")
        return f"/tmp/{file_name}"

    return put


def _mount_table(guest: Guest, name: str) -> Callable[[], str]:
    """The container's mounts, read from its first process in the guest."""

    def read() -> str:
        pid = _docker(guest, "inspect", "--format", "{{.State.Pid}}", name).stdout.strip()
        return guest.run(["cat", f"/proc/{pid}/mountinfo"], SETUP_TIMEOUT_S).check().stdout

    return read


def _quietly(guest: Guest, argv: list[str]) -> None:
    """Teardown inside a guest that may be gone: its power-off takes everything with it anyway."""
    if guest.alive():
        with contextlib.suppress(ToolError):
            guest.run(argv, SETUP_TIMEOUT_S)


# --- database servers in the guest's containers ---------------------------------------------------------


@contextmanager
def _server(
    engine: VmDockerEngine,
    ref: str,
    index: int,
    stack: StackSpec,
    definition: ServerDef,
    limits: Limits,
    mount: Mount,
    ctx: BuildContext,
) -> Iterator[Endpoint]:
    """One server in a container of its own: its data at the placement, the guest's network (so qemu's
    forwarded port reaches it), prepared, configured and started as the server's user."""
    guest, (host_port, guest_port) = engine.guest, engine.ports[index]
    assert stack.server is not None  # a fleet is built only for stacks with a server
    user = f"{SERVER_UID}:{SERVER_UID}"
    with contextlib.ExitStack() as exits:
        data_opts = exits.enter_context(_data_options(guest, stack.placement, data_bytes(stack.server)))
        options = ["--network", "host", "--user", user, *data_opts]
        name = exits.enter_context(_container(guest, ref, options, stack.placement, ctx))
        data = f"{DATA}/{definition.kind}"
        _docker(guest, "exec", "--user", "0", name, "mkdir", "-p", data)
        _docker(guest, "exec", "--user", "0", name, "chown", user, DATA, data)
        config = server_config(stack, data, "0.0.0.0", guest_port, limits, ctx.cache_dir, ctx.password)
        for file_name, text in definition.setup_files(config).items():
            _copy_in(guest, name, DATA, file_name, text, user)
        prepare(guest, [*DOCKER, "exec", name], definition, config, index)
        for file_name, text in definition.config_files(config).items():
            _copy_in(guest, name, data, file_name, text, user)
        command = [*DOCKER, "exec", name, *definition.argv(config)]
        handle = partial(ContainerHandle, container=name)
        h = exits.enter_context(server_unit(guest, definition, index, command, handle))
        wait_ready(h, definition, "127.0.0.1", host_port, ctx, index)
        info = {
            "container": name,
            "guest_port": guest_port,
            "accel": guest.accel,
            "guest_kernel": guest.facts.get("kernel"),
        }
        yield Endpoint(index, "127.0.0.1", host_port, config.memory, limits, h, info)


def _copy_in(guest: Guest, container: str, directory: str, file_name: str, text: str, user: str) -> None:
    """A file into the container, the server's own (0600: it may hold the run's password)."""
    staged = guest.put(f"{container}-{file_name}", text)
    try:
        _docker(guest, "cp", staged, f"{container}:{directory}/{file_name}")
    finally:
        guest.unstage(staged)
    _docker(guest, "exec", "--user", "0", container, "chown", user, f"{directory}/{file_name}")


@dataclass
class ContainerHandle(GuestHandle):
    """A server exec'd in a container of the guest: the docker CLI that exec'd it does not pass signals on,
    so they go to the container's processes themselves, all but its init (the container is the server's)."""

    container: str = ""

    def signal(self, sig: int) -> None:
        if not self.guest.alive():
            return
        init = _docker(self.guest, "inspect", "--format", "{{.State.Pid}}", self.container).stdout.strip()
        top = self.guest.run([*DOCKER, "top", self.container, "-eo", "pid"], SETUP_TIMEOUT_S)
        pids = [p for p in top.stdout.split()[1:] if p.isdigit() and p != init]
        if pids:
            self.guest.run(["kill", f"-{int(sig)}", *pids], SETUP_TIMEOUT_S)
