"""A private Docker daemon per storage configuration; never the user's daemon.

Its data-root lives on the filesystem under test, so the storage driver's
layers, named volumes and the containers' writable layers all land there. It
has its own socket, exec-root and config file under /run/layerbench/<id>, no
bridge and no iptables rules (trials use no network), and, where the host runs
no containerd of its own, a containerd it starts and supervises itself.

Teardown does not trust the happy path: after the daemon has stopped (or been
killed), every process that still names this daemon's exec-root or data-root
(its containerd, shims, fuse-overlayfs) and every process in its cgroup parent
is killed by PID, and every mount below both roots is unmounted.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import requests
from docker.errors import DockerException

from layerbench.errors import PrerequisiteError, TeardownError, ToolError
from layerbench.proc import Runner, spawn
from layerbench.spec.engines import API_ENGINE
from layerbench.spec.transports import without_device
from layerbench.stack import devmapper
from layerbench.stack.cgroups import CGROUP_ROOT, remove_parent
from layerbench.stack.ledger import tracked
from layerbench.stack.target import BuildContext, Mount

RUN_ROOT = Path("/run/layerbench")
SYSTEM_CONTAINERD = Path("/run/containerd/containerd.sock")
# Directories every dockerd/containerd creates outside its roots; removed when
# we created them and they are empty again.
HOST_DIRS = (Path("/run/docker/plugins"), Path("/run/docker"), Path("/run/containerd/s"), Path("/run/containerd"))
READY_TIMEOUT_S = 120.0  # an emulated (TCG) guest or a busy host starts dockerd slowly
STOP_TIMEOUT_S = 20.0
STRAY_TIMEOUT_S = 5.0
API_TIMEOUT_S = 300
PROBE_TIMEOUT_S = 2
API_ERRORS = (DockerException, requests.RequestException)
INFO_KEYS = (
    "Driver",
    "DriverStatus",
    "ServerVersion",
    "KernelVersion",
    "CgroupVersion",
    "CgroupDriver",
    "DockerRootDir",
    "SecurityOptions",
    "DefaultRuntime",
)


@dataclass
class ApiDaemon:
    """A private daemon that speaks Docker's API (dockerd, or Podman's service), reached by the Docker SDK."""

    client: docker.DockerClient
    socket: Path
    data_root: Path
    exec_root: Path
    driver: str
    pid: int
    version: str
    info: dict[str, Any] = field(default_factory=dict)
    log: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)
    kind: str = API_ENGINE  # the engine behind the API: Podman's service speaks it too (stack/engines/podman.py)

    @property
    def cgroup_parent(self) -> str:
        return cgroup_parent(self.exec_root)


def cgroup_parent(exec_root: Path) -> str:
    """Containers' cgroups go under /layerbench/<daemon>, removed with the daemon."""
    return f"/layerbench/{exec_root.name}"


def daemon_config(exec_root: Path, more: dict[str, Any] | None = None) -> dict[str, Any]:
    """The daemon's own config file, so /etc/docker/daemon.json (the user's) is never read; ``more`` is
    the engine's (an OCI runtime it registers, say).

    20.10 writes its identity key to /etc/docker/key.json unless told otherwise;
    it goes to the exec-root instead and disappears with it.
    """
    return {"deprecated-key-path": str(exec_root / "key.json"), **(more or {})}


def dockerd_argv(data_root: Path, exec_root: Path, driver: str, storage_opts: Iterable[str] = ()) -> list[str]:
    namespace = f"layerbench-{exec_root.name}"
    return [
        "dockerd",
        f"--config-file={exec_root}/daemon.json",
        f"--data-root={data_root}",
        f"--exec-root={exec_root}",
        f"--pidfile={exec_root}/dockerd.pid",
        f"--host=unix://{exec_root}/docker.sock",
        "--group=root",
        f"--storage-driver={driver}",
        *(f"--storage-opt={opt}" for opt in storage_opts),
        "--bridge=none",
        "--iptables=false",
        "--ip6tables=false",
        "--ip-masq=false",
        "--userland-proxy=false",
        # If the host runs a containerd, 20.10 uses it instead of starting its own:
        # our own namespaces keep our containers apart from the user's ("moby").
        f"--containerd-namespace={namespace}",
        f"--containerd-plugins-namespace={namespace}-plugins",
        # cgroupfs on every host: with systemd as PID 1 on cgroup v2, Docker defaults to the systemd
        # driver, which takes only a "<name>.slice" parent (and needs systemd's D-Bus). The container's
        # cgroup is then /layerbench/<daemon>/<container> on v1 and v2 alike.
        "--exec-opt=native.cgroupdriver=cgroupfs",
        f"--cgroup-parent={cgroup_parent(exec_root)}",
        "--log-level=info",
    ]


@contextmanager
def private_dockerd(
    mount: Mount,
    driver: str,
    ctx: BuildContext,
    storage_opts: tuple[str, ...] = (),
    config: dict[str, Any] | None = None,
) -> Iterator[ApiDaemon]:
    """A dockerd with ``driver`` (and its ``storage_opts``) whose data-root is on ``mount``; ``config`` is
    more of its config file (daemon_config)."""
    exec_root = RUN_ROOT / uuid.uuid4().hex[:8]  # short: unix socket paths are limited to 108 bytes
    data_root = data_parent(mount, ctx) / f"docker-{exec_root.name}"  # held stacks may share the filesystem
    log = ctx.work_dir / f"dockerd-{exec_root.name}.log"
    host_dirs = [d for d in HOST_DIRS if not d.exists()]

    def start(rid: int) -> ApiDaemon:
        try:
            process = _spawn(data_root, exec_root, driver, log, storage_opts, config)
        except (OSError, ToolError) as exc:  # no dockerd binary, or /run not writable: nothing runs yet
            shutil.rmtree(exec_root, ignore_errors=True)
            ctx.ledger.removed(rid)
            raise PrerequisiteError(f"cannot start dockerd: {exc}", hint="install docker.io (make setup)") from exc
        ctx.ledger.update(rid, pid=process.pid)
        try:
            engine = _ready(process, exec_root, data_root, driver, log)
        except BaseException:
            stop_and_sweep(process, exec_root, data_root, host_dirs, ctx.runner)
            log.unlink(missing_ok=True)  # its tail is in the error already
            ctx.ledger.removed(rid)  # nothing of it is left: cleanup has nothing to do
            raise
        ctx.ledger.update(rid, containerd_pid=engine.info.get("containerd_pid"))
        return engine

    def stop(engine: ApiDaemon) -> None:
        remove_containers_and_volumes(engine)
        engine.client.close()
        assert engine.process is not None  # set by _ready
        stop_and_sweep(engine.process, exec_root, data_root, host_dirs, ctx.runner)
        log.unlink(missing_ok=True)  # a daemon that stopped cleanly leaves nothing, its log included

    detail = {
        "driver": driver,
        "storage_opts": list(storage_opts),
        "log": str(log),
        "data_root": str(data_root),
        "cgroup_parent": cgroup_parent(exec_root),
    }
    with tracked(ctx.ledger, "dockerd", str(exec_root), start, stop, **detail) as engine:
        yield engine


def data_parent(mount: Mount, ctx: BuildContext) -> Path:
    """Where a private daemon keeps its data: on the filesystem under test. Where fio's own engine reaches a
    remote export from a container (no device, no filesystem here), nothing of the daemon's storage is
    measured and it goes in the run's directory."""
    if mount.mountpoint is not None:
        return mount.mountpoint
    if without_device(mount.device.kind):
        return ctx.work_dir
    raise PrerequisiteError(
        "a private daemon needs a filesystem for its data-root", hint="set a filesystem for this stack"
    )


def _spawn(
    data_root: Path,
    exec_root: Path,
    driver: str,
    log: Path,
    storage_opts: tuple[str, ...] = (),
    config: dict[str, Any] | None = None,
) -> subprocess.Popen[bytes]:
    RUN_ROOT.mkdir(mode=0o700, parents=True, exist_ok=True)
    exec_root.mkdir(mode=0o700)
    (exec_root / "daemon.json").write_text(json.dumps(daemon_config(exec_root, config)))
    # The daemon's environment: nothing that redirects its temp dir or root (DOCKER_TMPDIR,
    # DOCKER_RAMDISK) and no systemd notify socket that is not ours.
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKER_") and k != "NOTIFY_SOCKET"}
    return spawn(dockerd_argv(data_root, exec_root, driver, storage_opts), log, env=env)


def _ready(process: subprocess.Popen[bytes], exec_root: Path, data_root: Path, driver: str, log: Path) -> ApiDaemon:
    socket = exec_root / "docker.sock"
    started = time.monotonic()
    while time.monotonic() - started < READY_TIMEOUT_S:
        if process.poll() is not None:
            raise PrerequisiteError(
                f"dockerd --storage-driver={driver} exited {process.returncode} on {data_root.parent}: {tail(log)}",
                hint=f"the full log is {log}",
            )
        client = connect(socket)
        if client is not None:
            engine = _engine(client, process, socket, exec_root, data_root, driver, log)
            engine.info["start_s"] = round(time.monotonic() - started, 3)
            return engine
        time.sleep(0.05)
    raise PrerequisiteError(
        f"dockerd ({driver}) did not answer on {socket} within {READY_TIMEOUT_S:.0f}s: {tail(log)}",
        hint=f"the full log is {log}",
    )


def connect(socket: Path) -> docker.DockerClient | None:
    """A client once the API answers a ping, else None.

    The socket exists before the API serves, and a request sent then waits; the probe's
    short timeout keeps that wait inside the readiness budget.
    """
    if not socket.exists():
        return None
    url = f"unix://{socket}"
    try:
        probe = docker.APIClient(base_url=url, version="auto", timeout=PROBE_TIMEOUT_S)
    except API_ERRORS:
        return None
    try:
        probe.ping()
    except API_ERRORS:
        return None
    finally:
        probe.close()
    return docker.DockerClient(base_url=url, timeout=API_TIMEOUT_S)


def _engine(
    client: docker.DockerClient,
    process: subprocess.Popen[bytes],
    socket: Path,
    exec_root: Path,
    data_root: Path,
    driver: str,
    log: Path,
) -> ApiDaemon:
    info = client.info()
    if info.get("Driver") != driver:
        client.close()
        raise PrerequisiteError(
            f"dockerd runs storage driver {info.get('Driver')!r}, not {driver!r}: {tail(log)}",
            hint=f"the full log is {log}",
        )
    os.chmod(socket, 0o600)
    kept: dict[str, Any] = {k: info.get(k) for k in INFO_KEYS}
    kept["containerd_pid"] = _containerd_pid(exec_root)
    kept["containerd"] = "managed" if kept["containerd_pid"] else f"system ({SYSTEM_CONTAINERD})"
    version = str(info.get("ServerVersion"))
    return ApiDaemon(client, socket, data_root, exec_root, driver, process.pid, version, kept, log, process)


def _containerd_pid(exec_root: Path) -> int | None:
    try:
        return int((exec_root / "containerd" / "containerd.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def remove_containers_and_volumes(engine: ApiDaemon) -> None:
    # A daemon that died cannot answer; the process and mount sweep in _stop still
    # removes what its containers left, so an unreachable API is not fatal here.
    try:
        containers = engine.client.containers.list(all=True)
        volumes = engine.client.volumes.list()
        # Networks outlive a daemon's restart, and so would their bridge links: ours go first.
        networks = engine.client.networks.list(filters={"label": "layerbench.run"})
    except API_ERRORS:
        return
    for item in [*containers, *volumes]:
        with contextlib.suppress(*API_ERRORS):
            item.remove(force=True)
    for net in networks:
        with contextlib.suppress(*API_ERRORS):
            net.remove()


def stop_and_sweep(
    process: subprocess.Popen[bytes], exec_root: Path, data_root: Path, host_dirs: list[Path], runner: Runner
) -> None:
    """Stop the daemon, then sweep: strays killed, mounts undone, directories removed."""
    _terminate(process)
    left = sweep(exec_root, data_root, runner)
    if left:
        raise TeardownError(f"dockerd {exec_root.name} left {', '.join(left)}", hint="run `layerbench cleanup`")
    shutil.rmtree(exec_root, ignore_errors=True)
    remove_parent(cgroup_parent(exec_root))
    # Image layers and volumes: a daemon of another driver may follow on this filesystem.
    shutil.rmtree(data_root, ignore_errors=True)
    if data_root.exists():
        raise TeardownError(f"could not remove dockerd's data-root {data_root}", hint="run `layerbench cleanup`")
    for d in host_dirs:
        with contextlib.suppress(OSError):  # not empty: another daemon uses it now
            d.rmdir()


def sweep(exec_root: Path, data_root: Path, runner: Runner) -> list[str]:
    """Kill what a daemon started, unmount what it mounted, remove the devices it made (devicemapper's
    loop-lvm: device-mapper devices over loop devices of files in its data-root); return what is left.

    Works on a daemon that is gone (killed, or from a dead run): everything is found
    from its two roots and its cgroup parent, nothing from its API.
    """
    roots = [exec_root, data_root]
    parent = cgroup_parent(exec_root)
    shim_sockets = _shim_sockets(exec_root)
    _kill_all(_strays(roots, parent))
    for root in roots:
        _unmount_below(root, runner)
    _kill_all(_strays(roots, parent))  # fuse daemons whose mount is gone now
    for sock in shim_sockets:
        sock.unlink(missing_ok=True)
    left = [f"mount {m}" for root in roots for m in mounts_below(root)]
    if not left:  # a device under a mount that stayed is busy: removing it would only fail
        left += devmapper.release_below(data_root, runner)
    return left + [f"process {pid}" for pid in _strays(roots, parent)]


def _terminate(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (dockerd then stops its containerd), wait; SIGKILL its process group if it hangs."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):  # unkillable (stuck in I/O): _stop reports it
            process.wait(STRAY_TIMEOUT_S)


def _shim_sockets(exec_root: Path) -> list[Path]:
    """containerd 1.6 puts shim sockets in /run/containerd/s; each bundle's `address` names one.

    A shim that exits cleanly removes its socket; one we have to kill does not.
    """
    found = []
    for address in exec_root.glob("containerd/daemon/io.containerd.runtime.v2.task/*/*/address"):
        with contextlib.suppress(OSError):
            path = address.read_text().strip().removeprefix("unix://")
            if path.startswith("/run/containerd/s/"):
                found.append(Path(path))
    return found


def mentions(argv: Iterable[str], roots: Iterable[Path]) -> bool:
    """Does a command line name one of these roots (as an argument, an option value or a path below)?"""
    prefixes = [str(r).rstrip("/") for r in roots]
    for arg in argv:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if any(value == p or value.startswith(p + "/") for p in prefixes):
            return True
    return False


def _strays(roots: list[Path], parent: str) -> list[int]:
    """Processes this daemon started that are still alive: by its private paths and its cgroup."""
    me = os.getpid()
    found = set(_cgroup_pids(parent))
    for entry in Path("/proc").glob("[0-9]*"):
        argv = cmdline(int(entry.name))
        if argv and mentions(argv, roots):
            found.add(int(entry.name))
    found.discard(me)
    return sorted(found)


def _cgroup_pids(parent: str, root: Path = CGROUP_ROOT) -> list[int]:
    bases = [root] if (root / "cgroup.controllers").exists() else [p for p in root.glob("*") if p.is_dir()]
    pids: set[int] = set()
    for base in bases:
        for procs in (base / parent.strip("/")).glob("**/cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(line) for line in procs.read_text().split())
    return sorted(pids)


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _kill_all(pids: list[int]) -> None:
    """SIGTERM, a short grace, then SIGKILL: containerd gets to unmount its state; shims do not need to."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STRAY_TIMEOUT_S
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + STRAY_TIMEOUT_S
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, only not reaped by its parent yet


def mounts_below(root: Path, mounts_text: str | None = None) -> list[str]:
    """Mount points at or below ``root`` (from /proc/self/mounts, its octal escapes decoded)."""
    text = Path("/proc/self/mounts").read_text() if mounts_text is None else mounts_text
    prefix = str(root).rstrip("/")
    targets = [_unescape(line.split()[1]) for line in text.splitlines() if len(line.split()) > 1]
    return [t for t in targets if t == prefix or t.startswith(prefix + "/")]


def _unescape(field_: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field_)


def _unmount_below(root: Path, runner: Runner) -> None:
    for target in sorted(set(mounts_below(root)), key=len, reverse=True):
        if runner(["umount", target], timeout=60).rc != 0:
            # Busy (a process we could not kill holds it): detach it so the filesystem can go.
            runner(["umount", "-l", target], timeout=60)


def log_tail(text: str, lines: int = 3) -> str:
    """The daemon's last errors (its info lines are noise in an error message), else its last lines."""
    rows = [_message(r) for r in text.strip().splitlines()]
    errors = [_message(r) for r in text.strip().splitlines() if re.search(r"level=(error|fatal)|^failed to start", r)]
    return " | ".join((errors or rows)[-lines:]) or "(empty log)"


def _message(row: str) -> str:
    match = re.search(r'msg="((?:[^"\\]|\\.)*)"', row)
    return match.group(1).replace('\\"', '"') if match else row.strip()


def tail(log: Path) -> str:
    try:
        return log_tail(log.read_text(errors="replace"))
    except OSError:
        return "(no log)"
