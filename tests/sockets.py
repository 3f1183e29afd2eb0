"""Where a database server listens, and whether it lets a client in without the run's password.

The host tier (tests/integration/test_server_sockets.py) and the cluster tier (tests/k8s) ask the same
two questions of a running server: which TCP sockets its process listens on, in its own network
namespace (``/proc/PID/net/tcp`` and ``tcp6`` are that namespace's tables; the process's own sockets
are those whose inodes its file descriptors name), and whether a client without a password is let in
(each protocol's first exchange, spoken here: no client library to trust).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from layerbench.workloads.servers import cassandra

LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


@dataclass(frozen=True)
class Listening:
    address: str
    port: int

    @property
    def private(self) -> bool:
        """Loopback, or a private address (a bridge's, a namespace's): never the wildcard, which is every
        interface the namespace has."""
        ip = ipaddress.ip_address(self.address)
        return not ip.is_unspecified and (ip.is_loopback or ip.is_private)


def listening(pid: int) -> list[Listening]:
    """The TCP sockets process ``pid`` listens on, as its network namespace's tables show them."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == LISTEN and fields[9] in inodes:
                address, port = fields[1].split(":")
                found.append(Listening(_address(address), int(port, 16)))
    return sorted(set(found), key=lambda s: (s.address, s.port))


def _address(hex_address: str) -> str:
    """/proc/net/tcp's address: 32-bit words in the host's byte order (little-endian here)."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(words)
    mapped = getattr(ip, "ipv4_mapped", None)  # a JVM's IPv4 socket, in tcp6 as ::ffff:a.b.c.d
    return str(mapped or ip)


def lets_in_without_password(kind: str, host: str, port: int) -> bool:
    """Does the server at host:port let a client without a password in?"""
    with socket.create_connection((host, port), timeout=10) as s:
        return PROBES[kind](s)


def _redis(s: socket.socket) -> bool:
    s.sendall(b"PING\r\n")
    reply = s.recv(256)
    return reply.startswith(b"+PONG")  # -NOAUTH Authentication required.


def _postgres(s: socket.socket) -> bool:
    """A StartupMessage as user postgres: AuthenticationOk (R, 0) straight away means no password asked."""
    body = struct.pack(">i", 196608) + b"user\0postgres\0database\0postgres\0\0"
    s.sendall(struct.pack(">i", len(body) + 4) + body)
    kind, length = struct.unpack(">ci", _exactly(s, 5))
    payload = _exactly(s, length - 4)
    return kind == b"R" and struct.unpack(">i", payload[:4])[0] == 0  # 10: SASL (SCRAM); E: refused


def _cql(s: socket.socket) -> bool:
    answer, _ = cassandra._exchange(s, cassandra.STARTUP, struct.pack(">H", 1) + cassandra._string("CQL_VERSION")
                                    + cassandra._string("3.0.0"))  # fmt: skip
    return answer == cassandra.READY  # AUTHENTICATE: a password is asked


def _exactly(s: socket.socket, n: int) -> bytes:
    data = s.recv(n, socket.MSG_WAITALL)
    if len(data) < n:
        raise ConnectionError(f"the server closed the connection after {len(data)} of {n} bytes")
    return data


PROBES = {"redis": _redis, "postgres": _postgres, "cassandra": _cql}


def exposed(kind: str, pid: int, host: str, port: int) -> list[str]:
    """What is wrong with this server: a socket on a non-private address that lets a client in without a
    password. ``host``:``port`` is where its client reaches it (a port a node publishes may differ)."""
    sockets = listening(pid)
    if not sockets:
        return [f"{kind} (pid {pid}) listens on no TCP socket"]
    open_door = lets_in_without_password(kind, host, port)
    return [
        f"{kind} listens on {s.address}:{s.port} (reached at {host}:{port}) and lets a client in without a password"
        for s in sockets
        if not s.private and open_door
    ]


# --- during a run: its servers from its ledger, each probed from inside its own network namespace ---------


def server_rows(ledger: Path) -> list[dict[str, object]]:
    """The detail of every live server row of the run's ledger, started or not (its PID recorded or not)."""
    from layerbench.stack.ledger import Ledger  # the ledger's own reader: its schema is its business

    book = Ledger(ledger, "sockets-test")
    try:
        return [{"ident": r.ident, **r.detail} for r in book.live() if r.kind == "server"]
    finally:
        book.close()


def serving(kind: str, pid: int) -> bool:
    """Does the server answer yet (it may be preparing: initdb, a JVM starting)? Asked in its namespace."""
    return bool(listening(pid)) and all(_in_namespace(pid, kind, s) is not None for s in listening(pid))


def open_doors(kind: str, pid: int) -> list[str]:
    """Every socket of the server on a non-private address that lets a client in without a password, each
    asked from inside the server's own network namespace (where even a wildcard socket is reachable)."""
    return [
        f"{kind} (pid {pid}) listens on {s.address}:{s.port} and lets a client in without a password"
        for s in listening(pid)
        if not s.private and _in_namespace(pid, kind, s)
    ]


def private_and_closed(kind: str, pid: int) -> list[str]:
    """What is wrong with a server that must listen at private addresses only (never the wildcard) and
    want the run's password at each of them (a pod's, reachable by whoever reaches the pod network):
    each of its sockets, asked from inside its own network namespace."""
    found = listening(pid)
    if not found:
        return [f"{kind} (pid {pid}) listens on no TCP socket"]
    wrong = [f"{kind} (pid {pid}) listens on {s.address}:{s.port}: not private" for s in found if not s.private]
    for s in found:
        answer = _in_namespace(pid, kind, s)
        if answer is not False:
            said = "did not answer the probe" if answer is None else "lets a client in without a password"
            wrong.append(f"{kind} (pid {pid}) at {s.address}:{s.port} {said}")
    return wrong


def _in_namespace(pid: int, kind: str, s: Listening) -> bool | None:
    """lets_in_without_password, run by this Python inside the network namespace of ``pid``; None: no answer."""
    ip = ipaddress.ip_address(s.address)
    host = ("::1" if ip.version == 6 else "127.0.0.1") if ip.is_unspecified else s.address
    code = (
        f"import sys; from tests import sockets; print(sockets.lets_in_without_password({kind!r}, {host!r}, {s.port}))"
    )
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "src")])}
    done = subprocess.run(
        ["nsenter", f"--net=/proc/{pid}/ns/net", "--", sys.executable, "-c", code],
        capture_output=True, text=True, timeout=60, env=env, cwd=root,
    )  # fmt: skip
    if done.returncode != 0:
        return None
    return done.stdout.strip() == "True"
