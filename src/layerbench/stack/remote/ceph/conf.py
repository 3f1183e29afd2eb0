"""The cluster's ceph.conf: every daemon's and client's paths under the run's own directory, small memory
targets, and the health checks that mean nothing on a test host turned off (each said why)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MON_PORT = 3300  # msgr2's registered port
OSD_MEMORY_TARGET = 896 * 2**20  # Ceph's floor: less is refused
PGS = 32  # the pool's placement groups: few OSDs, no autoscaler


@dataclass(frozen=True)
class Paths:
    """Where one cluster keeps its files (all under ``root``, the run's own directory)."""

    root: Path

    @property
    def conf(self) -> Path:
        return self.root / "ceph.conf"

    @property
    def admin_keyring(self) -> Path:
        return self.root / "client.admin.keyring"

    @property
    def container_conf(self) -> Path:
        return self.root / "ceph-in-container.conf"

    @property
    def mon_keyring(self) -> Path:
        return self.root / "mon.keyring"

    @property
    def monmap(self) -> Path:
        return self.root / "monmap"

    def data(self, kind: str, ident: str) -> Path:
        return self.root / kind / f"ceph-{ident}"

    def log(self, name: str) -> Path:
        return self.root / "log" / f"{name}.log"


def mon_addr(address: str) -> str:
    return f"[v2:{address}:{MON_PORT}]"


DEFAULT_SIZE = 3  # Ceph's own osd_pool_default_size


def conf_text(fsid: str, mon_address: str, paths: Paths, osds: int = DEFAULT_SIZE) -> str:
    """``osds``: fewer than Ceph's default replicas make every pool layerbench did not size (the manager's own)
    undersized, and the cluster warns TOO_FEW_OSDS: never healthy. The default follows the OSDs there are."""
    r = paths.root
    return f"""[global]
fsid = {fsid}
mon host = {mon_addr(mon_address)}
mon data = {r}/mon/ceph-$id
mgr data = {r}/mgr/ceph-$id
osd data = {r}/osd/ceph-$id
run dir = {r}/run
admin socket = {r}/run/$name.asok
log file = {r}/log/$name.log
keyring = {paths.admin_keyring}
ms bind ipv6 = false
# The manager's optional modules (the dashboard and the rest) cost memory and CPU; it reads this only here.
mgr initial modules =
osd objectstore = bluestore
osd memory target = {OSD_MEMORY_TARGET}
osd pool default pg autoscale mode = off
osd pool default size = {min(osds, DEFAULT_SIZE)}
# Pools of size 1 are a measured cell (what replication costs), not a mistake.
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
# A test host's disk is often more than 70% full; the monitor's store is small.
mon data avail warn = 5
auth allow insecure global id reclaim = false

[client]
# librbd's cache turns writeback at a client's first flush (a filesystem's, over rbd-fuse): writes would then be
# acknowledged from this host's memory. Off, every client's write reaches the OSDs, as fio's direct=1 means.
rbd cache = false

[mon]
keyring = {r}/mon/ceph-$id/keyring

[mgr]
keyring = {r}/mgr/ceph-$id/keyring

[osd]
keyring = {r}/osd/ceph-$id/keyring
"""
