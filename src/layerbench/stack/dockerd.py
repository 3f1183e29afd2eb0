"""A private Docker daemon per storage configuration; never the user's daemon.

Its data-root lives on the filesystem under test, so the storage driver's
layers, named volumes and the container's writable layer all land there. It
has its own socket and exec-root under /run/layerbench, no bridge and no
iptables rules (trials use no network), and it supervises its own containerd.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
from docker.errors import DockerException

from layerbench import proc
from layerbench.errors import PrerequisiteError, TeardownError
from layerbench.stack.ledger import tracked
from layerbench.stack.target import BuildContext, Mount

RUN_ROOT = Path("/run/layerbench")
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0


@dataclass
class DockerEngine:
    client: docker.DockerClient
    socket: Path
    data_root: Path
    exec_root: Path
    driver: str
    pid: int
    version: str
    info: dict[str, Any] = field(default_factory=dict)


def dockerd_argv(data_root: Path, exec_root: Path, driver: str) -> list[str]:
    return [
        "dockerd",
        f"--data-root={data_root}",
        f"--exec-root={exec_root}",
        f"--pidfile={exec_root}/dockerd.pid",
        f"--host=unix://{exec_root}/docker.sock",
        f"--storage-driver={driver}",
        "--bridge=none",
        "--iptables=false",
        "--ip6tables=false",
        "--ip-masq=false",
        "--userland-proxy=false",
        "--log-level=warn",
    ]


@contextmanager
def private_dockerd(mount: Mount, driver: str, ctx: BuildContext) -> Iterator[DockerEngine]:
    if mount.mountpoint is None:
        raise PrerequisiteError("Docker needs a filesystem for its data-root")
    exec_root = RUN_ROOT / uuid.uuid4().hex[:8]  # short: unix socket paths are limited to 108 bytes
    data_root = mount.mountpoint / f"docker-{exec_root.name}"
    log = ctx.work_dir / f"dockerd-{exec_root.name}.log"

    def start(rid: int) -> DockerEngine:
        RUN_ROOT.mkdir(mode=0o700, exist_ok=True)
        exec_root.mkdir(mode=0o700)
        with log.open("w") as out:
            # A daemon outlives any one command, so proc.run (which waits) does not fit;
            # its own session lets teardown signal the whole process group.
            daemon = subprocess.Popen(
                dockerd_argv(data_root, exec_root, driver),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        ctx.ledger.update(rid, pid=daemon.pid, exec_root=str(exec_root), data_root=str(data_root))
        try:
            return _ready(daemon, exec_root, data_root, driver, log)
        except BaseException:
            _stop(daemon.pid, exec_root, data_root)
            raise

    def stop(engine: DockerEngine) -> None:
        _remove_containers(engine)
        engine.client.close()
        _stop(engine.pid, exec_root, data_root)

    with tracked(ctx.ledger, "dockerd", str(exec_root), start, stop, driver=driver, log=str(log)) as engine:
        yield engine


def _ready(proc: subprocess.Popen[bytes], exec_root: Path, data_root: Path, driver: str, log: Path) -> DockerEngine:
    socket = exec_root / "docker.sock"
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise PrerequisiteError(f"dockerd ({driver}) exited {proc.returncode}: {_tail(log)}")
        if socket.exists():
            with contextlib.suppress(DockerException):
                client = docker.DockerClient(base_url=f"unix://{socket}", timeout=120)
                info = client.info()
                return _checked(client, info, socket, data_root, exec_root, driver, proc.pid, log)
        time.sleep(0.1)
    raise PrerequisiteError(f"dockerd ({driver}) not ready after {READY_TIMEOUT_S:.0f}s: {_tail(log)}")


def _checked(
    client: docker.DockerClient,
    info: dict[str, Any],
    socket: Path,
    data_root: Path,
    exec_root: Path,
    driver: str,
    pid: int,
    log: Path,
) -> DockerEngine:
    if info.get("Driver") != driver:
        client.close()
        raise PrerequisiteError(f"dockerd runs storage driver {info.get('Driver')!r}, not {driver!r}: {_tail(log)}")
    os.chmod(socket, 0o600)
    keep = ("Driver", "DriverStatus", "ServerVersion", "KernelVersion", "CgroupVersion", "DockerRootDir")
    return DockerEngine(
        client,
        socket,
        data_root,
        exec_root,
        driver,
        pid,
        str(info.get("ServerVersion")),
        {k: info.get(k) for k in keep},
    )


def _remove_containers(engine: DockerEngine) -> None:
    with contextlib.suppress(DockerException):
        for container in engine.client.containers.list(all=True):
            container.remove(force=True, v=True)
        engine.client.volumes.prune()


def _stop(pid: int, exec_root: Path, data_root: Path) -> None:
    """SIGTERM, wait, SIGKILL the group; then unmount whatever it left and remove its exec-root."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if not _wait_gone(pid, STOP_TIMEOUT_S):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        _wait_gone(pid, 5)
    _kill_group_leftovers(pid)
    for root in (exec_root, data_root):
        _unmount_below(root)
    shutil.rmtree(exec_root, ignore_errors=True)
    # Image layers and volumes: the filesystem goes with its layer anyway, but a
    # daemon of another driver may follow on it and needs the room.
    shutil.rmtree(data_root, ignore_errors=True)
    if _mounts_below(exec_root) or _mounts_below(data_root):
        raise TeardownError(f"mounts left below {exec_root} or {data_root} after dockerd stopped")


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.1)
    return False


def _kill_group_leftovers(pgid: int) -> None:
    # containerd and its shims run in dockerd's process group (its session); a
    # shim can outlive a killed dockerd. Only processes in *our* group are touched.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _mounts_below(root: Path) -> list[str]:
    prefix = str(root).rstrip("/") + "/"
    lines = Path("/proc/mounts").read_text().splitlines()
    targets = [line.split()[1] for line in lines if line.split()]
    return [t for t in targets if t.startswith(prefix) or t == str(root)]


def _unmount_below(root: Path) -> None:
    for target in sorted(_mounts_below(root), key=len, reverse=True):
        proc.run(["umount", "-l", target], timeout=60)


def _tail(log: Path, lines: int = 5) -> str:
    try:
        return " | ".join(log.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"
