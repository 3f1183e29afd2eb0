"""What this host can build: a snapshot the feasibility rules (spec/rules.py) read.

Probed by ``layerbench.stack.capabilities.probe``; kept as plain data here so
the rules stay pure and testable without root.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class HostCaps:
    """What this host has, as probed once per run: root, kernel, filesystems, devices, tools.

    ``notes`` holds what the probe noticed and a person should know (a device
    node without its driver, a tool in /usr/sbin but not on PATH, ...).
    """

    is_root: bool
    kernel: str
    filesystems: frozenset[str]  # usable: in /proc/filesystems, or a loadable module in /lib/modules/$(uname -r)
    mkfs: frozenset[str]  # fs types whose mkfs.<type> binary exists
    loop: bool  # /dev/loop-control exists and its driver is there (/proc/misc) or loadable
    zram: bool  # /sys/class/zram-control/hot_add exists (or modprobe zram works)
    device_mapper: bool  # device-mapper in /proc/misc or dm_mod loadable (a bare /dev/mapper/control is not enough)
    fuse: bool  # /dev/fuse exists and its driver is there or loadable
    binaries: frozenset[str]  # which of capabilities.TOOLS are on PATH
    dm_thin: bool = False  # device-mapper's thin-pool target (dm-thin-pool) is built in, loaded or loadable
    notes: tuple[str, ...] = ()  # human-readable remarks from probing
    servers: frozenset[str] = frozenset()  # database servers installed (postgres, redis)
    clients: frozenset[str] = frozenset()  # tools beyond fio that are ready: ycsb (java, jars), pgbench, iozone
    # perf (`profile: cpu`), probed only for experiments that profile: None where it records system-wide.
    profiler_missing: str | None = "not probed: the experiment profiles nothing"
    # Remote devices (stack/remote/needs.py): feature -> None where this host has it, else why not.
    # Features: storage-host, the qdiscs netem and tbf, and what each transport's clients need (their rows in
    # spec/transports/, probed as stack/remote/<transport> says); an absent one was not probed.
    remote: dict[str, str | None] = field(default_factory=dict)
    # Images of image servers (spec/databases.py), probed only for experiments that name them:
    # reference or archive path -> None where the engine can have it, else why not.
    images: dict[str, str | None] = field(default_factory=dict)
    # Each engine's own probe result, under its name in the engines' registry (spec/engines/): only that engine's
    # module reads it (``spec.engines.<engine>.of(caps)``), and an engine absent here was not probed.
    engines: dict[str, object] = field(default_factory=dict)

    def with_engine(self, kind: str, found: object) -> HostCaps:
        """This snapshot with ``found`` as engine ``kind``'s probe result (a test's host, a probe's last step)."""
        return replace(self, engines={**self.engines, kind: found})
