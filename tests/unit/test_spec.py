from __future__ import annotations

import dataclasses

import pytest

from layerbench.errors import SpecError
from layerbench.spec import load
from layerbench.spec.engines import docker
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand, expand_stacks

BASE = """
name: t
device: {kind: loop, size: 1GiB}
workloads:
  - {name: RR, rw: randread, bs: 4k}
"""


def spec(stacks: str, extra: str = "") -> str:
    return BASE + "stacks:\n" + stacks + extra


def test_every_preset_parses() -> None:
    for name in load.preset_names():
        exp = load.load(name)
        assert exp.name == name
        assert expand_stacks(exp)


def test_quick_preset_is_a_steady_first_run_of_each_layer_against_the_one_beneath(full_caps: HostCaps) -> None:
    exp = load.load("quick")
    m = expand(exp, full_caps)
    labels = {s.label() for s in m.stacks()}
    assert labels == {
        "zram/none/native/raw",
        "zram/ext4/native/host-dir",
        "zram/btrfs/native/host-dir",
        "zram/ext4/docker:overlay2/volume",
        "zram/ext4/docker:overlay2/writable-layer",
        "zram/btrfs/docker:btrfs/writable-layer",
    }
    assert exp.trials.repetitions >= 3  # a paired ratio needs rounds; one trial decides nothing
    assert not m.refused


def test_layers_preset_tours_every_layer(full_caps: HostCaps) -> None:
    m = expand(load.load("layers"), full_caps)
    labels = {s.label() for s in m.stacks()}
    assert "loop/none/native/raw" in labels
    for fs in ("ext4", "xfs", "btrfs"):
        assert f"loop/{fs}/native/host-dir" in labels
    for pl in ("writable-layer", "volume", "bind", "tmpfs"):
        assert f"loop/xfs/docker:overlay2/{pl}" in labels
    assert "loop/btrfs/docker:btrfs/writable-layer" in labels
    assert "loop/xfs/docker:vfs/writable-layer" in labels
    assert "loop/xfs/docker:fuse-overlayfs/writable-layer" in labels
    assert {c.workload.name for c in m.cells} == {"RR", "RW", "SR", "SW"}
    assert not m.refused
    raw = [c for c in m.cells if c.stack.placement.kind == "raw"]
    assert all(m.baseline_of[c.id] == next(r.id for r in raw if r.workload == c.workload) for c in m.cells)


def test_unknown_filesystem_names_field_and_allowed_values() -> None:
    with pytest.raises(SpecError) as err:
        expand_stacks(load.parse(spec("  - {filesystem: zfs}\n")))
    text = str(err.value)
    assert "stacks[0].filesystem.type" in text
    assert "'zfs'" in text and "ext4" in text and "btrfs" in text


def test_unknown_driver_is_refused_at_validation() -> None:
    with pytest.raises(SpecError) as err:
        expand_stacks(load.parse(spec("  - {filesystem: xfs, engine: 'docker:zfs'}\n")))
    assert "stacks[0].engine.driver" in str(err.value)
    assert "overlay2" in str(err.value)


def test_workload_field_errors_name_the_field() -> None:
    bad = BASE.replace("rw: randread", "rw: sideways") + "stacks:\n  - {filesystem: none}\n"
    with pytest.raises(SpecError) as err:
        load.parse(bad)
    assert "workloads[0].rw" in str(err.value)
    assert "randread" in str(err.value)


def test_unknown_top_level_field() -> None:
    with pytest.raises(SpecError, match=r"colour: unknown field"):
        load.parse(spec("  - {filesystem: none}\n", "colour: blue\n"))


def test_block_device_needs_explicit_path() -> None:
    text = BASE.replace("{kind: loop, size: 1GiB}", "{kind: block}") + "stacks:\n  - {filesystem: none}\n"
    with pytest.raises(SpecError, match=r"device\.path"):
        load.parse(text)


def test_not_yaml_and_not_mapping() -> None:
    with pytest.raises(SpecError, match="not valid YAML"):
        load.parse("name: [unclosed")
    with pytest.raises(SpecError, match="top level must be a mapping"):
        load.parse("- just\n- a list\n")


def test_unusable_names_are_refused_not_crashed_on() -> None:
    too_long = "a" * 300  # longer than NAME_MAX: stat() itself fails
    with pytest.raises(SpecError, match=r"workloads\[0\]\.job_file.*File name too long"):
        load.parse(BASE.replace("rw: randread", f"job_file: {too_long}") + "stacks:\n  - {filesystem: none}\n")
    with pytest.raises(SpecError, match="no preset named"):
        load.load(too_long)


def test_unknown_preset_lists_presets() -> None:
    with pytest.raises(SpecError) as err:
        load.load("no-such-preset")
    assert "quick" in (err.value.hint or "")


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        (
            "{filesystem: xfs, engine: 'docker:btrfs'}",
            "btrfs storage driver needs a btrfs host filesystem",
        ),
        (
            "{filesystem: {type: xfs, mkfs_options: ['-n', 'ftype=0']}, engine: 'docker:overlay2'}",
            "ftype=1",
        ),
        ("{filesystem: xfs, engine: 'docker:devicemapper'}", "device-mapper"),
        ("{filesystem: reiserfs, engine: 'docker:overlay2', placement: volume}", "d_type, which reiserfs never"),
        ("{filesystem: reiserfs}", "has no reiserfs"),
        ("{filesystem: none, engine: 'docker:vfs'}", "data-root"),
        ("{filesystem: ext4, placement: raw}", "bare device"),
        ("{filesystem: ext4, engine: native, placement: volume}", "container placement"),
        ("{filesystem: ext4, engine: 'docker:overlay2', placement: host-dir}", "native"),
        ("{filesystem: {type: xfs, mount_options: [nodatacow]}}", "btrfs's"),
    ],
)
def test_impossible_cells_refused_with_reason(full_caps: HostCaps, entry: str, reason: str) -> None:
    m = expand(load.parse(spec(f"  - {entry}\n")), full_caps)
    assert not m.cells
    assert m.refused and reason in m.refused[0].reason


def test_lists_expand_to_a_product(full_caps: HostCaps) -> None:
    m = expand(
        load.parse(spec("  - {filesystem: [ext4, xfs], engine: 'docker:overlay2', placement: [volume, bind]}\n")),
        full_caps,
    )
    assert len(m.cells) == 4
    assert len({c.id for c in m.cells}) == 4


def test_host_without_docker_refuses_container_cells(full_caps: HostCaps) -> None:
    caps = dataclasses.replace(full_caps, binaries=frozenset({"fio"}))
    m = expand(
        load.parse(spec("  - {filesystem: ext4}\n  - {filesystem: ext4, engine: 'docker:vfs'}\n")),
        caps,
    )
    assert len(m.cells) == 1
    assert "apt-get install docker.io" in m.refused[0].reason


def test_non_root_refuses_everything(full_caps: HostCaps) -> None:
    caps = dataclasses.replace(full_caps, is_root=False)
    m = expand(load.parse(spec("  - {filesystem: none}\n")), caps)
    assert not m.cells and "root" in m.refused[0].reason


def test_cell_ids_are_stable_and_distinct() -> None:
    exp = load.load("quick")
    a = {s.label(): s for s in expand_stacks(exp)}
    b = {s.label(): s for s in expand_stacks(load.load("quick"))}
    assert a == b


DM_LOOP = "  - {filesystem: ext4, engine: 'docker:devicemapper'}\n"
DM_DIRECT = "  - {filesystem: ext4, engine: {kind: docker, driver: devicemapper, mode: direct-lvm}}\n"


def _refusal(entry: str, caps: HostCaps) -> str | None:
    m = expand(load.parse(spec(entry)), caps)
    return m.refused[0].reason if m.refused else None


def test_devicemapper_is_refused_with_what_the_kernel_dockerd_or_lvm_lack(full_caps: HostCaps) -> None:
    assert "needs device-mapper, which this kernel lacks" in (_refusal(DM_LOOP, full_caps) or "")
    drivers = docker.of(full_caps).drivers
    ready = dataclasses.replace(
        full_caps,
        device_mapper=True,
        dm_thin=True,
        binaries=full_caps.binaries | {"dmsetup", "lvcreate", "thin_check"},
    ).with_engine(docker.KIND, docker.DockerCaps(drivers | {"devicemapper"}))
    assert _refusal(DM_LOOP, ready) is None and _refusal(DM_DIRECT, ready) is None
    no_thin = dataclasses.replace(ready, dm_thin=False).with_engine(docker.KIND, docker.DockerCaps(drivers))
    assert "thin pool (dm-thin-pool), which this kernel lacks" in (_refusal(DM_DIRECT, no_thin) or "")
    docker25 = ready.with_engine(docker.KIND, docker.DockerCaps(drivers, dockerd_major=25))
    assert "dockerd 25.x no longer has the devicemapper" in (_refusal(DM_LOOP, docker25) or "")
    no_lvm = dataclasses.replace(ready, binaries=ready.binaries - {"lvcreate"})
    assert _refusal(DM_LOOP, no_lvm) is None  # loop-lvm needs no LVM tools: dockerd builds its pool itself
    assert "apt-get install lvm2 thin-provisioning-tools" in (_refusal(DM_DIRECT, no_lvm) or "")
    no_dmsetup = dataclasses.replace(ready, binaries=ready.binaries - {"dmsetup"})
    assert "dmsetup" in (_refusal(DM_LOOP, no_dmsetup) or "")


def test_a_devicemapper_mode_is_named_with_its_allowed_values() -> None:
    entry = "  - {filesystem: ext4, engine: {kind: docker, driver: devicemapper, mode: thin}}\n"
    with pytest.raises(SpecError, match=r"stacks\[0\]\.engine\.mode: 'thin' is not allowed; allowed values: "):
        expand_stacks(load.parse(spec(entry)))
    with pytest.raises(SpecError, match="devicemapper driver's"):
        expand_stacks(load.parse(spec("  - {filesystem: ext4, engine: {kind: docker, mode: direct-lvm}}\n")))
