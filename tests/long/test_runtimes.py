"""OCI runtimes for real: Docker with runc and with gVisor's runsc run a cell each, crun is probed and
refused or run as the host allows, io_uring under runsc is refused before anything runs, and a run
SIGKILLed while a runsc container holds the device leaves nothing after `layerbench cleanup`.

Waits on state (the ledger says a container is live), never on time.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from layerbench import proc
from layerbench.stack import runtimes
from tests import support
from tests.integration.leftovers import leftovers
from tests.reliability.test_kill_cleanup import STATE_TIMEOUT_S, live_kinds

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_docker, pytest.mark.slow]

RR = {"name": "RR", "rw": "randread", "bs": "4k", "ioengine": "psync", "size": "32MiB", "runtime_s": 1, "ramp_s": 0}


def spec(engines: list[dict[str, Any]], workload: dict[str, Any] = RR) -> dict[str, Any]:
    return {
        "name": "runtimes-test",
        "device": {"kind": "zram", "size": "512MiB"},
        "stacks": [{"filesystem": "ext4", "engine": engines, "placement": "volume"}],
        "workloads": [workload],
        "trials": {"repetitions": 1},
    }


def dirs_in(tmp_path: Path) -> dict[str, Path]:
    return {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}


def write(tmp_path: Path, body: dict[str, Any]) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


@pytest.fixture(scope="module")
def runsc_missing() -> str | None:
    return runtimes.probe("runsc", proc.run)


def test_runc_and_runsc_cells_run_and_record_their_runtime(tmp_path: Path, runsc_missing: str | None) -> None:
    if runsc_missing:
        pytest.skip(f"skipped, because {runsc_missing}")
    dirs = dirs_in(tmp_path)
    engines = [{"kind": "docker", "runtime": "runc"}, {"kind": "docker", "runtime": "runsc"}]
    done = support.run(["run", str(write(tmp_path, spec(engines)))], dirs, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    with sqlite3.connect(dirs["db"]) as db:
        rows = db.execute("SELECT status, info_json FROM trials").fetchall()
    recorded = {json.loads(info)["target"]["runtime"]["name"]: (status, json.loads(info)) for status, info in rows}
    assert set(recorded) == {"runc", "runsc"}
    assert all(status == "ok" for status, _ in recorded.values())
    gvisor = recorded["runsc"][1]["target"]["runtime"]
    assert gvisor["version"].startswith("runsc version") and gvisor["args"] == ["--network=none"]
    assert {"platform", "file-access"} <= set(gvisor)
    assert leftovers(dirs["work"]) == []


def test_crun_runs_or_is_refused_with_its_own_reason(tmp_path: Path) -> None:
    why = runtimes.probe("crun", proc.run)
    dirs = dirs_in(tmp_path)
    done = support.run(["run", str(write(tmp_path, spec([{"kind": "docker", "runtime": "crun"}]))), "--dry-run"], dirs)
    if why is None:
        assert done.returncode == 0 and "refused" not in done.stdout, done.stdout + done.stderr
    else:
        # The host's own words (crun 1.8 on cgroup v1: "cgroups in hybrid mode not supported ...").
        assert f"runtime crun: {why}" in " ".join(done.stdout.split()), done.stdout + done.stderr


def test_io_uring_under_runsc_is_refused_before_the_run(tmp_path: Path, runsc_missing: str | None) -> None:
    if runsc_missing:
        pytest.skip(f"skipped, because {runsc_missing}")
    body = spec([{"kind": "docker", "runtime": "runsc"}], {**RR, "ioengine": "io_uring"})
    done = support.run(["run", str(write(tmp_path, body)), "--dry-run"], dirs_in(tmp_path))
    assert "ioengine io_uring under runtime runsc" in " ".join(done.stdout.split()), done.stdout + done.stderr


def test_a_daemon_whose_seccomp_profile_blocks_io_uring_refuses_it_before_the_trial(tmp_path: Path) -> None:
    """Docker 25's default profile, reproduced on the private daemon (tests/data/runtimes): the io_uring cell's
    trial is refused by the probe, with the reason; the same container with seccomp unconfined runs."""
    profile = Path(__file__).parents[1] / "data" / "runtimes" / "seccomp-no-io_uring.json"
    body = spec([{"kind": "docker", "seccomp": str(profile)}], {**RR, "ioengine": "io_uring", "iodepth": 8})
    body["stacks"][0]["tuning"] = ["default", "seccomp-unconfined"]
    dirs = dirs_in(tmp_path)
    done = support.run(["run", str(write(tmp_path, body))], dirs, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr  # 1: a trial failed, as it should
    with sqlite3.connect(dirs["db"]) as db:
        rows = db.execute(
            "SELECT c.label, t.status, t.category, t.stderr, t.info_json FROM trials t JOIN cells c USING (cell_id)"
        ).fetchall()
    by_tuning = {("seccomp-unconfined" in label): row for label, *row in rows}
    status, category, stderr, info = by_tuning[False]
    assert (status, category) == ("failed", "io_uring-blocked"), rows
    assert "Operation not permitted" in stderr and "moby pull request 46762" in stderr
    assert json.loads(info)["target"]["io_uring"] == "refused: Operation not permitted"
    status, category, _, info = by_tuning[True]
    assert (status, category) == ("ok", None), rows
    assert json.loads(info)["target"]["io_uring"] == "allowed"
    assert leftovers(dirs["work"]) == []


def test_sigkill_with_a_runsc_container_up_then_cleanup(tmp_path: Path, runsc_missing: str | None) -> None:
    if runsc_missing:
        pytest.skip(f"skipped, because {runsc_missing}")
    dirs = dirs_in(tmp_path)
    body = spec([{"kind": "docker", "runtime": "runsc"}], {**RR, "runtime_s": 60})
    run = support.start(["run", str(write(tmp_path, body))], dirs)
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while "container" not in live_kinds(dirs["state"] / "ledger.db"):
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the run never started its container"
        time.sleep(0.2)
    assert sandboxes(), "a live runsc container, yet no gVisor process: the check below would see nothing"
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert {"dockerd", "container"} <= live_kinds(dirs["state"] / "ledger.db")
    cleanup = support.run(["cleanup"], dirs, timeout=600)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert live_kinds(dirs["state"] / "ledger.db") == set()
    assert leftovers(dirs["work"]) == []
    assert sandboxes() == [], "gVisor's sandbox or gofer outlived cleanup"


def sandboxes() -> list[str]:
    """gVisor's processes of layerbench's daemons (their state is under /run/layerbench) still running."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        line = b" ".join(argv).decode(errors="replace")
        if "runsc" in line and "/run/layerbench/" in line:
            found.append(line)
    return found
