"""The regression gate on real runs: three runs of one tiny spec (a native cell on zram, four 1 s fio
trials each), the third with its stack made slower, gated as a CI pipeline gates them. In the long tier:
49 s measured here (the three runs; the slowed one at a fifth of a CPU takes the longest).

The slower run is the same spec under a cgroup CPU limit set from outside: a cell is matched across
runs by its full configuration, and a spec's own `limits:` are part of it (another cell, not the same
one slowed), so the limit is put on the process that runs it. 4k reads from zram with psync cost the
CPU and little else, so a fifth of a CPU gives about a fifth of the IOPS; the gate is set at 50%
(throughput at or below ×0.67) and its A/A pair, two unlimited runs back to back, is at ×1 within a
few per cent: neither side is near the line, so neither outcome is left to chance. Four trials a run,
so that even at the 36% CV a busy host gives zram reads (tests/long/test_statistics_real.py) the A/A
pair needs a t statistic beyond 2.4 at a 33% drop to fail, and the slowed run clears it by far.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import xmlschema

from layerbench.stack import cgroups
from tests import support
from tests.integration.leftovers import leftovers

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.slow]

SPEC = """
name: gate
device: {kind: zram, size: 256MiB}
stacks:
  - {filesystem: ext4, engine: native, placement: host-dir}
workloads:
  - {name: RR, rw: randread, bs: 4k, ioengine: psync, size: 32MiB, runtime_s: 1, ramp_s: 0}
trials: {repetitions: 4}
"""
PERIOD_US, QUOTA_US = 100_000, 20_000  # a fifth of one CPU
JUNIT_XSD = Path(__file__).parent.parent / "data" / "junit" / "junit-10.xsd"
EXIT_REGRESSION = 7


@contextlib.contextmanager
def cpu_limited() -> Iterator[list[str]]:
    """A cgroup of this test's under this process's own, limited to QUOTA_US of every PERIOD_US of CPU; yields
    the prefix that runs a command in it (a shell that joins it, then execs the command: same PID)."""
    name = f"layerbench-gate-test-{os.getpid()}"
    if cgroups.version() == 2:
        parent = cgroups.process_dirs(os.getpid()).get("unified", Path("/sys/fs/cgroup"))
        group, procs = parent / name, "cgroup.procs"
        group.mkdir()
        (group / "cpu.max").write_text(f"{QUOTA_US} {PERIOD_US}")
    else:
        parent = cgroups.process_dirs(os.getpid()).get("cpu", Path("/sys/fs/cgroup/cpu"))
        group, procs = parent / name, "tasks"
        group.mkdir()
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(QUOTA_US))
    try:
        yield ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(group / procs)]
    finally:
        deadline = time.monotonic() + 30  # the run has ended: its processes leave the group as they are reaped
        while (group / procs).read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.1)
        group.rmdir()


# Three runs (one at a fifth of a CPU) and two comparisons; the suite's 300 s leaves a busy host no room.
@pytest.mark.timeout(600)
def test_a_slowed_stack_fails_the_gate_and_an_aa_pair_passes(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "gate.yaml"
    spec.write_text(SPEC)
    ids = []
    for limited in (False, False, True):
        with cpu_limited() if limited else contextlib.nullcontext([]) as prefix:
            done = support.run(["run", str(spec)], dirs, timeout=240, prefix=prefix)
        assert done.returncode == 0, done.stdout + done.stderr
        ids.append(json.loads(support.run(["show", "latest", "--json"], dirs).stdout)["run"]["id"])
    a, twin, slowed = ids
    gate = ["--fail-if-slower", "50%"]

    same = support.run(["compare", a, twin, *gate], dirs)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no regression beyond the gate in 1 comparisons" in same.stderr

    xml = tmp_path / "gate.xml"
    slow = support.run(["compare", a, slowed, *gate, "--junit", str(xml)], dirs)
    assert slow.returncode == EXIT_REGRESSION, slow.stdout + slow.stderr
    named = [line for line in slow.stderr.splitlines() if line.startswith("regression:")]
    assert len(named) == 1 and "zram/ext4/native/host-dir · RR" in named[0] and "iops ×0." in named[0], named
    xmlschema.XMLSchema(JUNIT_XSD).validate(xml)
    assert leftovers(dirs["work"]) == []
