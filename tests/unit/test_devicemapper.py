"""Docker's devicemapper modes: their daemon options, and what a dead daemon left, found in sysfs and
removed top-down (a fake /sys/block here; the real one in the test VM: tests/integration/test_devicemapper.py)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from layerbench.proc import Completed, FakeRunner
from layerbench.spec.models import EngineSpec
from layerbench.stack import devmapper
from layerbench.stack.cleanup import REMOVERS
from layerbench.stack.dockerd import dockerd_argv

MIB = 2**20


class FakeSysfs:
    """A /sys/block with loop and dm devices; ``dmsetup remove`` and ``losetup --detach`` act on it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.calls: list[list[str]] = []

    def loop(self, name: str, backing: str) -> None:
        (self.root / name / "loop").mkdir(parents=True)
        (self.root / name / "loop" / "backing_file").write_text(backing + "\n")
        (self.root / name / "holders").mkdir()

    def dm(self, dev: str, name: str, on: Sequence[str]) -> None:
        (self.root / dev / "dm").mkdir(parents=True)
        (self.root / dev / "dm" / "name").write_text(name + "\n")
        (self.root / dev / "holders").mkdir()
        for below in on:
            (self.root / below / "holders" / dev).mkdir()

    def __call__(self, argv: Sequence[str], **_: object) -> Completed:
        args = list(argv)
        self.calls.append(args)
        if args[:2] == ["dmsetup", "remove"]:
            dev = next(d for d in self.root.glob("dm-*") if devmapper.dm_name(d.name, self.root) == args[-1])
            if list((dev / "holders").iterdir()):
                return Completed(args, 1, "", "Device or resource busy")
            shutil.rmtree(dev)
            for link in self.root.glob(f"*/holders/{dev.name}"):
                link.rmdir()
        if args[:2] == ["losetup", "--detach"]:
            shutil.rmtree(self.root / Path(args[-1]).name / "loop")
        return Completed(args, 0, "", "")


@pytest.fixture
def sysfs(tmp_path: Path) -> FakeSysfs:
    return FakeSysfs(tmp_path / "block")


def loop_lvm(sysfs: FakeSysfs, data_root: Path) -> None:
    """What dockerd's loop-lvm makes: two loop devices, the pool over both, a thin device over the pool."""
    sysfs.loop("loop3", f"{data_root}/devicemapper/devicemapper/data")
    sysfs.loop("loop4", f"{data_root}/devicemapper/devicemapper/metadata")
    sysfs.dm("dm-0", "docker-7:0-131-pool", on=["loop3", "loop4"])
    sysfs.dm("dm-1", "docker-7:0-131-5f1e", on=["dm-0"])


def test_loop_lvm_takes_dockers_defaults_and_direct_lvm_its_production_recipe() -> None:
    assert devmapper.storage_opts("loop-lvm") == []
    assert devmapper.storage_opts("direct-lvm", "/dev/mapper/lbab-pool") == [
        "dm.thinpooldev=/dev/mapper/lbab-pool",
        "dm.use_deferred_removal=true",
        "dm.use_deferred_deletion=true",
    ]
    argv = dockerd_argv(Path("/d"), Path("/run/layerbench/x"), "devicemapper", ["dm.thinpooldev=/dev/mapper/p"])
    assert "--storage-driver=devicemapper" in argv and "--storage-opt=dm.thinpooldev=/dev/mapper/p" in argv
    assert not any(a.startswith("--storage-opt") for a in dockerd_argv(Path("/d"), Path("/r/x"), "overlay2"))


def test_the_pool_takes_half_the_free_space_in_whole_extents() -> None:
    assert devmapper.pool_size(1000 * MIB) == 500 * MIB
    assert devmapper.pool_size(1001 * MIB) % (4 * MIB) == 0


def test_lvm_commands_see_only_the_pools_device_and_back_nothing_up() -> None:
    argv = devmapper.lvm(["vgcreate", "lbab", "/dev/loop7"], "/dev/loop7")
    assert argv[:5] == ["vgcreate", "--config", devmapper.LVM_CONFIG, "--devices", "/dev/loop7"]
    assert "backup = 0" in devmapper.LVM_CONFIG and "archive = 0" in devmapper.LVM_CONFIG


def test_holders_come_top_most_first(sysfs: FakeSysfs, tmp_path: Path) -> None:
    loop_lvm(sysfs, tmp_path / "root")
    assert devmapper.holders("loop3", sysfs.root) == ["dm-1", "dm-0"]
    assert devmapper.loops_below(tmp_path / "root", sysfs.root) == ["loop3", "loop4"]
    assert devmapper.loops_below(tmp_path / "ro", sysfs.root) == []  # a prefix of the name is not below it


def test_a_killed_loop_lvm_daemons_devices_are_removed_thin_devices_first(sysfs: FakeSysfs, tmp_path: Path) -> None:
    loop_lvm(sysfs, tmp_path / "root")
    sysfs.loop("loop9", "/elsewhere/img")  # not the daemon's: left alone
    assert devmapper.release_below(tmp_path / "root", sysfs, sysfs.root) == []
    removed = [c[-1] for c in sysfs.calls if c[0] == "dmsetup"]
    assert removed == ["docker-7:0-131-5f1e", "docker-7:0-131-pool"]
    assert ["losetup", "--detach", "/dev/loop3"] in sysfs.calls and ["losetup", "--detach", "/dev/loop4"] in sysfs.calls
    assert (sysfs.root / "loop9" / "loop").exists()


def test_what_cannot_be_removed_is_reported(tmp_path: Path, sysfs: FakeSysfs) -> None:
    loop_lvm(sysfs, tmp_path / "root")
    left = devmapper.release_below(tmp_path / "root", FakeRunner({"dmsetup": (1, "", "busy")}), sysfs.root)
    assert "device-mapper device docker-7:0-131-pool" in left and "loop device /dev/loop3" in left


def test_direct_lvm_pool_goes_with_what_dockerd_left_on_it(sysfs: FakeSysfs) -> None:
    sysfs.loop("loop5", "/mnt/lb-thinpool-ab.img")
    sysfs.dm("dm-2", "lbab-pool_tmeta", on=["loop5"])
    sysfs.dm("dm-3", "lbab-pool_tdata", on=["loop5"])
    sysfs.dm("dm-4", "lbab-pool", on=["dm-2", "dm-3"])
    sysfs.dm("dm-5", "docker-7:0-131-base", on=["dm-4"])

    def runner(argv: Sequence[str], **kw: object) -> Completed:
        done = sysfs(argv, **kw)
        if argv[0] == "vgs":
            return Completed(list(argv), 0, "  lbab\n", "")
        return done

    devmapper.remove_pool("lbab", "/dev/loop5", "/mnt/lb-thinpool-ab.img", runner, sysfs.root)
    assert [c[-1] for c in sysfs.calls if c[0] == "dmsetup"] == ["docker-7:0-131-base"]  # LVM removes its own
    assert [a[5:] for a in sysfs.calls if a[0] == "vgremove"] == [["--force", "--yes", "lbab"]]


def test_a_loop_device_now_someone_elses_is_not_touched(sysfs: FakeSysfs) -> None:
    sysfs.loop("loop5", "/someone/else.img")
    sysfs.dm("dm-2", "theirs", on=["loop5"])
    devmapper.remove_pool("lbab", "/dev/loop5", "/mnt/lb-thinpool-ab.img", sysfs, sysfs.root)
    devmapper.remove_pool("lbab", "/dev/loop8", "/mnt/lb-thinpool-ab.img", sysfs, sysfs.root)  # detached
    assert sysfs.calls == []


def test_cleanup_knows_the_thin_pool() -> None:
    assert "thinpool" in REMOVERS


def test_the_mode_is_devicemappers_and_shows_in_the_label() -> None:
    assert EngineSpec.model_validate("docker:devicemapper").label() == "docker:devicemapper(loop-lvm)"
    direct = EngineSpec.model_validate({"kind": "docker", "driver": "devicemapper", "mode": "direct-lvm"})
    assert direct.label() == "docker:devicemapper(direct-lvm)"
    assert "mode" not in EngineSpec.model_validate("docker:overlay2").model_dump()  # cell ids stay as they were
    with pytest.raises(ValueError, match="devicemapper driver's"):
        EngineSpec.model_validate({"kind": "docker", "driver": "overlay2", "mode": "direct-lvm"})


def test_a_pool_lvm_will_not_deactivate_is_taken_down_with_dmsetup(sysfs: FakeSysfs) -> None:
    sysfs.loop("loop5", "/mnt/lb-thinpool-ab.img")
    sysfs.dm("dm-2", "lbab-pool_tmeta", on=["loop5"])
    sysfs.dm("dm-3", "lbab-pool_tdata", on=["loop5"])
    sysfs.dm("dm-4", "lbab-pool", on=["dm-2", "dm-3"])
    refusals = iter([1, 0])

    def runner(argv: Sequence[str], **kw: object) -> Completed:
        done = sysfs(argv, **kw)
        if argv[0] == "vgs":
            return Completed(list(argv), 0, "  lbab\n", "")
        if argv[0] == "vgremove":
            return Completed(list(argv), next(refusals), "", "transaction_id mismatch")
        return done

    devmapper.remove_pool("lbab", "/dev/loop5", "/mnt/lb-thinpool-ab.img", runner, sysfs.root)
    removed = [c[-1] for c in sysfs.calls if c[0] == "dmsetup"]
    assert removed[0] == "lbab-pool" and set(removed[1:]) == {"lbab-pool_tdata", "lbab-pool_tmeta"}
    assert len([c for c in sysfs.calls if c[0] == "vgremove"]) == 2


def test_lvms_online_records_of_the_pool_go_with_it(tmp_path: Path) -> None:
    (tmp_path / "vgs_online").mkdir()
    (tmp_path / "pvs_online").mkdir()
    (tmp_path / "vgs_online" / "lbab").write_text("")
    (tmp_path / "vgs_online" / "system").write_text("")
    (tmp_path / "pvs_online" / "Xy1").write_text("7:5\nvg:lbab\ndev:/dev/loop5\n")
    (tmp_path / "pvs_online" / "Zz9").write_text("8:1\nvg:system\ndev:/dev/sda1\n")
    devmapper.forget_online("lbab", tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*/*")) == ["Zz9", "system"]
