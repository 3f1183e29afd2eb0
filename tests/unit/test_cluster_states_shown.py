"""`show`, `show --json` and the HTML report give each trial on a Ceph cluster layerbench built a short note of
the cluster's state as it began ("degraded: 17/33 PGs degraded, 2/3 OSDs up") and what a verify read-back
said: what each trial recorded in its ``info.cluster``, read back from a stored run (statuses captured from a
real cluster, tests/data/ceph/16.2.15)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from layerbench.records.info import ClusterInfo, TrialInfo
from layerbench.records.sample import Sample
from layerbench.records.trial import TrialRecord
from layerbench.report import html
from layerbench.report.terminal import show_json
from layerbench.report.view import view
from layerbench.run.loop import register_cells
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.load import validate
from layerbench.spec.matrix import expand
from layerbench.stack.remote.ceph import cli
from layerbench.store.db import Store
from layerbench.store.read import load

CEPH = Path(__file__).parent.parent / "data" / "ceph" / "16.2.15"
READ_BACK = "67108864 bytes read back and verified"


def _device(state: str) -> dict[str, object]:
    return {"remote": {"transport": "rbd", "client": "fio", "cluster": {"state": state}}}


def stored(tmp_path: Path, caps: HostCaps) -> Path:
    """A degraded and a healthy cell's trials stored as the run stage stores them, with their cluster's state."""
    exp = validate(
        {
            "name": "states",
            "device": {"kind": "loop", "size": "2GiB"},
            "stacks": [{"device": [_device("healthy"), _device("degraded")], "filesystem": "none",
                        "engine": "native", "placement": "raw"}],
            "workloads": [{"name": "RWV", "rw": "randwrite", "time_based": False, "verify": "crc32c"}],
        }
    )  # fmt: skip
    matrix = expand(exp, replace(caps, remote={f: None for f in ("storage-host", "rbd", "rbd-fio")}))
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run(exp.name, exp.model_dump_json(), exp.digest(), {})
    register_cells(store, run_id, matrix)
    for c in matrix.cells:
        remote = c.stack.device.remote
        assert remote is not None and remote.cluster is not None
        state = remote.cluster.state
        status = cli.parse_status((CEPH / f"status-{state}.json").read_text()).to_json()
        info = TrialInfo(cluster=ClusterInfo(state, "osd.2", status, status, {}, READ_BACK))
        sample = Sample("iops", 1000.0, "IO/s", "write", "job")
        store.record_trial(run_id, TrialRecord(c.id, 0, "ok", None, 0, 1, [], "", "", info, [sample]))
    store.finish_run(run_id, "finished")
    store.close()
    return tmp_path / "r.db"


def test_show_json_and_the_report_give_each_trial_its_clusters_state(tmp_path: Path, full_caps: HostCaps) -> None:
    v = view(load(Store.open(stored(tmp_path, full_caps), create=False), "latest"))
    states = show_json(v)["cluster_states"]
    assert [s["note"] for s in states] == ["healthy: 3/3 OSDs up", "degraded: 7/33 PGs degraded, 2/3 OSDs up"]
    assert all(s["verified"] == READ_BACK and s["status"] == "ok" for s in states)
    page = html.render(v, tmp_path / "report", workloads=None).read_text()
    assert 'id="cluster-states"' in page and "degraded: 7/33 PGs degraded, 2/3 OSDs up" in page


def test_show_prints_them_beneath_the_results(tmp_path: Path, full_caps: HostCaps) -> None:
    db = stored(tmp_path, full_caps)
    argv = [sys.executable, "-m", "layerbench.cli", "show", "--db", str(db)]
    done = subprocess.run(
        argv, capture_output=True, text=True, check=True, timeout=120, env={**os.environ, "COLUMNS": "250"}
    )
    assert "cluster state" in done.stdout
    assert "degraded: 7/33 PGs degraded, 2/3 OSDs up" in done.stdout, done.stdout
