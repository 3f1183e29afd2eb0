from __future__ import annotations

from pathlib import Path

from layerbench.monitor import cpu_shares, disk_rates, parse_disk_stat, parse_meminfo, parse_proc_stat

DATA = Path(__file__).parent.parent / "data" / "proc"


def test_disk_counters_from_a_real_64_mib_direct_read() -> None:
    a = parse_disk_stat((DATA / "vda-stat-a.txt").read_text())
    b = parse_disk_stat((DATA / "vda-stat-b.txt").read_text())
    read = b.read_bytes - a.read_bytes
    assert 64 * 2**20 <= read < 70 * 2**20  # dd read 64 MiB with O_DIRECT; little else ran
    rates = disk_rates("vda", a, b, 2.0)
    assert rates["disk.vda.read_bps"] == read / 2.0
    assert 0 <= rates["disk.vda.util"] <= 100


def test_cpu_shares_sum_to_about_100() -> None:
    a = parse_proc_stat((DATA / "stat-a.txt").read_text())
    b = parse_proc_stat((DATA / "stat-b.txt").read_text())
    shares = cpu_shares(a, b)
    assert 95 <= sum(shares.values()) <= 100.01
    assert all(v >= 0 for v in shares.values())


def test_meminfo_in_bytes() -> None:
    mem = parse_meminfo((DATA / "meminfo.txt").read_text())
    assert mem["MemTotal"] > 2**30 and mem["MemTotal"] % 1024 == 0


def test_container_counters_from_cgroup_v1_files(tmp_path: Path) -> None:
    from layerbench.monitor import read_cgroup

    for ctrl, name, text in [
        ("cpuacct", "cpuacct.usage", "2500000000\n"),
        ("memory", "memory.usage_in_bytes", "9789440\n"),
        ("blkio", "blkio.throttle.io_service_bytes", "7:1 Read 4096\n7:1 Write 8192\n251:3 Read 1000\nTotal 13288\n"),
    ]:
        (tmp_path / ctrl).mkdir()
        (tmp_path / ctrl / name).write_text(text)
    got = read_cgroup({c: tmp_path / c for c in ("cpuacct", "memory", "blkio")})
    assert (got.cpu_ns, got.memory, got.io_read, got.io_write) == (2_500_000_000, 9_789_440, 5096, 8192)


def test_container_counters_from_cgroup_v2(tmp_path: Path) -> None:
    from layerbench.monitor import read_cgroup

    (tmp_path / "cpu.stat").write_text("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n")
    (tmp_path / "memory.current").write_text("4096\n")
    (tmp_path / "io.stat").write_text("7:1 rbytes=100 wbytes=200 rios=1 wios=2\n8:0 rbytes=1 wbytes=2\n")
    got = read_cgroup({"unified": tmp_path})
    assert (got.cpu_ns, got.memory, got.io_read, got.io_write) == (1_500_000, 4096, 101, 202)
