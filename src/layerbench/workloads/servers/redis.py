"""Redis: Debian's redis-server, configured on its command line, sized to its memory.

Persistence defaults to an append-only file fsynced every second (Redis's own
recommendation); ``rdb`` keeps Redis's default snapshots, ``none`` turns both
off. ``maxmemory`` is 3/4 of the memory given (the rest is Redis's own
overhead and the AOF rewrite buffer) with ``noeviction``: a data set that does
not fit makes writes fail, and YCSB counts those as errors rather than Redis
silently dropping keys.
"""

from __future__ import annotations

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
    return [
        binaries()["redis-server"],
        "--bind", c.listen,
        "--port", str(c.port),
        "--dir", c.data_dir,
        "--protected-mode", "no",  # reachable only from the host: loopback, or the private bridge
        "--daemonize", "no",
        "--maxmemory", str(c.memory * 3 // 4),
        "--maxmemory-policy", "noeviction",
        "--maxclients", str(c.max_clients + CLIENT_HEADROOM),
        *PERSISTENCE[c.spec.persistence],
    ]  # fmt: skip


def ready(host: str, port: int, runner: Runner) -> bool:
    done = runner(["redis-cli", "-h", host, "-p", str(port), "ping"], timeout=10)
    return done.rc == 0 and done.stdout.strip() == "PONG"


DEFINITION = ServerDef(
    kind="redis",
    default_port=6379,
    binaries=binaries,
    files=files,
    prepare=prepare,
    argv=argv,
    ready=ready,
    stop_signal=signal.SIGTERM,  # Redis fsyncs its AOF and exits
)
