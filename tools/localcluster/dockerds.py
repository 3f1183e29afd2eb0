"""Debian's dockerd in network namespaces: what the local swarm (swarm.py) and the local Docker hosts
(dockerhosts.py) share.

Each daemon has its own --data-root, --exec-root (where the containerd it starts and manages keeps its
state and socket), --pidfile, sockets and cgroup parent, all under its own directory, and containerd
namespaces of its own in case a system containerd at /run/containerd is found and shared. It runs with
--iptables=false (no NAT needed; Docker's userland proxy forwards a published port) and a clean
environment (no DOCKER_* of the caller's, no NOTIFY_SOCKET: there is no systemd here).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import docker

from layerbench.run.measure.monitor import parse_pid_stat
from localcluster import netns, procs
from localcluster.netns import Network, Node


@dataclass
class Daemons:
    """Daemons under one directory, one per node of a network (netns.py): what state.json holds."""

    root: str
    tag: str
    subnet: int
    names: list[str]
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def network(self) -> Network:
        return netns.plan(self.tag, self.subnet, self.names)

    def node_dir(self, name: str) -> Path:
        return Path(self.root) / name

    def address(self, name: str) -> str:
        """The node's address on the network: where this host reaches the ports it publishes."""
        return next(n.ip for n in self.network.nodes if n.name == name)

    def save(self) -> None:
        (Path(self.root) / "state.json").write_text(json.dumps(asdict(self), indent=1))


def start(
    d: Path,
    node: Node,
    hosts: list[str],
    namespace: str,
    cgroup_root: str,
    before: Callable[[], None] | None = None,
    extra: tuple[str, ...] = (),
) -> int:
    """A dockerd in ``node``'s network namespace, its state under ``d`` (made here), listening at each of
    ``hosts`` (dockerd's --host URLs), with ``extra`` options; its PID. ``before`` runs in the child before
    exec (a UTS namespace)."""
    d.mkdir()
    (d / "daemon.json").write_text(json.dumps({"deprecated-key-path": str(d / "key.json")}))
    argv = [
        *node.enter(), "dockerd",
        f"--config-file={d / 'daemon.json'}", f"--data-root={d / 'data'}", f"--exec-root={d / 'exec'}",
        f"--pidfile={d / 'dockerd.pid'}", *(f"--host={h}" for h in hosts), "--group=root",
        "--storage-driver=overlay2", "--iptables=false", "--ip6tables=false", "--ip-masq=false",
        "--exec-opt=native.cgroupdriver=cgroupfs",
        f"--cgroup-parent=/{cgroup_root}",
        f"--containerd-namespace={namespace}",
        f"--containerd-plugins-namespace={namespace}-plugins",
        *extra,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKER_") and k != "NOTIFY_SOCKET"}
    env["DOCKER_SERVICE_PREFER_OFFLINE_IMAGE"] = "1"  # no registry answers here: use the node's own image
    return procs.start(argv, d / "dockerd.log", env=env, clear_env=True, before=before)


def client(url: str) -> docker.DockerClient:
    return docker.DockerClient(base_url=url, timeout=60)


def answers(pid: int, d: Path, url: str) -> bool:
    """Whether the daemon of ``pid`` (its state under ``d``) answers at ``url``; raises if it exited."""
    if not procs.alive(pid):
        log = (d / "dockerd.log").read_text(errors="replace").splitlines()[-5:]
        raise RuntimeError(f"{d.name}'s dockerd exited: {' | '.join(log)}")
    if url.startswith("unix://") and not Path(url.removeprefix("unix://")).is_socket():
        return False
    try:
        with contextlib.closing(client(url)) as c:
            return bool(c.ping())
    except docker.errors.DockerException:
        return False


def stop(running: dict[str, tuple[int, str]], root: Path, last: str | None = None) -> None:
    """Each daemon's containers (through its URL, while it answers), then the daemons (name → (PID, URL)):
    all together but ``last``, then ``last`` (a swarm's manager); then any containerd or shim under
    ``root`` that outlived its daemon."""
    live = {name: (pid, url) for name, (pid, url) in running.items() if procs.alive(pid)}
    for _, url in live.values():
        if url.startswith("unix://") and not Path(url.removeprefix("unix://")).is_socket():
            continue
        with contextlib.suppress(docker.errors.DockerException), contextlib.closing(client(url)) as c:
            for container in c.containers.list(all=True, sparse=True):
                with contextlib.suppress(docker.errors.NotFound):
                    container.remove(force=True)
    _stop_together([pid for name, (pid, _) in live.items() if name != last])
    _stop_together([pid for name, (pid, _) in live.items() if name == last])
    for leftover, _ in processes_under(root):
        procs.stop(leftover, grace_s=5.0)


def teardown(root: Path, network: Network, cgroup_roots: list[str]) -> list[str]:
    """Once the daemons are stopped: their mounts, cgroups, the namespaces; what would not go, named."""
    left = procs.unmount_under(root)
    for name in cgroup_roots:
        left += procs.remove_cgroup(name)
    left += netns.delete(network)
    return left + [f"process {pid}: {cmd}" for pid, cmd in processes_under(root)]


def _stop_together(pids: list[int]) -> None:
    """SIGTERM to each, then wait for each (a dockerd takes seconds to shut down); SIGKILL if it hangs."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for pid in pids:
        try:
            procs.wait_for(lambda p=pid: not procs.alive(p), 30.0, f"dockerd {pid} to exit", every_s=0.1)
        except TimeoutError:
            procs.stop(pid, grace_s=5.0)  # SIGTERM again, then SIGKILL


def processes_under(d: Path) -> list[tuple[int, str]]:
    """Processes whose arguments name a path below ``d``: a daemon's containerd and its shims."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            args = cmdline.read_bytes().split(b"\0")
            if any(str(d).encode() in a for a in args):
                found.append((int(cmdline.parent.name), b" ".join(args).decode(errors="replace")[:160]))
    ours = _ancestry()  # a shell that named the directory (`localcluster swarm down DIR`) is not the swarm's
    return [(pid, cmd) for pid, cmd in found if pid not in ours]


def _ancestry() -> set[int]:
    """This process and those it runs under."""
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            pid = parse_pid_stat(Path(f"/proc/{pid}/stat").read_text()).ppid
        except (OSError, IndexError, ValueError):
            break
    return pids
