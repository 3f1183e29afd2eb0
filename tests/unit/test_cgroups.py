"""The cgroup reader on files captured from real limited containers (tools/capture-cgroup.py): cgroup v1
on this host, cgroup v2 in the test VM (systemd, Docker 20.10 with the cgroupfs driver)."""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench.stack import cgroups

DATA = Path(__file__).parents[1] / "data" / "cgroup"
MiB = 2**20
# What tools/capture-cgroup.py asked for.
VERSIONS = ["v1", "v2"]
ASKED = {"cpuset": "0", "cpus": 1.5, "memory": 256 * MiB, "read_bps": 64 * MiB, "write_bps": 32 * MiB}


def captured(version: str) -> tuple[dict[str, Path], str]:
    root = DATA / version
    if version == "v2":
        return {"unified": root / "unified"}, (root / "device").read_text().strip()
    dirs = {p.name: p for p in root.iterdir() if p.is_dir()}
    return dirs, (root / "device").read_text().strip()


@pytest.mark.parametrize("version", VERSIONS)
def test_limits_read_back_from_real_files(version: str) -> None:
    dirs, device = captured(version)
    assert cgroups.read_limits(dirs, device) == ASKED
    assert cgroups.verdict(ASKED, cgroups.read_limits(dirs, device))[0] == "pass"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_limit_on_another_device_is_not_ours(version: str) -> None:
    dirs, _ = captured(version)
    enforced = cgroups.read_limits(dirs, "1:99")
    assert enforced["read_bps"] is None and enforced["write_bps"] is None
    status, detail = cgroups.verdict(ASKED, enforced)
    assert status == "flag" and "read_bps: asked 64MiB, cgroup says None" in detail


def test_nothing_readable_is_a_skip_not_a_pass(tmp_path: Path) -> None:
    for dirs in ({"unified": tmp_path}, {c: tmp_path for c in cgroups.V1_CONTROLLERS}, {}):
        enforced = cgroups.read_limits(dirs, "7:0")
        assert enforced == {}
        status, detail = cgroups.verdict(ASKED, enforced)
        assert status == "skip" and "cannot read cpuset, cpus, memory, read_bps, write_bps" in detail


def test_partly_readable_says_what_it_saw(tmp_path: Path) -> None:
    (tmp_path / "memory.max").write_text(f"{256 * MiB}\n")
    status, detail = cgroups.verdict(ASKED, cgroups.read_limits({"unified": tmp_path}, "7:0"))
    assert status == "skip" and "(read back: memory=256MiB)" in detail


def test_unlimited_is_read_as_no_limit(tmp_path: Path) -> None:
    (tmp_path / "memory.max").write_text("max\n")
    (tmp_path / "cpu.max").write_text("max 100000\n")
    (tmp_path / "io.max").write_text("")
    enforced = cgroups.read_limits({"unified": tmp_path}, "7:0")
    assert enforced == {"memory": None, "cpus": None, "read_bps": None, "write_bps": None}
    assert cgroups.verdict({"memory": 256 * MiB}, enforced) == ("flag", "memory: asked 256MiB, cgroup says None")


def test_memory_rounded_to_pages_is_the_same_limit() -> None:
    asked = 4 * 2**30 // 3  # not a whole number of pages: the kernel keeps the pages below it
    kept = asked // cgroups.PAGE * cgroups.PAGE
    assert kept != asked
    assert cgroups.mismatches({"memory": asked}, {"memory": kept}) == []
    assert cgroups.mismatches({"memory": asked}, {"memory": kept - cgroups.PAGE}) != []


def test_cpusets_compare_as_sets() -> None:
    assert cgroups.mismatches({"cpuset": "0,1,2"}, {"cpuset": "0-2"}) == []
    assert cgroups.mismatches({"cpuset": "0-1"}, {"cpuset": "0-3"}) != []


@pytest.mark.parametrize("version", VERSIONS)
def test_proc_cgroup_locates_the_container(version: str, tmp_path: Path) -> None:
    text = (DATA / version / "proc-cgroup").read_text()
    if version == "v2":
        (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    else:
        for controller in ("cpu", "cpuacct", "cpuset", "memory", "blkio"):
            (tmp_path / controller).mkdir()
    dirs = cgroups.parse_proc_cgroup(text, tmp_path)
    container = next(line.rsplit("/", 1)[1] for line in text.splitlines() if "/layerbench/" in line)
    expected = {"unified"} if version == "v2" else {"cpu", "cpuacct", "cpuset", "memory", "blkio"}
    assert set(dirs) == expected
    assert all(d.name == container and d.parent.parent.name == "layerbench" for d in dirs.values())


@pytest.mark.parametrize("version", VERSIONS)
def test_the_monitor_reads_usage_from_real_files(version: str) -> None:
    from layerbench.run.measure.monitor import read_cgroup

    dirs, _ = captured(version)
    got = read_cgroup(dirs)
    # The container had run `sleep infinity` and one exec: some CPU time, some memory, no I/O yet.
    assert got.cpu_ns > 0 and 0 < got.memory < 256 * MiB
