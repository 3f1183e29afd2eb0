"""A native cell's own cgroup, made and written on a stand-in cgroup tree (the real one is exercised by
tests/integration/test_limits.py here on v1 and in the test VM on v2)."""

from __future__ import annotations

from pathlib import Path

from layerbench import proc
from layerbench.spec.models import Limits
from layerbench.stack import cgroups
from layerbench.stack.cell_cgroup import cell_cgroup
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext

LIMITS = Limits(cpuset="0", cpus=1.5, memory="256MiB", read_bps="64MiB", write_bps="32MiB")


def ctx(tmp: Path) -> BuildContext:
    return BuildContext(tmp, Ledger(tmp / "ledger.db", "t"), "t", proc.run)


def kernel_empties(dirs: dict[str, Path]) -> None:
    """A real cgroup directory is removed with its files in it; a stand-in must be emptied first."""
    for d in dirs.values():
        for f in d.glob("*"):
            f.unlink()


def v1_tree(root: Path) -> None:
    for c in ("cpuset", "cpu", "cpuacct", "memory", "blkio"):
        (root / c).mkdir(parents=True)
    (root / "cpuset" / "cpuset.cpus").write_text("0-1\n")
    (root / "cpuset" / "cpuset.mems").write_text("0\n")


def test_v1_limits_written_where_the_reader_finds_them(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    v1_tree(root)
    c = ctx(tmp_path)
    with cell_cgroup(LIMITS, "7:3", c, root) as group:
        assert set(group.dirs) == {"cpuset", "cpu", "cpuacct", "memory", "blkio"}
        assert (root / "cpuset" / "layerbench" / "cpuset.mems").read_text() == "0\n"  # inherited, else no task fits
        (group.dirs["cpuset"] / "cpuset.effective_cpus").write_text("0\n")  # the kernel's part
        enforced = cgroups.read_limits(group.dirs, "7:3")
        assert cgroups.verdict(LIMITS.model_dump(exclude_none=True), enforced)[0] == "pass"
        [live] = c.ledger.live()
        assert live.kind == "cgroup" and set(live.detail["dirs"]) == set(group.dirs)
        wrapped = group.wrap(["fio", "--version"])
        assert wrapped[-3:] == ["--", "fio", "--version"]
        assert str(group.dirs["memory"] / "cgroup.procs") in wrapped
        kernel_empties(group.dirs)
        for f in (root / "cpuset" / "layerbench").glob("cpuset.*"):
            f.unlink()
    assert c.ledger.live() == []
    assert not (root / "memory" / "layerbench").exists()  # the shared parent too, once empty


def test_v2_limits_written_in_the_unified_files(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (root / "cgroup.subtree_control").write_text("memory pids\n")
    (root / "layerbench").mkdir()
    (root / "layerbench" / "cgroup.subtree_control").write_text("")
    with cell_cgroup(LIMITS, "7:3", ctx(tmp_path), root) as group:
        d = group.dirs["unified"]
        assert d.parent == root / "layerbench"
        assert (d / "cpu.max").read_text() == "150000 100000"
        assert (d / "memory.max").read_text() == str(256 * 2**20)
        assert (d / "io.max").read_text() == f"7:3 rbps={64 * 2**20} wbps={32 * 2**20}"
        assert (d / "cpuset.cpus").read_text() == "0"
        # A stand-in file keeps only the last write; the kernel's keeps each controller enabled.
        assert (root / "layerbench" / "cgroup.subtree_control").read_text().startswith("+")
        kernel_empties(group.dirs)
