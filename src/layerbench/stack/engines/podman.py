"""The Podman engine: a private, rootful ``podman system service`` per storage driver.

Everything Podman keeps is private to this service: its storage (``--root``)
and volumes on the filesystem under test, its run state, temp dir, file locks
(not the host-wide ``/dev/shm/libpod_lock``), runc's state (not ``/run/runc``)
and CNI config under /run/layerbench/<id>, and its own containers.conf and
storage.conf (the host's /etc/containers files are never read). Its
Docker-compatible API serves the Docker SDK, so the placement, image and exec
code is Docker's. Containers go under the cgroup /layerbench/<id> with the
cgroupfs manager (no systemd needed), and conmon follows them there
(<parent>/conmon), so the sweep finds every process by cgroup and path.

Measured containers are never auto-removed: Podman mounts an ``--rm``
container's overlay with ``volatile`` (fsync a no-op), which would measure a
filesystem that skips every flush. The volatile-mount check flags it if it
ever happens.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import docker

from layerbench.errors import PrerequisiteError, ToolError
from layerbench.proc import Runner, spawn
from layerbench.spec.engines.podman import PodmanCaps
from layerbench.spec.engines.runtimes import RUNTIMES
from layerbench.spec.models import EngineSpec
from layerbench.stack import dockerd, runtimes
from layerbench.stack.dockerd import RUN_ROOT, ApiDaemon, cgroup_parent
from layerbench.stack.engines.container import ApiEngine
from layerbench.stack.engines.docker import EXEC_FAILED_RC
from layerbench.stack.engines.docker import reclaim as docker_reclaim
from layerbench.stack.ledger import Resource, tracked
from layerbench.stack.protocols import HostProbe
from layerbench.stack.target import BuildContext, Mount

READY_TIMEOUT_S = 120.0
# What Podman 4.3 still creates outside its roots: runc's default state dir (conmon's exit commands
# call runc without our --runtime-flag) and the image library's blob-info cache (on every import).
# Removed after the service when it created them; a host whose Podman uses them keeps them.
# Each OCI runtime's default state dir is such a dir: /run/runc, /run/crun, /run/runsc (spec/engines/runtimes.py).
HOST_DIRS = (
    Path("/run/runc"),
    Path("/run/crun"),
    Path("/run/runsc"),
    Path("/var/lib/containers/cache"),
    Path("/var/lib/containers"),
)
BLOB_CACHE = Path("/var/lib/containers/cache/blob-info-cache-v1.boltdb")
DRIVERS = ("overlay", "vfs", "btrfs")
# Podman 4.3's default ulimits fail on this kind of host (measured, issue 13): every container
# gets these instead, as `--ulimit` would say on the command line.
ULIMITS = ("nofile=20000:20000", "nproc=4096:4096")


def paths(exec_root: Path, data_root: Path) -> dict[str, Path]:
    return {
        "runroot": exec_root / "runroot",
        "tmpdir": exec_root / "tmp",
        "runc": exec_root / "runc",
        "cni": exec_root / "cni",
        "socket": exec_root / "podman.sock",
        "containers_conf": exec_root / "containers.conf",
        "storage_conf": exec_root / "storage.conf",
        "volumes": data_root / "volumes",
    }


def containers_conf(exec_root: Path, data_root: Path) -> str:
    """The service's only containers.conf (CONTAINERS_CONF replaces the host's files)."""
    p = paths(exec_root, data_root)
    ulimits = ", ".join(f'"{u}"' for u in ULIMITS)
    return (
        "[containers]\n"
        f"default_ulimits = [{ulimits}]\n"
        'netns = "none"\n'  # trials use no network; a database fleet under Podman is refused (spec/rules.py)
        'log_driver = "k8s-file"\n'  # no journald here
        "[network]\n"
        'network_backend = "cni"\n'
        f'network_config_dir = "{p["cni"]}"\n'
        "[engine]\n"
        'cgroup_manager = "cgroupfs"\n'  # no systemd needed; containers under our own parent
        'events_logger = "file"\n'
        f'events_logfile_path = "{p["tmpdir"]}/events.log"\n'
        'lock_type = "file"\n'  # locks in tmp_dir, not the host-wide /dev/shm/libpod_lock
        f'tmp_dir = "{p["tmpdir"]}"\n'
        f'volume_path = "{p["volumes"]}"\n'
        f'static_dir = "{data_root}/libpod"\n'
    )


def storage_conf(exec_root: Path, data_root: Path, driver: str) -> str:
    """The service's only storage.conf: the host's options (a mount_program, say) are not ours to inherit."""
    runroot = paths(exec_root, data_root)["runroot"]
    return f'[storage]\ndriver = "{driver}"\ngraphroot = "{data_root}"\nrunroot = "{runroot}"\n'


def podman_argv(exec_root: Path, data_root: Path, driver: str, runtime: str = "runc") -> list[str]:
    p = paths(exec_root, data_root)
    flags = [f"--runtime-flag={arg.lstrip('-')}" for arg in RUNTIMES[runtime].args]
    return [
        "podman",
        f"--root={data_root}",
        f"--runroot={p['runroot']}",
        f"--tmpdir={p['tmpdir']}",
        f"--storage-driver={driver}",
        "--cgroup-manager=cgroupfs",
        # runc unless the spec names another: with crun installed too (apt may pick it for podman's
        # "crun | runc") Podman 4.3 prefers crun, which refuses this kind of host ("cgroups in hybrid
        # mode not supported"); runc is what every other engine here runs.
        f"--runtime={runtime}",
        # the runtime's state beside ours; only conmon's exit commands still use its default (HOST_DIRS)
        f"--runtime-flag=root={p['runc']}",
        *flags,
        "--events-backend=file",
        f"--network-config-dir={p['cni']}",
        f"--volumepath={p['volumes']}",
        "--log-level=info",
        "system",
        "service",
        "--time=0",  # serve until stopped, however long a trial is quiet
        f"unix://{p['socket']}",
    ]


def service_env(exec_root: Path, data_root: Path) -> dict[str, str]:
    p = paths(exec_root, data_root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTAINERS_", "DOCKER_")) and k != "NOTIFY_SOCKET"}
    return {
        **env,
        "CONTAINERS_CONF": str(p["containers_conf"]),
        "CONTAINERS_STORAGE_CONF": str(p["storage_conf"]),
        # Podman 4.3 spools every image import through $TMPDIR (/var/tmp unless set) as api_load.tar<n> and
        # never removes it: 85 MB per tools image. In the service's own tmp dir it goes with the service.
        "TMPDIR": str(p["tmpdir"]),
    }


@contextmanager
def start(mount: Mount, spec: EngineSpec, ctx: BuildContext) -> Iterator[ApiEngine]:
    driver = spec.driver or "overlay"
    with private_podman(mount, driver, ctx, spec.runtime or "runc") as daemon:
        daemon.info["runtime"] = runtimes.facts(spec.runtime or "runc", ctx.runner)
        # Never auto_remove: an --rm container's overlay is mounted volatile (fsync does nothing).
        yield ApiEngine(daemon, {"cgroup_parent": daemon.cgroup_parent, "auto_remove": False})


@contextmanager
def private_podman(mount: Mount, driver: str, ctx: BuildContext, runtime: str = "runc") -> Iterator[ApiDaemon]:
    if mount.mountpoint is None:
        raise PrerequisiteError("Podman needs a filesystem for its storage", hint="set a filesystem for this stack")
    exec_root = RUN_ROOT / uuid.uuid4().hex[:8]  # short: unix socket paths are limited to 108 bytes
    data_root = mount.mountpoint / f"podman-{exec_root.name}"  # held stacks may share the filesystem
    log = ctx.work_dir / f"podman-{exec_root.name}.log"
    host_dirs = [d for d in HOST_DIRS if not d.exists()]

    def create(rid: int) -> ApiDaemon:
        process = _spawn(exec_root, data_root, driver, log, rid, ctx, runtime)
        try:
            return _ready(process, exec_root, data_root, driver, log)
        except BaseException:
            _stop(process, exec_root, data_root, host_dirs, ctx)
            log.unlink(missing_ok=True)  # its tail is in the error already
            ctx.ledger.removed(rid)
            raise

    def remove(engine: ApiDaemon) -> None:
        dockerd.remove_containers_and_volumes(engine)
        engine.client.close()
        assert engine.process is not None  # set by _ready
        _stop(engine.process, exec_root, data_root, host_dirs, ctx)
        log.unlink(missing_ok=True)

    detail = {
        "driver": driver,
        "log": str(log),
        "data_root": str(data_root),
        "cgroup_parent": cgroup_parent(exec_root),
        "host_dirs": [str(d) for d in host_dirs],  # cleanup removes them too, after a dead run
    }
    with tracked(ctx.ledger, "podman", str(exec_root), create, remove, **detail) as engine:
        yield engine


def _stop(
    process: subprocess.Popen[bytes], exec_root: Path, data_root: Path, host_dirs: list[Path], ctx: BuildContext
) -> None:
    if BLOB_CACHE.parent in host_dirs:
        BLOB_CACHE.unlink(missing_ok=True)  # ours: the directory did not exist before this service
    dockerd.stop_and_sweep(process, exec_root, data_root, host_dirs, ctx.runner)


def reclaim(res: Resource, runner: Runner) -> None:
    """A dead run's service: swept as a dockerd is (roots and cgroup), then the host dirs it created."""
    docker_reclaim(res, runner)
    host_dirs = [Path(d) for d in res.detail.get("host_dirs", [])]
    if BLOB_CACHE.parent in host_dirs:
        BLOB_CACHE.unlink(missing_ok=True)
    for d in host_dirs:
        with contextlib.suppress(OSError):  # not empty: another service uses it now
            d.rmdir()


def _spawn(
    exec_root: Path, data_root: Path, driver: str, log: Path, rid: int, ctx: BuildContext, runtime: str = "runc"
) -> subprocess.Popen[bytes]:
    RUN_ROOT.mkdir(mode=0o700, parents=True, exist_ok=True)
    exec_root.mkdir(mode=0o700)
    (exec_root / "containers.conf").write_text(containers_conf(exec_root, data_root))
    (exec_root / "storage.conf").write_text(storage_conf(exec_root, data_root, driver))
    try:
        argv = podman_argv(exec_root, data_root, driver, runtime)
        process = spawn(argv, log, env=service_env(exec_root, data_root))
    except (OSError, ToolError) as exc:  # no podman binary: nothing runs yet
        shutil.rmtree(exec_root, ignore_errors=True)
        ctx.ledger.removed(rid)
        raise PrerequisiteError(f"cannot start podman: {exc}", hint="apt-get install podman (make setup)") from exc
    ctx.ledger.update(rid, pid=process.pid)
    return process


def _ready(process: subprocess.Popen[bytes], exec_root: Path, data_root: Path, driver: str, log: Path) -> ApiDaemon:
    socket = paths(exec_root, data_root)["socket"]
    started = time.monotonic()
    while time.monotonic() - started < READY_TIMEOUT_S:
        if process.poll() is not None:
            raise PrerequisiteError(
                f"podman --storage-driver={driver} exited {process.returncode} on {data_root.parent}: {_tail(log)}",
                hint=f"the full log is {log}",
            )
        client = dockerd.connect(socket)
        if client is not None:
            return _engine(client, process, exec_root, data_root, driver, log, time.monotonic() - started)
        time.sleep(0.05)
    raise PrerequisiteError(
        f"podman ({driver}) did not answer on {socket} within {READY_TIMEOUT_S:.0f}s: {_tail(log)}",
        hint=f"the full log is {log}",
    )


def _engine(
    client: docker.DockerClient,
    process: subprocess.Popen[bytes],
    exec_root: Path,
    data_root: Path,
    driver: str,
    log: Path,
    seconds: float,
) -> ApiDaemon:
    info = client.info()
    if info.get("Driver") != driver:
        client.close()
        raise PrerequisiteError(f"podman runs storage driver {info.get('Driver')!r}, not {driver!r}: {_tail(log)}")
    socket = paths(exec_root, data_root)["socket"]
    kept = {k: info.get(k) for k in dockerd.INFO_KEYS}
    kept["start_s"] = round(seconds, 3)
    version = str(info.get("ServerVersion"))
    pid = process.pid
    return ApiDaemon(client, socket, data_root, exec_root, driver, pid, version, kept, log, process, "podman")


def failure(rc: int | None, stderr: str) -> str | None:
    """An exec the service could not run (container or service gone): rebuild, not the tool's fault."""
    return "engine-error" if rc == EXEC_FAILED_RC and "podman exec" in stderr else None


def _tail(log: Path) -> str:
    """Podman logs as logrus does (level=error msg="..."), so dockerd's reader fits."""
    return dockerd.tail(log)


def probe(ask: HostProbe) -> PodmanCaps:
    """Podman's storage drivers whose kernel needs this host meets (none without podman)."""
    return PodmanCaps(podman_drivers(ask.host.filesystems, ask.host.binaries))


def podman_drivers(filesystems: frozenset[str], binaries: frozenset[str]) -> frozenset[str]:
    if "podman" not in binaries:
        return frozenset()
    needs = {"overlay": "overlay" in filesystems, "vfs": True, "btrfs": "btrfs" in filesystems}
    return frozenset(driver for driver, met in needs.items() if met)
