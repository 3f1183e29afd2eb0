"""OCI runtimes a container engine can run a cell's containers with: what each one is, as pure data.

The container engines' (Docker's and Podman's) registry of runtimes, beside the engines' own: nothing
outside it and stack/engines/ names a runtime.

Docker and Podman hand a container to an OCI runtime: runc (the default), crun (the same job in C,
meant for cgroup v2 hosts) or runsc (gVisor: a user-space kernel between the container and the host,
whose file system goes through its own gofer). ``engine: {kind: docker, runtime: runsc}`` picks one;
stack/runtimes.py probes whether it runs here and records its version and options.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

RuntimeName = Literal["runc", "crun", "runsc"]
DEFAULT_RUNTIME = "runc"  # Docker's and (here) Podman's: what a cell without a runtime runs


@dataclass(frozen=True)
class Runtime:
    name: str
    binary: str
    package: str  # Debian's, for the refusal's hint
    # Options the engine passes on every call: gVisor's sandbox network cannot start in the host's root
    # network namespace ("cannot run with network enabled in root network namespace"), and cells run
    # without a network anyway.
    args: tuple[str, ...] = ()
    # Why a workload with io_uring cannot run under it, or None where io_uring works as on the host.
    io_uring: str | None = None
    # Why a database server (a container on a bridge network) cannot run under it, or None.
    servers: str | None = None
    # Its own options that a result records with their defaults unless ``args`` names them (gVisor's: which
    # platform, ptrace, kvm or systrap, and which file-system mode, gofer or overlay, it measured).
    recorded: dict[str, str] = field(default_factory=dict)


RUNTIMES: dict[str, Runtime] = {
    "runc": Runtime("runc", "runc", "runc"),  # the reference runtime, Docker's default
    "crun": Runtime("crun", "crun", "crun"),  # the same job in C, for cgroup v2 hosts
    "runsc": Runtime(
        "runsc",
        "runsc",
        "runsc",
        args=("--network=none",),
        recorded={"platform": "ptrace", "file-access": "exclusive", "overlay2": "none"},
        io_uring=(
            "gVisor's io_uring is incomplete: under Debian's runsc (2022-12) fio with ioengine=io_uring reported "
            "0 IOPS and aborted with 'free(): double free detected'; use libaio or psync under runsc"
        ),
        servers=(
            "a database server needs a network, and gVisor's own network stack did not start in a bridged "
            "container under Docker 20.10 here ('cannot run with network enabled in root network namespace'); "
            "its cells run with --network=none"
        ),
    ),
}
