"""SIGKILL layerbench while its database servers run: natively they outlive it, in Docker their
network's bridge does; `layerbench cleanup` must remove both, from the ledger alone."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from layerbench.stack.handle import start_time
from tests import support
from tests.integration.leftovers import bridges, leftovers

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.requires_root,
    pytest.mark.requires_docker,
    pytest.mark.requires_db,
    pytest.mark.slow,
]

WORKLOAD = {"kind": "ycsb", "name": "A", "threads": 2, "runtime_s": 60, "warmup_s": 0}
PG = {"kind": "postgres", "records": 1000}
STACKS = {
    "native": {"filesystem": "ext4", "engine": "native", "placement": "host-dir", "server": PG, "instances": 2},
    "docker": {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume", "server": PG},
}


@pytest.fixture
def dirs() -> Iterator[dict[str, Path]]:
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="lb-kill-db-"))
    base.chmod(0o711)
    yield {"db": base / "r.db", "work": base / "work", "state": base / "state", "base": base}
    shutil.rmtree(base)


@pytest.mark.parametrize(("engine", "waits_for"), [("native", "server"), ("docker", "network")])
def test_sigkill_with_servers_up_then_cleanup(dirs: dict[str, Path], engine: str, waits_for: str) -> None:
    before = bridges()
    spec = dirs["base"] / f"kill-{engine}.yaml"
    spec.write_text(yaml.safe_dump({"name": f"kill-{engine}", "device": {"kind": "zram", "size": "1GiB"},
                                    "stacks": [STACKS[engine]], "workloads": [WORKLOAD]}))  # fmt: skip
    run = support.start(["run", str(spec)], dirs)
    try:
        live = _wait_for_live(dirs["state"], waits_for, run)
    finally:
        os.kill(run.pid, signal.SIGKILL)  # only the process this test started, by its PID
        run.wait()
    if engine == "native":  # the servers outlived layerbench: cleanup has real work to do
        assert any(start_time(int(r["pid"])) == r["start_time"] for r in live)
    cleanup = support.run(["cleanup"], dirs, timeout=300)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert leftovers(dirs["work"]) == []
    assert bridges() <= before
    assert _live(dirs["state"]) == []
    assert not any(start_time(int(r["pid"])) == r["start_time"] for r in live if r.get("pid"))


def _wait_for_live(state: Path, kind: str, run: object) -> list[dict]:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        rows = [r for r in _live(state) if r["kind"] == kind and (kind != "server" or r.get("start_time"))]
        if rows:
            time.sleep(1.0)  # into the load or the trial, the servers answering
            return [r for r in _live(state) if r["kind"] == "server"]
        assert run.poll() is None, "the run ended before it was killed"  # type: ignore[attr-defined]
        time.sleep(0.2)
    pytest.fail(f"no live {kind} in the ledger after 240 s")


def _live(state: Path) -> list[dict]:
    ledger = state / "ledger.db"
    if not ledger.exists():
        return []
    with sqlite3.connect(ledger) as db:
        try:
            rows = db.execute("SELECT kind, detail FROM resources WHERE removed_at IS NULL").fetchall()
        except sqlite3.OperationalError:  # killed while creating it
            return []
    return [{"kind": kind, **json.loads(detail)} for kind, detail in rows]
