"""Faults handled as data: the private daemon killed mid-trial, the work
directory full. Each becomes failed trials with a category; the run goes on."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from layerbench import proc
from layerbench.run.loop import execute, register_cells
from layerbench.spec import load
from layerbench.spec.matrix import expand
from layerbench.stack.capabilities import probe
from layerbench.stack.cleanup import reclaim
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext
from layerbench.store.db import Store
from tests import support
from tests.integration.leftovers import leftovers
from tests.reliability.test_kill_cleanup import STATE_TIMEOUT_S, live_kinds

pytestmark = [pytest.mark.reliability, pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.slow]

RR = {"name": "RR", "rw": "randread", "bs": "4k", "iodepth": 8, "size": "64MiB", "runtime_s": 3, "ramp_s": 0}


def live_daemon_pid(state: Path) -> int | None:
    ledger = state / "ledger.db"
    if not ledger.exists():
        return None
    with sqlite3.connect(ledger) as conn:
        rows = conn.execute("SELECT detail FROM resources WHERE kind='dockerd' AND removed_at IS NULL").fetchall()
    pids = [json.loads(r[0]).get("pid") for r in rows]
    return next((p for p in pids if p), None)


@pytest.mark.requires_docker
def test_daemon_killed_mid_trial_fails_that_trial_and_the_run_goes_on(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = {
        "name": "daemon-dies",
        "device": {"kind": "zram", "size": "256MiB"},
        "stacks": [{"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume"}],
        "workloads": [RR],
        "trials": {"repetitions": 3},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    run = support.start(["run", str(path)], dirs)
    deadline = time.monotonic() + STATE_TIMEOUT_S
    # Once the container is up, the daemon dies while fio lays out the test file or runs the first trial:
    # either way that trial fails as the engine's, and the next rounds get a new daemon.
    while "container" not in live_kinds(dirs["state"] / "ledger.db"):
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "no container came up"
        time.sleep(0.1)
    pid = live_daemon_pid(dirs["state"])
    assert pid is not None, "no daemon recorded"
    os.kill(pid, signal.SIGKILL)  # the private daemon this run started, by the PID it recorded
    out, err = run.communicate(timeout=300)
    assert run.returncode == 1, out + err  # finished, with a failed trial
    with sqlite3.connect(dirs["db"]) as conn:
        rows = conn.execute("SELECT repetition, status, category, stderr FROM trials ORDER BY id").fetchall()
    assert len(rows) == 3
    failed = [r for r in rows if r[1] == "failed"]
    assert failed and failed[0][2] == "engine-error" and failed[0][3]
    assert [r for r in rows if r[1] == "ok"], "the stack was not rebuilt for the trials after"
    cleanup = support.run(["cleanup"], dirs, timeout=300)
    assert cleanup.returncode == 0, cleanup.stdout
    assert leftovers(dirs["work"]) == []


def test_work_dir_too_small_is_refused_before_anything_runs(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(small)], check=True, timeout=60)
    try:
        dirs = {"db": tmp_path / "r.db", "work": small / "work", "state": tmp_path / "state"}
        run = support.start(["run", "smoke"], dirs)
        out, err = run.communicate(timeout=120)
        assert run.returncode == 3, out + err
        assert "GiB free" in err and "needs about" in err
        assert not dirs["db"].exists()
    finally:
        subprocess.run(["umount", str(small)], check=True, timeout=60)


def test_disk_filling_up_anyway_is_a_failed_trial_and_nothing_leaks(tmp_path: Path) -> None:
    """The space check passed (or was raced): the loop file cannot be written. The
    pipeline is driven directly to get past the up-front check."""
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(small)], check=True, timeout=60)
    try:
        exp = load.validate(
            {
                "name": "full",
                "device": {"kind": "loop", "size": "128MiB"},
                "stacks": [{"filesystem": "ext4"}],
                "workloads": [RR],
            }
        )
        matrix = expand(exp, probe(proc.run))
        store = Store.open(tmp_path / "r.db")
        run_id = store.new_run("full", exp.model_dump_json(), exp.digest(), {})
        register_cells(store, run_id, matrix)
        ledger = Ledger(tmp_path / "state" / "ledger.db", run_id)
        ctx = BuildContext(work_dir=small, ledger=ledger, run_id=run_id, runner=proc.run)
        tally = execute(exp, matrix, store, run_id, ctx)
        assert tally.failed == 1 and tally.categories == {"setup-error": 1}
        assert "No space left" in store.trials(run_id)[0].stderr
        ledger.run_id = "cleanup"  # as `layerbench cleanup` does: the run is over
        reclaim(ledger, tmp_path / "state", proc.run)
        assert ledger.live() == [] and list(small.iterdir()) == []
    finally:
        subprocess.run(["umount", str(small)], check=True, timeout=60)
