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
