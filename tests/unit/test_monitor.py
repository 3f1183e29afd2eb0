from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from layerbench.run.measure.monitor import (
    Monitor,
    Point,
    cpu_shares,
    descendants,
    disk_rates,
    outside_ticks,
    parse_disk_stat,
    parse_meminfo,
    parse_per_cpu,
    parse_pid_stat,
    parse_proc_stat,
    read_procs,
)
from layerbench.run.measure.monitor_checks import bottleneck_check, contended_check

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
    from layerbench.run.measure.monitor import read_cgroup

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
    from layerbench.run.measure.monitor import read_cgroup

    (tmp_path / "cpu.stat").write_text("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n")
    (tmp_path / "memory.current").write_text("4096\n")
    (tmp_path / "io.stat").write_text("7:1 rbytes=100 wbytes=200 rios=1 wios=2\n8:0 rbytes=1 wbytes=2\n")
    got = read_cgroup({"unified": tmp_path})
    assert (got.cpu_ns, got.memory, got.io_read, got.io_write) == (1_500_000, 4096, 101, 202)


def test_each_core_from_a_real_proc_stat() -> None:
    """Captured while a CPU hog pinned to cpu1 ran (tests/data/proc/README.md)."""
    a = parse_per_cpu((DATA / "stat-percpu-hog-a.txt").read_text())
    b = parse_per_cpu((DATA / "stat-percpu-hog-b.txt").read_text())
    assert sorted(a) == ["cpu0", "cpu1"]
    shares = cpu_shares(a["cpu1"], b["cpu1"])
    assert shares["cpu.user"] + shares["cpu.system"] >= 90  # the hog's core, saturated
    host = parse_proc_stat((DATA / "stat-percpu-hog-a.txt").read_text())
    assert abs(host.total - a["cpu0"].total - a["cpu1"].total) < 1e-3 * host.total  # cores add up to the host


def test_cpu_outside_the_cell_from_real_pid_stats() -> None:
    hog_a = parse_pid_stat((DATA / "pid-stat-hog-a.txt").read_text())
    hog_b = parse_pid_stat((DATA / "pid-stat-hog-b.txt").read_text())
    kthread = parse_pid_stat((DATA / "pid-stat-kthread.txt").read_text())
    assert (hog_a.comm, hog_a.kthread, kthread.comm, kthread.kthread) == ("sha256sum", False, "ksoftirqd/0", True)
    assert hog_b.ticks - hog_a.ticks == 116  # utime 15 -> 130, stime 0 -> 1
    prev = {hog_a.pid: hog_a, kthread.pid: kthread}
    cur = {hog_b.pid: hog_b, kthread.pid: replace(kthread, ticks=kthread.ticks + 50)}
    assert outside_ticks(prev, cur, cell=set()) == {"sha256sum": 116}  # kernel threads are not "others"
    assert outside_ticks(prev, cur, cell={hog_a.pid}) == {}  # inside the cell, it is the workload


def test_every_process_is_read_from_its_stat_and_one_that_ended_is_skipped(tmp_path: Path) -> None:
    for name in ("pid-stat-hog-a.txt", "pid-stat-kthread.txt"):
        p = parse_pid_stat((DATA / name).read_text())
        (tmp_path / str(p.pid)).mkdir()
        (tmp_path / str(p.pid) / "stat").write_text((DATA / name).read_text())
    (tmp_path / "99999").mkdir()  # ended between the listing and the read: no stat left
    (tmp_path / "self").mkdir()
    (tmp_path / "stat").write_text((DATA / "pid-stat-hog-a.txt").read_text())  # the host's, not a process's
    procs = read_procs(tmp_path)
    assert sorted(p.comm for p in procs.values()) == ["ksoftirqd/0", "sha256sum"]
    assert all(procs[pid].pid == pid for pid in procs)


def test_the_cell_is_a_process_and_everything_below_it() -> None:
    line = "{pid} (x y) S {ppid} 0 0 0 -1 0 0 0 0 0 {t} 0 0 0 20 0 1 0 1 0 0"
    procs = {p: parse_pid_stat(line.format(pid=p, ppid=pp, t=p)) for p, pp in [(10, 1), (11, 10), (12, 11), (13, 1)]}
    assert procs[11].comm == "x y" and procs[12].ticks == 12
    assert descendants(procs, 10) == {10, 11, 12}


def test_monitor_series_judged_per_core_and_for_others() -> None:
    """Sixteen cores, one held by a single fio job: the host's mean hides what its core shows."""
    mon = Monitor(["vda"])
    for t in (1.0, 2.0):
        mon.points += [Point(t, "cpu.idle", 93.7, "%"), Point(t, "cpu.iowait", 0.0, "%")]
        mon.points += [Point(t, f"cpu.cpu{i}.busy", 99.0 if i == 11 else 0.0, "%") for i in range(16)]
        mon.points += [Point(t, "disk.vda.util", 12.0, "%"), Point(t, "cpu.outside", 2.0, "cores")]
    mon.outside = {"sha256sum": 3.9, "make": 0.1}  # CPU seconds over the two 1 s samples
    flag = bottleneck_check(mon, "vda")
    assert flag.status == "flag" and "cpu11 99% busy (the host 6%)" in flag.detail
    busy = contended_check(mon)
    assert busy.status == "flag" and "2.00 of 16 cores" in busy.detail and "sha256sum 1.95" in busy.detail


def test_a_trial_on_another_machine_or_too_short_to_sample_is_skipped_never_passed() -> None:
    """Issue 29: this host's /proc says nothing of a Docker host's or a remote node's CPU, and a trial
    over before the first sample has nothing to judge: both checks skip, saying why."""
    mon = Monitor(["vda"])
    for t in (1.0, 2.0):
        mon.points += [Point(t, "cpu.idle", 97.0, "%"), Point(t, "cpu.outside", 0.03, "cores")]
    for check in (bottleneck_check(mon, "vda", unseen="node2 (Kubernetes, not this host)"),
                  contended_check(mon, unseen="node2 (Kubernetes, not this host)")):  # fmt: skip
        assert check.status == "skip" and check.detail.startswith("cannot see node node2 (Kubernetes, not this host)")
    assert bottleneck_check(mon, "vda").status == contended_check(mon).status == "pass"  # here, seen: judged
    empty = Monitor(["vda"])
    for check in (bottleneck_check(empty, "vda"), contended_check(empty)):
        assert check.status == "skip" and check.detail.startswith("no monitor sample")


def disk_stat(read_sectors: int, write_sectors: int) -> str:
    return f"10 0 {read_sectors} 5 20 0 {write_sectors} 7 0 12 12 0 0 0 0\n"


def test_device_bytes_are_counted_from_the_end_of_the_ramp_as_fio_counts_its_own(tmp_path: Path) -> None:
    """fio's io_bytes leave its ramp out; the device's count starts at the ramp's end too (issue 29: over
    the whole trial, quick's 1 s ramp in 4 s made the device seem to move a third more than it did)."""
    import time

    stat = tmp_path / "class" / "block" / "zram0" / "stat"
    stat.parent.mkdir(parents=True)
    stat.write_text(disk_stat(0, 0))
    with Monitor(["zram0"], interval=10.0, sys_root=tmp_path, count_from=0.3) as mon:
        stat.write_text(disk_stat(1000, 2000))  # the ramp's I/O
        time.sleep(0.6)
        stat.write_text(disk_stat(1000 + 8, 2000 + 16))  # the measured part's
    assert (mon.totals["zram0"].read_bytes, mon.totals["zram0"].write_bytes) == (8 * 512, 16 * 512)
    with Monitor(["zram0"], interval=10.0, sys_root=tmp_path) as whole:
        stat.write_text(disk_stat(2000, 4000))
    assert whole.totals["zram0"].read_bytes == (2000 - 1008) * 512  # no ramp: from the start
    with Monitor(["zram0"], interval=10.0, sys_root=tmp_path, count_from=5.0) as short:
        stat.write_text(disk_stat(2100, 4000))
    assert short.totals["zram0"].read_bytes == 100 * 512  # over before its ramp ended: from the start
