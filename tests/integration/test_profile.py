"""perf records a trial and leaves nothing: one native cell, profiled. Seed 001's seccomp finding, which
needs several profiled cells of seconds each, is the long tier's (tests/long/test_seccomp_profile.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from layerbench.analysis import flame
from layerbench.store.db import Store
from layerbench.store.read import RunData, load
from tests.integration.leftovers import leftovers
from tests.integration.test_run_cli import layerbench

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_perf, pytest.mark.slow]

# The smallest profiled run: one native cell, one trial (also run in the test VM: cgroup v2, systemd).
NATIVE = """
name: profiled
device: {kind: zram, size: 256MiB}
stacks:
  - {filesystem: ext4, engine: native, placement: host-dir}
workloads:
  - {name: RR, rw: randread, bs: 4k, ioengine: psync, size: 64MiB, runtime_s: 2, ramp_s: 0}
profile: cpu
"""


def profiled_run(tmp_path: Path, text: str) -> tuple[dict[str, Path], RunData]:
    """Run the spec ``text`` as a user does; its results with their profiles."""
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    done = layerbench("run", str(spec), dirs=dirs)
    assert done.returncode == 0, done.stdout + done.stderr
    return dirs, load(Store.open(dirs["db"], create=False), "latest", profiles=True)


def test_a_native_cell_is_profiled_and_its_profilers_leave_nothing(tmp_path: Path) -> None:
    dirs, data = profiled_run(tmp_path, NATIVE)
    (record,) = data.profiles.values()
    fio = flame.only(flame.from_folded(record.folded), ["fio"])
    assert fio.total > 0 and any("_[k]" in s for s in fio.stacks)  # fio's kernel frames, resolved
    assert record.counters["raw_syscalls:sys_enter"] > 0 and record.counters["seconds"] > 0
    # Time fio's threads waited runnable, summed: none on an idle host, never more than its few threads' span
    # (a unit slip, microseconds taken for seconds, would be a million times too much).
    assert 0 <= record.counters["preempted_s"] <= 8 * record.counters["seconds"], record.counters
    assert leftovers(dirs["work"]) == []
    with sqlite3.connect(dirs["state"] / "ledger.db") as db:
        live = db.execute("SELECT kind, ident FROM resources WHERE removed_at IS NULL").fetchall()
    assert live == []
