"""What a run may leave on the host, looked up from the outside (not from our own ledger)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _shared_mounts() -> set[str]:
    """Mounts under /run/layerbench, where every run's daemons keep their exec roots."""
    targets = (line.split()[1] for line in Path("/proc/mounts").read_text().splitlines())
    return {t for t in targets if t.startswith("/run/layerbench")}


def _processes() -> dict[str, str]:
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            found[proc.name] = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
    return found


def _storage_hosts() -> set[str]:
    """Network namespaces of remote devices' storage hosts (lb-st-*), and links named as their veths."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False, timeout=60).stdout
    names = {f"netns {line.split()[0]}" for line in listed.splitlines() if line.startswith("lb-st-")}
    return names | {f"link {p.name}" for p in Path("/sys/class/net").glob("lb*h")}


def _dm_devices() -> set[str]:
    """Device-mapper devices by name: the devicemapper driver's thin devices and pools, direct-lvm's volumes."""
    found = set()
    for name in Path("/sys/block").glob("dm-*/dm/name"):
        try:
            found.add(name.read_text().strip())
        except OSError:  # removed while we looked
            continue
    return found


def _lvm_online() -> set[str]:
    """LVM's autoactivation records (udev's pvscan writes one per volume group and physical volume it saw)."""
    return {f"{p.parent.name}/{p.name}" for p in Path("/run/lvm").glob("*_online/*")}


# What another, earlier process left there is not this session's to blame (nor to remove):
# the tests judge only what appeared while they ran.
_BEFORE_TESTS = _shared_mounts()
_DM_BEFORE = _dm_devices()
_LVM_BEFORE = _lvm_online()
_PIDS_BEFORE = set(_processes())
_HOSTS_BEFORE = _storage_hosts()


def leftovers(work_dir: Path, beside_others: bool = False) -> list[str]:
    """What a run with this work dir left. ``beside_others`` for a tier that another runs beside on this host
    (CI runs the Ceph tier, with its storage hosts and private dockerds, beside the VM tier): only what names
    this work dir, and the device-mapper devices and LVM records the other makes none of; not the machine's
    new storage hosts, daemons under /run/layerbench or their mounts, which may be the other's."""
    work = str(work_dir.resolve())
    mounts = (line.split()[1] for line in Path("/proc/mounts").read_text().splitlines())
    found = [f"mount {t}" for t in mounts if t.startswith(work)]
    found += [] if beside_others else [f"mount {t}" for t in sorted(_shared_mounts() - _BEFORE_TESTS)]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False, timeout=60).stdout
    found += [f"loop {line}" for line in loops.splitlines() if work in line]
    found += [] if beside_others else sorted(_storage_hosts() - _HOSTS_BEFORE)
    found += [f"device-mapper device {name}" for name in sorted(_dm_devices() - _DM_BEFORE)]
    found += [f"LVM record /run/lvm/{name}" for name in sorted(_lvm_online() - _LVM_BEFORE)]
    for pid, cmd in _processes().items():
        # A daemon of ours, or a database server natively (its data directory is below the work dir).
        ours = any(d in cmd for d in ("dockerd", "containerd", "podman", "conmon")) and "/run/layerbench" in cmd
        if work in cmd or (ours and pid not in _PIDS_BEFORE and not beside_others):
            found.append(f"process {pid}: {cmd[:120]}")
    return found


def bridges() -> set[str]:
    """Bridge links of Docker networks (br-<id>): a test compares them before and after."""
    return {p.name for p in Path("/sys/class/net").glob("br-*")}


@contextmanager
def server_dirs(prefix: str) -> Iterator[dict[str, Path]]:
    """A run's dirs below /var/tmp, as the default work dir is: a native server's user must pass
    (pytest's tmp is 0700). Removed after."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix=prefix))
    base.chmod(0o711)
    try:
        yield {"db": base / "r.db", "work": base / "work", "state": base / "state", "spec": base / "spec.yaml"}
    finally:
        shutil.rmtree(base)


def assert_nothing_left(dirs: dict[str, Path], bridges_before: set[str]) -> None:
    """No mount, loop, process or bridge of the run, no live ledger row, an empty work dir."""
    assert leftovers(dirs["work"]) == []
    assert bridges() <= bridges_before
    with sqlite3.connect(dirs["state"] / "ledger.db") as db:
        assert db.execute("SELECT kind, ident FROM resources WHERE removed_at IS NULL").fetchall() == []
    assert not dirs["work"].exists() or list(dirs["work"].iterdir()) == []
