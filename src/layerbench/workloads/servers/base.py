"""What layerbench needs to know to run a database server: one definition per kind.

A definition is data and pure functions: which host binaries and files the
server needs (the container image carries the same ones; the cache directory
is passed in, for a server run from jars that set-up fetched there), the commands that
prepare a data directory and start the server in the foreground, the probe
that says it serves, and the signal that shuts it down cleanly. Adding a
database is one module with one ``ServerDef`` (and a YCSB binding or native
client); starting, watching and stopping servers is the fleet's job
(stack/fleet.py), the same for every kind.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from layerbench.proc import Runner
from layerbench.spec.databases import ServerSpec

# nobody: PostgreSQL refuses to run as root, and the same uid exists natively and in the image.
SERVER_UID = 65534


@dataclass(frozen=True)
class ServerConfig:
    """One server instance: where its data lives and where it listens, as the server sees them."""

    data_dir: str
    listen: str
    port: int
    memory: int  # bytes it is sized to
    spec: ServerSpec
    max_clients: int
    cache_dir: Path  # where set-up put what the server runs from (Cassandra's jars)
    # Where the client connects from when that is not the server's own subnet (a pod reached through its
    # node from this host): a server that admits clients by address admits this one too.
    client_address: str | None = None
    # The run's password (BuildContext.password): the server requires it of every client (Redis's
    # requirepass, PostgreSQL's scram-sha-256, Cassandra's PasswordAuthenticator); "" for none.
    password: str = field(default="", repr=False)


@dataclass(frozen=True)
class ServerDef:
    kind: str
    default_port: int
    binaries: Callable[[Path], dict[str, str]]  # (cache dir) → name → host path of what the image must carry
    files: Callable[[Path], list[str]]  # (cache dir) → other host files it reads (share files, plugins, jars)
    prepare: Callable[[ServerConfig], list[list[str]]]  # run as SERVER_UID before the first start
    argv: Callable[[ServerConfig], list[str]]  # the server, in the foreground
    # Does it serve at host:port (probed from the host), to a client with this password ("" for none)?
    ready: Callable[[str, int, Runner, str], bool]
    config_files: Callable[[ServerConfig], dict[str, str]] = lambda c: {}  # data-dir file → text, after prepare
    # Files beside the data directory (in its parent), written before prepare: initdb's password file.
    setup_files: Callable[[ServerConfig], dict[str, str]] = lambda c: {}
    # Does it require the run's password of its clients (a server layerbench configures), or is its
    # authentication its own business (an image's)?
    authenticates: bool = True
    stop_signal: int = signal.SIGTERM
    stop_grace_s: float = 60.0
    ready_timeout_s: float = 120.0  # from its start to its first answer to the probe
