"""Redis: Debian's redis-server, configured on its command line, sized to its memory.

Persistence defaults to an append-only file fsynced every second (Redis's own
recommendation); ``rdb`` keeps Redis's default snapshots, ``none`` turns both
off. ``maxmemory`` is 3/4 of the memory given (the rest is Redis's own
overhead and the AOF rewrite buffer) with ``noeviction``: a data set that does
not fit makes writes fail, and YCSB counts those as errors rather than Redis
silently dropping keys.

It listens at one address (loopback, or its container's own) and requires the run's password
(``requirepass``, from a config file in its data directory, never on its command line).
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

from layerbench.errors import PrerequisiteError
from layerbench.proc import Runner
from layerbench.workloads.servers.base import ServerConfig, ServerDef

PERSISTENCE = {
    "aof-everysec": ["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""],
    "aof-always": ["--appendonly", "yes", "--appendfsync", "always", "--save", ""],
    "rdb": ["--appendonly", "no"],
    "none": ["--appendonly", "no", "--save", ""],
}
CONFIG = "redis.conf"
CLIENT_HEADROOM = 32  # redis-cli probes and the like, beside the workload's threads


def binaries(cache_dir: Path | None = None) -> dict[str, str]:
    path = shutil.which("redis-server")
    if path is None:
        raise PrerequisiteError("redis-server is not installed", hint="apt-get install redis-server (make setup does)")
    return {"redis-server": path}


def files(cache_dir: Path | None = None) -> list[str]:
    return []


def prepare(c: ServerConfig) -> list[list[str]]:
    return []


def argv(c: ServerConfig) -> list[str]:
    # The config file first (its requirepass stays off the command line, which every user may read).
    return [
        binaries()["redis-server"],
        f"{c.data_dir}/{CONFIG}",
        "--bind", c.listen,
        "--port", str(c.port),
        "--dir", c.data_dir,
        # Protected mode refuses clients from other addresses only while no password is set; one always is.
        "--protected-mode", "yes",
        "--daemonize", "no",
        "--maxmemory", str(c.memory * 3 // 4),
        "--maxmemory-policy", "noeviction",
        "--maxclients", str(c.max_clients + CLIENT_HEADROOM),
        *PERSISTENCE[c.spec.persistence],
    ]  # fmt: skip


def config_files(c: ServerConfig) -> dict[str, str]:
    """The password, in a file of the server's own (0600): every client must AUTH with the run's password."""
    return {CONFIG: f"requirepass {c.password}\n" if c.password else ""}


def ready(host: str, port: int, runner: Runner, password: str = "") -> bool:
    # redis-cli reads the password from its environment: never on a command line.
    env = {**os.environ, "REDISCLI_AUTH": password} if password else None
    done = runner(["redis-cli", "--no-auth-warning", "-h", host, "-p", str(port), "ping"], timeout=10, env=env)
    return done.rc == 0 and done.stdout.strip() == "PONG"


DEFINITION = ServerDef(
    kind="redis",
    default_port=6379,
    binaries=binaries,
    files=files,
    prepare=prepare,
    argv=argv,
    ready=ready,
    config_files=config_files,
    stop_signal=signal.SIGTERM,  # Redis fsyncs its AOF and exits
)
