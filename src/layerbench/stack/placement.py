"""The top layer: where the workload's data lives, natively or in a container.

Natively the workload runs on the host against the raw device or a directory
on the filesystem. In Docker, one long-lived container per placement (`sleep
infinity`) holds /data in the place the placement names, and every command of
the trial is exec'd into it:

- writable-layer: nothing mounted; /data is the image's empty directory, so
  writes go through the storage driver into the container's own layer;
- volume: a named volume of this daemon (local driver: under its data-root,
  on the filesystem under test);
- bind: a host directory on the filesystem under test, bind-mounted;
- tmpfs: memory, no device at all (a control for the others).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import tarfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docker.errors import NotFound
from docker.models.containers import Container

from layerbench.errors import PrerequisiteError, ToolError
from layerbench.proc import Completed
from layerbench.spec.databases import tuned
from layerbench.spec.engines import HOST_ENGINE
from layerbench.spec.models import Limits, PlacementSpec
from layerbench.spec.transports import without_device
from layerbench.stack.cell_cgroup import cell_cgroup
from layerbench.stack.cgroups import majmin, process_dirs, read_limits
from layerbench.stack.dockerd import API_ERRORS, ApiDaemon
from layerbench.stack.handle import marked_env, new_mark, start_time
from layerbench.stack.image import IDLE, LABEL_PREFIX, binary_digests, image_labels
from layerbench.stack.ledger import tracked
from layerbench.stack.target import BuildContext, Device, Exec, Mount, Put, Target

DATA = "/data"
TMPFS_HEADROOM = 64 * 2**20  # fio's own files beside the test file


@dataclass(frozen=True)
class Role:
    """What a container runs, and where its data directory is: a tools container idles with /data;
    an image server runs its image's own command with the data where that image keeps it."""

    data_at: str = DATA
    command: list[str] | None = field(default_factory=lambda: list(IDLE))  # None: the image's CMD
    environment: list[str] = field(default_factory=list)  # KEY=VALUE


EXIT_CODE_WAIT_S = 5.0


@contextmanager
def native_placement(
    mount: Mount, spec: PlacementSpec, ctx: BuildContext, limits: Limits = Limits()
) -> Iterator[Target]:
    """The host itself; with limits, every command runs in a cgroup of the cell's own (cell_cgroup)."""

    def put(name: str, text: str) -> str:
        # Beside the run's files, not in the placement: it must not count as test data.
        path = ctx.work_dir / name
        path.write_text(text)
        return str(path)

    info: dict[str, Any] = {"placement": spec.kind, "fio_sha256": binary_digests(["fio"])["fio"]}
    if spec.kind not in ("raw", "host-dir") or (spec.kind == "host-dir" and mount.mountpoint is None):
        raise PrerequisiteError(f"placement {spec.kind!r} on {mount.fs_type!r} is not a native placement")
    with contextlib.ExitStack() as stack:
        run = _native_run(limits, mount, ctx, info, stack)
        if spec.kind == "raw":
            yield Target(run, put, mount.device.path, True, mount.device, HOST_ENGINE, info)
            return
        assert mount.mountpoint is not None  # checked above
        path = stack.enter_context(host_dir(mount.mountpoint / f"lb-data-{uuid.uuid4().hex[:8]}", ctx))
        yield Target(run, put, str(path), False, mount.device, HOST_ENGINE, info)


def _native_run(
    limits: Limits, mount: Mount, ctx: BuildContext, info: dict[str, Any], stack: contextlib.ExitStack
) -> Exec:
    if not limits.model_dump(exclude_none=True):
        return lambda argv, timeout: recorded_run(argv, timeout, ctx)
    device = majmin(mount.device.path)
    group = stack.enter_context(cell_cgroup(limits, device, ctx))
    info["limits"] = limits.model_dump(mode="json", exclude_none=True)
    info["cgroup"] = {controller: str(path) for controller, path in group.dirs.items()}  # for the monitor
    info["limits_enforced"] = read_limits(group.dirs, device)
    return lambda argv, timeout: recorded_run(group.wrap(argv), timeout, ctx)


def recorded_run(argv: Sequence[str], timeout: float, ctx: BuildContext) -> Completed:
    """A native workload command, in the ledger while it runs: a run killed mid-trial leaves fio
    running in its own session, holding the device, until cleanup ends it."""
    mark = new_mark()
    rid = ctx.ledger.record("process", argv[0], mark=mark)

    def started(pid: int) -> None:
        ctx.ledger.update(rid, pid=pid, start_time=start_time(pid))

    try:
        return ctx.runner(argv, timeout=timeout, env=marked_env(mark), started=started)
    finally:
        ctx.ledger.removed(rid)


@contextmanager
def host_dir(path: Path, ctx: BuildContext) -> Iterator[Path]:
    def make(rid: int) -> Path:
        path.mkdir(mode=0o700)
        return path

    with tracked(ctx.ledger, "dir", str(path), make, shutil.rmtree) as made:
        yield made


@contextmanager
def container_placement(
    engine: ApiDaemon,
    image: str,
    mount: Mount,
    spec: PlacementSpec,
    limits: Limits,
    data_bytes: int,
    ctx: BuildContext,
    options: dict[str, Any] | None = None,
    role: Role | None = None,
) -> Iterator[Target]:
    """A container holding /data at the placement; ``options`` are more Docker SDK arguments
    (a network for a database server, a seccomp profile); without them it has no network.
    ``role`` is what it runs, and where its data goes: by default ``sleep infinity`` and /data."""
    role = role or Role()
    with contextlib.ExitStack() as stack:
        options = options or {}
        networked = "network" in options or "network_mode" in options
        kwargs = {
            **({} if networked else {"network_mode": "none"}),
            **({"environment": role.environment} if role.environment else {}),
            **options,
            **limit_kwargs(limits, mount.device.path),
            **_data_kwargs(engine, mount, spec, data_bytes, ctx, stack, role.data_at),
        }
        container = stack.enter_context(_container(engine, image, spec, kwargs, ctx, role.command))
        info = {
            "placement": spec.kind,
            "container": container.id[:12],
            "image": image,
            "driver": engine.driver,
            # The daemon's own account of its driver (devicemapper: its pool, loop files, deferred removal).
            "driver_status": engine.info.get("DriverStatus"),
            "runtime": engine.info.get("runtime"),  # the OCI runtime, its version and options
            "pid": _init_pid(container),  # whose /proc/<pid>/mountinfo shows the container's mounts
            "limits": limits.model_dump(mode="json", exclude_none=True),
            "fio_sha256": image_labels(engine, image).get(f"{LABEL_PREFIX}fio"),
        }
        dirs = process_dirs(info["pid"])
        info["cgroup"] = {controller: str(path) for controller, path in dirs.items()}  # for the monitor
        if info["limits"]:
            # What the kernel enforces, not what Docker accepted: the limit-applied check compares.
            info["limits_enforced"] = read_limits(dirs, majmin(mount.device.path))
        run = exec_in(engine, container)
        raw = spec.kind == "raw"  # the export itself, fio's own engine reaching it (export_kwargs)
        path = mount.device.path if raw else role.data_at
        yield Target(run, put_in(container), path, raw, mount.device, engine.kind, info)


def _init_pid(container: Container) -> int:
    """The container's first process on the host: its cgroup is the container's."""
    container.reload()
    return int(container.attrs["State"]["Pid"])


def tuning_options(tuning: str) -> dict[str, Any]:
    """Seed 001's tunings that are container options, as Docker SDK arguments (its cpuset pinning is a
    limit: spec/profiles.py; its host network is the fleet's choice of network)."""
    return {"security_opt": ["seccomp=unconfined"]} if tuned(tuning, "seccomp-unconfined") else {}


def limit_kwargs(limits: Limits, device: str) -> dict[str, Any]:
    """Limits as Docker SDK arguments; block-I/O limits on the device under the filesystem."""
    kwargs: dict[str, Any] = {}
    if limits.cpuset:
        kwargs["cpuset_cpus"] = limits.cpuset
    if limits.cpus:
        kwargs["nano_cpus"] = int(limits.cpus * 1e9)
    if limits.memory:
        kwargs["mem_limit"] = int(limits.memory)
    if limits.read_bps:
        kwargs["device_read_bps"] = [{"Path": device, "Rate": int(limits.read_bps)}]
    if limits.write_bps:
        kwargs["device_write_bps"] = [{"Path": device, "Rate": int(limits.write_bps)}]
    return kwargs


def _data_kwargs(
    engine: ApiDaemon,
    mount: Mount,
    spec: PlacementSpec,
    data_bytes: int,
    ctx: BuildContext,
    stack: contextlib.ExitStack,
    data_at: str = DATA,
) -> dict[str, Any]:
    """How the data directory (``data_at``) is provided; the volume or host directory it needs is entered
    on ``stack``."""
    if spec.kind == "writable-layer":
        return {}
    if spec.kind == "volume":
        name = stack.enter_context(_volume(engine, ctx))
        return {"volumes": {name: {"bind": data_at, "mode": "rw"}}}
    if spec.kind == "bind" and mount.mountpoint is not None:
        host = stack.enter_context(host_dir(mount.mountpoint / f"lb-bind-{uuid.uuid4().hex[:8]}", ctx))
        return {"volumes": {str(host): {"bind": data_at, "mode": "rw"}}}
    if spec.kind == "tmpfs":
        # tmpfs takes memory only for what is written, so the cap can be generous.
        return {"tmpfs": {data_at: f"size={data_bytes + TMPFS_HEADROOM}"}}
    if spec.kind == "raw" and without_device(mount.device.kind):
        return export_kwargs(mount.device)
    raise PrerequisiteError(f"placement {spec.kind!r} is not a container placement on {mount.fs_type!r}")


def export_kwargs(device: Device) -> dict[str, Any]:
    """fio's own engine reaches a remote export from the container as it does from this host: over this host's
    network, reading the files the export's URI names (``client_files``: each path inside, the host's file
    bound there read-only: a conf and a keyring of the run's own)."""
    files: dict[str, str] = device.info.get("client_files", {})
    return {
        "network_mode": "host",
        "volumes": {host: {"bind": inside, "mode": "ro"} for inside, host in files.items()},
    }


@contextmanager
def _volume(engine: ApiDaemon, ctx: BuildContext) -> Iterator[str]:
    name = f"lb-{uuid.uuid4().hex[:8]}"

    def create(rid: int) -> str:
        return str(engine.client.volumes.create(name=name, driver="local").name)

    def remove(vol: str) -> None:
        with contextlib.suppress(NotFound):
            engine.client.volumes.get(vol).remove(force=True)

    with tracked(ctx.ledger, "volume", name, create, remove, socket=str(engine.socket)) as vol:
        yield vol


@contextmanager
def _container(
    engine: ApiDaemon,
    image: str,
    spec: PlacementSpec,
    kwargs: dict[str, Any],
    ctx: BuildContext,
    command: list[str] | None = IDLE,
) -> Iterator[Container]:
    name = f"lb-{uuid.uuid4().hex[:8]}"

    def create(rid: int) -> Container:
        container = engine.client.containers.create(
            image,
            command,
            name=name,
            labels={"layerbench.run": ctx.run_id, "layerbench.placement": spec.kind},
            **kwargs,
        )
        ctx.ledger.update(rid, container=container.id)
        return container

    def remove(container: Container) -> None:
        with contextlib.suppress(NotFound):
            container.remove(force=True, v=True)

    with tracked(ctx.ledger, "container", name, create, remove, socket=str(engine.socket)) as container:
        # Started here, not in create: a container that fails to start (a limit the
        # kernel refuses) exists all the same, and must be removed on the way out.
        try:
            container.start()
        except API_ERRORS as exc:
            raise PrerequisiteError(f"container for {spec.kind} did not start: {exc}") from exc
        yield container


Killer = Callable[[Any, str], None]  # (the API client, a timed-out exec's id): end that exec's processes


def exec_in(engine: ApiDaemon, container: Container, kill: Killer | None = None) -> Exec:
    """``run(argv, timeout)`` inside the container, with the timeout proc.run has natively. A timed-out exec's
    processes are killed by their host PIDs (``kill`` otherwise: a daemon on another machine has other PIDs)."""
    api = engine.client.api

    def run(argv: Sequence[str], timeout: float) -> Completed:
        args = [str(a) for a in argv]
        try:
            return _exec(api, container, args, timeout, engine.kind, kill or _kill_exec)
        except API_ERRORS as exc:  # the container or its daemon went away: the tool could not run
            raise ToolError(args, 125, f"{engine.kind} exec in {container.name} failed: {exc}") from exc

    return run


def _exec(api: Any, container: Container, args: list[str], timeout: float, kind: str, kill: Killer) -> Completed:
    exec_id = api.exec_create(container.id, args, stdout=True, stderr=True)["Id"]
    result: dict[str, Any] = {}
    worker = threading.Thread(target=_collect, args=(api, exec_id, result), daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        kill(api, exec_id)
        worker.join(10)
        raise ToolError(args, None, f"timed out after {timeout:.0f}s in container {container.name}")
    if "error" in result:
        raise ToolError(args, 125, f"{kind} exec failed: {result['error']}")
    return Completed(args, _exit_code(api, exec_id), result["out"], result["err"])


def _collect(api: Any, exec_id: str, result: dict[str, Any]) -> None:
    try:
        out, err = api.exec_start(exec_id, demux=True)
    except API_ERRORS as exc:  # reported by run() in the caller's thread
        result["error"] = str(exc)
        return
    result["out"] = (out or b"").decode(errors="replace")
    result["err"] = (err or b"").decode(errors="replace")


def _exit_code(api: Any, exec_id: str) -> int:
    # The output stream can close a moment before the daemon records the exit code.
    deadline = time.monotonic() + EXIT_CODE_WAIT_S
    while True:
        state = api.exec_inspect(exec_id)
        if not state.get("Running") and state.get("ExitCode") is not None:
            return int(state["ExitCode"])
        if time.monotonic() > deadline:
            return 125
        time.sleep(0.02)


def _kill_exec(api: Any, exec_id: str) -> None:
    """Exec has no timeout of its own: kill the exec'd process and its children by host PID."""
    pid = int(api.exec_inspect(exec_id).get("Pid") or 0)
    if pid <= 0:
        return
    for victim in [pid, *descendants(pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)


def kill_inside(container: Container) -> Killer:
    """A timed-out exec ended from inside its container: every process there but the first (``sleep``, the
    container's init, which kill(-1) spares), as on Kubernetes; for a daemon whose PIDs are not this host's."""

    def kill(api: Any, exec_id: str) -> None:
        done = api.exec_create(container.id, ["sh", "-c", "kill -9 -1"], stdout=True, stderr=True)["Id"]
        api.exec_start(done)

    return kill


def descendants(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """Every process below ``pid`` (fio forks one worker per job)."""
    children: dict[int, list[int]] = {}
    for stat in proc.glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def put_in(container: Container) -> Put:
    def put(name: str, text: str) -> str:
        data = text.encode()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        container.put_archive("/tmp", buf.getvalue())
        return f"/tmp/{name}"

    return put
