"""A cluster's state as an axis, for real (make test-ceph): a degraded trial runs with one OSD stopped and its
PGs degraded, a recovering trial while recovery runs, each recording the cluster's state at its start and end
and the settings read back from the OSDs; fio's verify reads every block back once the cluster is healthy
again, and a block lost there would fail the trial.

About 3 minutes here (175 s in the tier, busy): two clusters, each 25-60 s to build; a degraded state in about
7 s, the OSD back with data to recover in about 6 s more, recovery of the fill and the trial's writes within
a minute."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.ceph.test_rbd import _run

pytestmark = [
    pytest.mark.requires_root,
    pytest.mark.requires_fio,
    pytest.mark.requires_ceph,
    pytest.mark.slow,
    pytest.mark.timeout(600),
]

# One pass of 4k random writes over 64 MiB (16,384 blocks), each with its crc32c, read back after the trial.
VERIFIED = {
    "name": "RWV", "rw": "randwrite", "bs": "4k", "iodepth": 16, "size": "64MiB", "runtime_s": 120, "ramp_s": 0,
    "time_based": False, "verify": "crc32c",
}  # fmt: skip


def _state(state: str) -> dict:
    cluster = {"osds": 3, "size": 3, "state": state, "recovery": {"osd_recovery_sleep": 0}}
    return {"remote": {"transport": "rbd", "client": "fio", "cluster": cluster}}


def test_degraded_and_recovering_trials_run_in_their_state_record_it_and_lose_nothing(tmp_path: Path) -> None:
    spec = {
        "name": "rbd-states",
        "device": {"kind": "loop", "size": "2GiB"},
        "stacks": [{"device": [_state("degraded"), _state("recovering")], "filesystem": "none", "placement": "raw"}],
        "workloads": [VERIFIED],
        "trials": {"repetitions": 1},
    }
    shown = _run(tmp_path, spec)
    assert len(shown["cluster_states"]) == 2, shown["cluster_states"]
    trials = _trials(tmp_path / "r.db")
    for state in ("degraded", "recovering"):
        (label,) = [k for k in trials if f",{state}," in k]
        trial = trials[label]
        assert trial["status"] == "ok", (trial["category"], trial["stderr"][-2000:])
        cluster = trial["info"]["cluster"]
        start, end = cluster["start"], cluster["end"]
        assert cluster["state"] == state and cluster["stopped"] == "osd.2"
        checks = {c["name"]: c for c in trial["checks"]}
        assert checks["cluster-state"]["status"] == "pass", checks["cluster-state"]
        # Nothing lost: every block written in the state was read back and verified once the cluster was healthy.
        assert cluster["verified_after"] == f"{64 * 2**20} bytes read back and verified"
        settings = cluster["settings"]["osds"]
        assert set(settings) == {"osd.0", "osd.1", "osd.2"}
        assert all(float(o["osd_recovery_sleep_hdd"]) == 0 for o in settings.values()), settings
        # Sampled while it ran, beside the host's series: at least once, as it started.
        up = [value for series, value in trial["monitor"] if series == "ceph.osds_up"]
        assert up and all(v == (2 if state == "degraded" else 3) for v in up), trial["monitor"]
        if state == "degraded":
            assert (start["osds_up"], end["osds_up"]) == (2, 2)
            assert _pgs(start, "degraded") > 0 and start["degraded_objects"] >= 0
        else:
            assert start["osds_up"] == 3
            assert any(_pgs(start, w) for w in ("degraded", "recovering", "recovery_wait")), start
    notes = [s["note"] for s in shown["cluster_states"]]
    assert any(n.startswith("degraded: ") and "PGs degraded" in n and "2/3 OSDs up" in n for n in notes), notes


def _pgs(status: dict, word: str) -> int:
    return sum(n for s, n in status["pg_states"].items() if word in s.split("+"))


def _trials(db_path: Path) -> dict[str, dict]:
    """Each trial by its cell's stack label: status, category, stderr, recorded info and checks."""
    sql = (
        "SELECT c.stack_label, t.id, t.status, t.category, t.stderr, t.info_json FROM trials t "
        "JOIN cells c ON c.cell_id = t.cell_id AND c.run_id = t.run_id"
    )
    with sqlite3.connect(db_path) as db:
        rows = db.execute(sql).fetchall()
        checks = db.execute("SELECT trial_id, name, status, detail FROM checks").fetchall()
        points = db.execute("SELECT trial_id, series, value FROM monitor WHERE series LIKE 'ceph.%'").fetchall()
    return {
        label: {
            "status": status, "category": category, "stderr": stderr, "info": json.loads(info),
            "checks": [{"name": n, "status": s, "detail": d} for tid, n, s, d in checks if tid == trial_id],
            "monitor": [(series, value) for tid, series, value in points if tid == trial_id],
        }
        for label, trial_id, status, category, stderr, info in rows
    }  # fmt: skip
