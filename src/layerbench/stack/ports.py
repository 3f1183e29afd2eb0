"""Loopback TCP ports for servers and a guest's forwards, free now and bound by someone else a moment later.

Between the check here and the bind there (a server's start, qemu's ``hostfwd`` after a guest's disk is
made) another socket may take the port. A port of the kernel's ephemeral range can be taken by any
outgoing connection on the host (the cluster tier, beside the VM tier in CI, opens them all the time);
qemu then exits at once ("Could not set up host forwarding rule") and the guest is lost. So the ports
come from outside that range, where only a program that names its port binds.
"""

from __future__ import annotations

import contextlib
import errno
import random
import socket
from pathlib import Path

EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
FLOOR = 10000  # below it sit the well-known and most registered services' ports
CEILING = 65535
TRIES = 200
# Kubernetes' default NodePort range: on a node, kube-proxy's rules send a connection to such a port on
# any local address (loopback too) to a Service, and no socket here shows it.
NODE_PORTS = (30000, 32767)


def ephemeral_range(path: Path = EPHEMERAL) -> tuple[int, int]:
    """The kernel's ephemeral ports (both ends included); Linux's default where the file cannot be read."""
    try:
        low, high = (int(x) for x in path.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def candidates(low: int, high: int) -> list[int]:
    """Ports at or above FLOOR outside [low, high] and NODE_PORTS; empty where nothing is left."""
    outside = (range(low, high + 1), range(NODE_PORTS[0], NODE_PORTS[1] + 1))
    return [p for p in range(FLOOR, CEILING + 1) if not any(p in r for r in outside)]


def free_ports(count: int, rng: random.Random | None = None) -> list[int]:
    """``count`` distinct ports free on 127.0.0.1 now, outside the ephemeral range where it leaves room.

    Each is held open until all are found, so none is handed out twice.
    """
    pool = candidates(*ephemeral_range())
    rng = rng or random.SystemRandom()
    with contextlib.ExitStack() as held:
        ports: list[int] = []
        for port in rng.sample(pool, min(len(pool), TRIES)):
            if len(ports) == count:
                break
            s = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            try:
                s.bind(("127.0.0.1", port))
            except OSError as e:
                if e.errno not in (errno.EADDRINUSE, errno.EACCES):
                    raise
                continue
            ports.append(port)
        while len(ports) < count:  # no room outside the range (a host that widened it): the kernel picks
            s = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
        return ports


def free_port() -> int:
    """One port free on 127.0.0.1 now, outside the ephemeral range where it leaves room."""
    return free_ports(1)[0]
