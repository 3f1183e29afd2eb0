"""FerretDB 1.24: MongoDB's wire protocol on SQLite, built from the Go module proxy by set-up.

No MongoDB server can be had without a registry, so layerbench drives MongoDB's protocol through
FerretDB (tools/ferretdb, built by tools/build-ferretdb.sh into the cache): one static binary
that keeps each MongoDB database as one SQLite file (WAL journal, FerretDB's defaults) in its
data directory. Its numbers are FerretDB's on SQLite, not MongoDB's (with one fix the build
applies: _id lookups use the _id index; scans still read the whole collection). It has no
memory setting of its own: SQLite's page cache is per connection, at SQLite's default size. The
image carries the same binary (static: no libraries). It serves when it answers a MongoDB ``isMaster`` command;
SIGTERM closes its listener, connections and databases, and it exits.
"""

from __future__ import annotations

import signal
from pathlib import Path

from layerbench.errors import PrerequisiteError
from layerbench.workloads.servers import mongo_wire
from layerbench.workloads.servers.base import ServerConfig, ServerDef


def binary(cache_dir: Path) -> Path:
    return cache_dir / "ferretdb" / "bin" / "ferretdb"


def binaries(cache_dir: Path) -> dict[str, str]:
    path = binary(cache_dir)
    if not path.is_file():
        raise PrerequisiteError(
            f"FerretDB is not built in {path.parent}",
            hint=f"make ferretdb builds it (tools/build-ferretdb.sh {cache_dir}; needs Go 1.24 or later)",
        )
    return {"ferretdb": str(path)}


def files(cache_dir: Path) -> list[str]:
    return []


def prepare(c: ServerConfig) -> list[list[str]]:
    return []  # FerretDB creates a database's SQLite file when a client first writes to it


def argv(c: ServerConfig) -> list[str]:
    host = f"[{c.listen}]" if ":" in c.listen else c.listen  # an IPv6 address in host:port
    return [
        binaries(c.cache_dir)["ferretdb"],
        "-listen-addr", f"{host}:{c.port}",
        "-sqlite-dir", c.data_dir,
        "-log-level", "warn",  # info logs every connection opened and closed
    ]  # fmt: skip


DEFINITION = ServerDef(
    kind="ferretdb",
    default_port=27017,
    binaries=binaries,
    files=files,
    prepare=prepare,
    argv=argv,
    ready=mongo_wire.ready,
    stop_signal=signal.SIGTERM,  # the wrapper cancels FerretDB's context: all closed, exit 0
)
