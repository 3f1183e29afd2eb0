"""PostgreSQL: Debian's server binaries, a data directory made by initdb, sized to its memory.

Debian keeps the server in /usr/lib/postgresql/<version>/bin, off PATH; the
newest installed version is used unless ``postgres`` is on PATH. The image
carries the same binaries plus what they read at run time: the share
directory (initdb's catalog scripts), the plugins initdb loads (PL/pgSQL, the
snowball dictionaries, the encoding conversions) and the time-zone data
(Debian builds with the system's).

It listens at one address (loopback, or its container's own) and admits only the user
``postgres`` with the run's password, by SCRAM-SHA-256 (initdb reads it from a 0600 file
beside the data directory; clients from a 0600 pgpass file).
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
from pathlib import Path

from layerbench.errors import PrerequisiteError
from layerbench.proc import Runner
from layerbench.workloads.servers.base import ServerConfig, ServerDef

ZONEINFO = "/usr/share/zoneinfo"
PLUGINS = ("plpgsql.so", "dict_snowball.so", "*_and_*.so")
MIB = 2**20
USER = "postgres"
AUTH = "scram-sha-256"
PWFILE = "pwfile"  # initdb's --pwfile, beside the data directory


def bindir() -> Path:
    on_path = shutil.which("postgres")
    if on_path:
        return Path(os.path.realpath(on_path)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=_version)
    if not versions:
        raise PrerequisiteError("PostgreSQL is not installed", hint="apt-get install postgresql (make setup does)")
    return Path(versions[-1]).parent


def _version(path: str) -> tuple[int, ...]:
    return tuple(int(p) for p in Path(path).parent.parent.name.split(".") if p.isdigit())


def binaries(cache_dir: Path | None = None) -> dict[str, str]:
    here = bindir()
    # initdb runs `postgres -V` through popen(3), which needs /bin/sh by that very path.
    return {**{name: str(here / name) for name in ("postgres", "initdb")}, "sh": "/bin/sh"}


def files(cache_dir: Path | None = None) -> list[str]:
    root = bindir().parent  # /usr/lib/postgresql/15
    share = Path("/usr/share/postgresql") / root.name
    found = [str(p) for p in share.rglob("*") if p.is_file() and "man" not in p.relative_to(share).parts[:1]]
    for pattern in PLUGINS:
        found += glob.glob(str(root / "lib" / pattern))
    found += [str(p) for p in Path(ZONEINFO).rglob("*") if p.is_file()]  # is_file: links to files, not dirs
    return sorted(found)


def setup_files(c: ServerConfig) -> dict[str, str]:
    """initdb's password file, beside the data directory (initdb wants that one empty)."""
    return {PWFILE: c.password + "\n"} if c.password else {}


def prepare(c: ServerConfig) -> list[list[str]]:
    # --no-sync: initdb's own fsyncs are set-up, not the workload, and take seconds on a loop device.
    initdb = str(bindir() / "initdb")
    auth = [f"--auth={AUTH}", f"--pwfile={Path(c.data_dir).parent / PWFILE}"] if c.password else ["--auth=trust"]
    return [[initdb, "-D", c.data_dir, "--no-sync", *auth, f"--username={USER}", "--no-locale", "-E", "UTF8"]]


def argv(c: ServerConfig) -> list[str]:
    settings = {
        "listen_addresses": c.listen,
        "password_encryption": AUTH,
        "unix_socket_directories": "",  # TCP only: the client is on the host
        "shared_buffers": f"{max(1, c.memory // 4 // MIB)}MB",
        "effective_cache_size": f"{max(1, c.memory * 3 // 4 // MIB)}MB",
        "max_connections": str(c.max_clients),
        "jit": "off",  # JIT would pull in LLVM (~100 MB) for no gain on YCSB's point queries
        "huge_pages": "off",
        "timezone": "UTC",
        "log_timezone": "UTC",
    }
    out = [str(bindir() / "postgres"), "-D", c.data_dir, "-p", str(c.port)]
    for key, value in settings.items():
        out += ["-c", f"{key}={value}"]
    return out


def config_files(c: ServerConfig) -> dict[str, str]:
    # Loopback natively; in a container the host connects from the bridge's gateway: "samenet" is the
    # server's own subnets. Each admits only a client with the run's password (SCRAM: it never crosses
    # the network in clear).
    method = AUTH if c.password else "trust"
    sources = ["127.0.0.1/32", "samenet", *([f"{c.client_address}/32"] if c.client_address else [])]
    return {"pg_hba.conf": "".join(f"host all all {s} {method}\n" for s in sources)}


def ready(host: str, port: int, runner: Runner, password: str = "") -> bool:
    """Does it accept connections (pg_isready asks without logging in: no password needed)."""
    probe = [str(bindir() / "pg_isready"), "-q", "-h", host, "-p", str(port), "-U", "postgres", "-t", "1"]
    return runner(probe, timeout=10).rc == 0


DEFINITION = ServerDef(
    kind="postgres",
    default_port=5432,
    binaries=binaries,
    files=files,
    prepare=prepare,
    argv=argv,
    ready=ready,
    config_files=config_files,
    setup_files=setup_files,
    stop_signal=signal.SIGINT,  # "fast" shutdown: clients are cut, the checkpoint is written
)
