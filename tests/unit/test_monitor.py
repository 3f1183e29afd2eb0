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
