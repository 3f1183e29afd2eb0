"""SIGKILL layerbench at many points of a short run, resume each time: no finished
trial is lost or repeated, and after cleanup nothing is left on the host."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest
import yaml

from tests import support
from tests.integration.leftovers import leftovers

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.requires_root,
    pytest.mark.requires_fio,
    pytest.mark.requires_docker,
    pytest.mark.slow,
]

SPEC = {
    "name": "kill-me",
    "device": {"kind": "zram", "size": "384MiB"},
    "stacks": [{"filesystem": "ext4"}, {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume"}],
    "workloads": [
        {"name": "RR", "rw": "randread", "bs": "4k", "iodepth": 8, "size": "64MiB", "runtime_s": 1, "ramp_s": 0},
        {"name": "SW", "rw": "write", "bs": "128k", "iodepth": 8, "size": "64MiB", "runtime_s": 1, "ramp_s": 0},
    ],
    "trials": {"repetitions": 4},
}
EXPECTED = 2 * 2 * 4
# Seconds after each start: spread over spec loading, reclaim, device and filesystem
# building, dockerd start, image import, preconditioning, trials and commits. Python's imports
# take the first 1.5 s of each start here (python -X importtime): two kills land there (nothing
# recorded yet, or the run's row half-written), the others where the run does work.
KILL_AFTER = [0.4, 1.0, 1.6, 2.0, 2.4, 2.8, 3.2, 3.6, 4.2, 5.0]


def trials(db: Path) -> dict[tuple[str, int], tuple[int, str]]:
    if not db.exists():
        return {}
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT cell_id, repetition, id, raw_output FROM trials").fetchall()
    return {(c, r): (i, raw) for c, r, i, raw in rows}


def test_sigkill_anywhere_then_resume(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "kill-me.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    seen: dict[tuple[str, int], tuple[int, str]] = {}
    kills = 0
    for delay in KILL_AFTER:
        # Killed before the run was even recorded: there is nothing to resume, so start it anew.
        proc = support.start(["resume", "latest"] if _has_run(dirs["db"]) else ["run", str(spec)], dirs)
        time.sleep(delay)
        if proc.poll() is not None:
            break  # the run finished before this kill
        os.kill(proc.pid, signal.SIGKILL)  # only the process this test started, by its PID
        proc.wait()
        kills += 1
        now = trials(dirs["db"])
        assert all(now.get(k) == v for k, v in seen.items()), "a finished trial was lost or changed"
        seen = now
    final = support.start(["resume", "latest"] if _has_run(dirs["db"]) else ["run", str(spec)], dirs)
    _, err = final.communicate(timeout=600)
    assert final.returncode == 0, err
    done = trials(dirs["db"])
    assert len(done) == EXPECTED  # none lost, none repeated (UNIQUE per cell and repetition)
    assert all(done[k] == v for k, v in seen.items())
    assert kills == len(KILL_AFTER)  # the run never finished between two kills: each kill landed
    cleanup = support.run(["cleanup"], dirs, timeout=300)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert leftovers(dirs["work"]) == []
    assert not [d for d in Path("/sys/block").glob("zram*") if d.name != "zram0" and _ours(d, dirs)]


def _has_run(db: Path) -> bool:
    if not db.exists():
        return False
    with sqlite3.connect(db) as conn:
        try:
            return conn.execute("SELECT count(*) FROM runs").fetchone()[0] > 0
        except sqlite3.OperationalError:  # killed while creating the schema
            return False


def _ours(dev: Path, dirs: dict[str, Path]) -> bool:
    """A zram device this test's runs recorded (other zram devices on the host are not ours)."""
    with sqlite3.connect(dirs["state"] / "ledger.db") as conn:
        idents = {r[0] for r in conn.execute("SELECT ident FROM resources WHERE kind='zram'")}
    return f"/dev/{dev.name}" in idents
