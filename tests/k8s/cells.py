"""What the Kubernetes and Swarm tiers share: one small fio spec on a node, and reading its trials back."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

NODE = "node2"
RR = {"name": "RR", "rw": "randread", "bs": "4k", "size": "64MiB", "runtime_s": 2}


def node_spec(engine: str, placements: list[str], workload: dict[str, Any] = RR, **stack: Any) -> dict[str, Any]:
    """One stack on NODE of ``engine`` (kubernetes or swarm): zram, ext4, these placements, one trial."""
    on_node = {"filesystem": "ext4", "engine": {"kind": engine, "node": NODE}, "placement": placements, **stack}
    return {
        "name": f"{engine}-test",
        "device": {"kind": "zram", "size": "512MiB"},
        "stacks": [on_node],
        "workloads": [workload],
        "trials": {"repetitions": 1},
    }


def trials_by_label(db_path: Path) -> dict[str, tuple[dict[str, Any], str]]:
    """Cell label → (the trial's info, its status), for runs of one trial per cell."""
    with sqlite3.connect(db_path) as db:
        rows = db.execute("SELECT c.label, t.info_json, t.status FROM trials t JOIN cells c USING (cell_id)")
        return {label: (json.loads(info), status) for label, info, status in rows}


CPU_CHECKS = ("bottleneck", "contended")


def cpu_checks(db_path: Path) -> dict[str, dict[str, tuple[str, str]]]:
    """Cell label → {check: (status, detail)} for the checks a trial's CPU decides (issue 29: judged only on
    a machine this host can see)."""
    with sqlite3.connect(db_path) as db:
        rows = db.execute(
            "SELECT c.label, k.name, k.status, k.detail FROM checks k JOIN trials t ON t.id = k.trial_id "
            "JOIN cells c USING (cell_id) WHERE k.name IN ('bottleneck', 'contended')"
        )
        found: dict[str, dict[str, tuple[str, str]]] = {}
        for label, name, status, detail in rows:
            found.setdefault(label, {})[name] = (status, detail)
        return found


def assert_seen_or_skipped(db_path: Path, target_by_label: dict[str, dict[str, Any]]) -> None:
    """Each trial's `bottleneck` and `contended`: judged (pass or flag) where this host found the cell's
    processes (a pod's PID and cgroup on a node that is this host: the node's own figures), else skipped
    with "cannot see node"; never a pass from this host's CPU for a machine it cannot see."""
    checks = cpu_checks(db_path)
    assert set(checks) == set(target_by_label), (checks, target_by_label)
    for label, target in target_by_label.items():
        assert set(checks[label]) == set(CPU_CHECKS), checks[label]
        for name, (status, detail) in checks[label].items():
            if "unseen" in target:
                assert status == "skip" and detail.startswith(f"cannot see node {target['unseen']}"), (name, detail)
            else:
                assert "pid" in target and "cgroup" in target, target  # the cell's processes, this host's
                assert status in ("pass", "flag"), (label, name, status, detail)
