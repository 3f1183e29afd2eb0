"""Where the kernel transports' block devices and target settings are found, on the sysfs and configfs
trees of real connections (captured in the test VM by tools/capture-remote-sysfs.py): the client
finds its own device among what the kernel made, and the kernel kept the target as layerbench set it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from layerbench.run.measure.monitor import devices_beneath, parse_disk_stat
from layerbench.stack.remote import iscsi, nvme_tcp

CAPTURES = Path(__file__).parent.parent / "data" / "remote" / "sysfs"


def _rebuild(transport: str, root: Path) -> dict[str, str | None]:
    """The captured tree under ``root``; returns the capture (device, backing and the entries)."""
    found = json.loads((CAPTURES / f"{transport}.json").read_text())
    for rel, text in found.items():
        if "/" not in rel:
            continue
        path = root / rel
        if text is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return found


def _one(root: Path, pattern: str) -> Path:
    matches = sorted(root.glob(pattern))
    assert len(matches) == 1, (pattern, matches)
    return matches[0]


def test_nvme_tcp_finds_its_namespace_and_the_target_is_as_configured(tmp_path: Path) -> None:
    found = _rebuild("nvme-tcp", tmp_path)
    subsystem = _one(tmp_path, f"sys/kernel/config/nvmet/subsystems/{nvme_tcp.NQN_PREFIX}*")
    nqn = subsystem.name
    sys = tmp_path / "sys"
    assert nvme_tcp.block_names(nqn, sys) == [Path(str(found["device"])).name]
    assert [c.name for c in nvme_tcp.controllers(nqn, sys)] and nvme_tcp.block_names("nqn.other", sys) == []
    assert (subsystem / "attr_allow_any_host").read_text().strip() == "1"
    assert (subsystem / "namespaces/1/device_path").read_text().strip() == found["backing"]
    assert (subsystem / "namespaces/1/enable").read_text().strip() == "1"
    port = _one(tmp_path, "sys/kernel/config/nvmet/ports/*")
    traddr = (port / "addr_traddr").read_text().strip()
    kept = {name: (port / name).read_text().strip() for name in nvme_tcp.port_address(traddr)}
    assert kept == nvme_tcp.port_address(traddr)
    assert (port / "subsystems" / nqn).is_dir()


def test_iscsi_finds_its_disk_and_the_target_is_as_configured(tmp_path: Path) -> None:
    found = _rebuild("iscsi", tmp_path)
    target = _one(tmp_path, f"sys/kernel/config/target/iscsi/{iscsi.IQN_PREFIX}*")
    iqn = target.name
    sys = tmp_path / "sys"
    assert iscsi.disks(iqn, sys) == [Path(str(found["device"])).name]
    assert iscsi.disks("iqn.2000-01.other:x", sys) == []
    tpg = target / "tpgt_1"
    assert (tpg / "enable").read_text().strip() == "1"
    assert {k: (tpg / "attrib" / k).read_text().strip() for k in iscsi.OPEN_TPG} == iscsi.OPEN_TPG
    portal = _one(tpg, "np/*")
    assert portal.name.endswith(f":{iscsi.PORT}")
    store = _one(tmp_path, "sys/kernel/config/target/core/iblock_*/*")
    assert (store / "udev_path").read_text().strip() == found["backing"]
    assert f"iBlock device: {Path(str(found['backing'])).name}" in (store / "info").read_text()
    assert (store / "enable").read_text().strip() == "1"


@pytest.mark.parametrize("transport", ["nvme-tcp", "iscsi"])
def test_the_device_that_counts_the_io_is_the_one_accounting_reads(tmp_path: Path, transport: str) -> None:
    """The capture read 8 MiB with O_DIRECT from the device: the lowest device layerbench watches
    counted them (an NVMe multipath head does not on kernels before 6.3; its one path does)."""
    found = _rebuild(transport, tmp_path)
    names = devices_beneath(str(found["device"]), tmp_path / "sys")
    stats = sorted(Path(p).parent.name for p in found if p.startswith("sys/class/block/") and p.endswith("/stat"))
    assert sorted(names) == stats  # the device and, for an NVMe head, the path the capture found
    lowest = parse_disk_stat((tmp_path / "sys/class/block" / names[-1] / "stat").read_text())
    assert lowest.read_bytes >= 8 * 2**20


def test_a_disk_whose_node_comes_before_its_sysfs_entry_is_waited_for(tmp_path: Path) -> None:
    """An iSCSI disk's /dev node once came before /sys/block/<disk>/size, and reading the size failed the cell
    (the modern-host guest, 2026-11-27): until sysfs gives the size, the disk has not appeared yet."""
    from layerbench.stack.remote import kernel

    dev, sys_block = tmp_path / "dev", tmp_path / "sys" / "block"
    dev.mkdir()
    (dev / "sda").touch()
    polls = []

    def names() -> list[str]:
        polls.append(1)
        if len(polls) == 2:  # sysfs catches up after the first look
            (sys_block / "sda").mkdir(parents=True)
            (sys_block / "sda" / "size").write_text("2048\n")
        return ["sda"]

    assert kernel.appeared(names, 30, "logged in", dev, sys_block) == (str(dev / "sda"), 2048 * 512)
    assert len(polls) == 2
