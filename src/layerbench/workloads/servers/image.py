"""A server from an image: all layerbench knows of it is its port and the protocol its client speaks.

The image brings its own command, configuration and data layout; the fleet
starts its container (stack/fleet.py) with the placement where the image keeps
its data, and waits for the protocol's own readiness probe, the one the server
of that protocol layerbench builds itself answers to. First starts initialise
data directories (an official image's initdb), so the wait is generous.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from functools import partial

from layerbench.proc import Runner
from layerbench.spec.databases import ServerSpec
from layerbench.workloads.servers import cassandra, mongo_wire, postgres, redis
from layerbench.workloads.servers.base import ServerDef

Probe = Callable[[str, int, Runner, str], bool]
PROBES: dict[str, Probe] = {
    "postgres": postgres.ready,
    "redis": redis.ready,
    "cql": cassandra.ready,
    "mongodb": mongo_wire.ready,
}
READY_TIMEOUT_S = 300.0  # an image's first start (initialising its data) and a JVM's


def definition(server: ServerSpec) -> ServerDef:
    assert server.kind == "image" and server.port is not None  # by ServerSpec's validation
    return ServerDef(
        kind="image",
        default_port=server.port,
        binaries=lambda cache: {},
        files=lambda cache: [],
        prepare=lambda config: [],
        argv=lambda config: [],  # the image's own command (or the spec's) runs as the container's process
        ready=partial(_without_password, PROBES[server.protocol]),
        authenticates=False,  # the image's own: its clients are given no password
        stop_signal=signal.SIGTERM,  # what `docker stop` sends: every official image shuts down cleanly on it
        ready_timeout_s=READY_TIMEOUT_S,
    )


def _without_password(probe: Probe, host: str, port: int, runner: Runner, password: str) -> bool:
    """The protocol's probe as a client with no password (an image's authentication is its own)."""
    return probe(host, port, runner, "")
