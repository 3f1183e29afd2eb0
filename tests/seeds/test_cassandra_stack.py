"""Cassandra through the whole pipeline, as a user runs it: natively and in a private Docker daemon
(the image built from the host's JDK and Cassandra's jars), under YCSB workloads A and D; then
seed 000's scaling with one and two containers. Nothing of it may be left."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests import support
from tests.integration.leftovers import assert_nothing_left, bridges, server_dirs

pytestmark = [
    pytest.mark.requires_root,
    pytest.mark.requires_docker,
    pytest.mark.requires_cassandra,
    pytest.mark.slow,
]

CASSANDRA = {"kind": "cassandra", "memory": "1GiB", "records": 2000, "fieldcount": 5, "fieldlength": 20}
SPEC = {
    "name": "cassandra-it",
    "device": {"kind": "zram", "size": "1GiB"},
    "stacks": [
        {"filesystem": "ext4", "engine": "native", "placement": "host-dir", "server": CASSANDRA},
        {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume", "server": CASSANDRA},
    ],
    "workloads": [
        {"kind": "ycsb", "name": "A", "mix": "a", "threads": 4, "runtime_s": 3, "warmup_s": 1},
        {"kind": "ycsb", "name": "D", "mix": "d", "distribution": "uniform", "threads": 4, "runtime_s": 3,
         "warmup_s": 1, "consistency": "quorum"},
    ],
    "baseline": {"filesystem": "ext4", "engine": "native", "placement": "host-dir", "same": ["server"]},
}  # fmt: skip


@pytest.fixture
def dirs() -> Iterator[dict[str, Path]]:
    with server_dirs("lb-cassandra-test-") as made:
        yield made


def test_cassandra_natively_and_in_a_container_under_a_and_d(dirs: dict[str, Path]) -> None:
    before = bridges()
    dirs["spec"].write_text(yaml.safe_dump(SPEC))
    done = support.run(["run", str(dirs["spec"])], dirs, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = json.loads(support.run(["show", "latest", "--json"], dirs).stdout)
    cells = {c["stack_label"] + " · " + c["workload"]: c for c in shown["cells"]}
    assert len(cells) == 4 and all(c["summary"]["n"] == 1 and c["summary"]["mean"] > 0 for c in cells.values())
    for workload in ("A", "D"):  # each container cell against native Cassandra under the same workload
        cell = cells[f"zram/ext4/docker:overlay2/volume/cassandra(2000rec) · {workload}"]
        native = cells[f"zram/ext4/native/host-dir/cassandra(2000rec) · {workload}"]
        assert native["is_baseline"] and not cell["is_baseline"]
        expected = cell["summary"]["mean"] / native["summary"]["mean"]
        assert cell["ratio"]["ratio"] == pytest.approx(expected, rel=1e-9), workload
    with sqlite3.connect(dirs["db"]) as db:
        ops = db.execute(
            "SELECT c.label, s.direction, s.value FROM samples s JOIN trials t ON t.id = s.trial_id"
            " JOIN cells c ON c.cell_id = t.cell_id WHERE s.metric = 'count' AND s.job = 'all'"
        ).fetchall()
        errors = db.execute("SELECT sum(value) FROM samples WHERE metric = 'errors'").fetchone()[0]
        images = db.execute("SELECT t.info_json FROM trials t WHERE t.info_json LIKE '%container%'").fetchall()
    directions = {(label.split("·")[-1].strip(), d) for label, d, n in ops if n > 0}
    assert {("A", "read"), ("A", "update"), ("D", "read"), ("D", "insert")} <= directions
    assert errors == 0  # every operation succeeded, natively and in the container
    assert images and all(json.loads(i)["endpoints"][0]["container"] for (i,) in images)
    assert_nothing_left(dirs, before)


SCALING = {
    "name": "cassandra-scaling-it",
    "device": {"kind": "zram", "size": "2GiB"},
    "resources": {"memory": "2GiB"},  # MEM: 1 GiB each, the least a Cassandra is given
    "stacks": [
        {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume", "instances": [1, 2],
         "profile": "MEM", "server": {**CASSANDRA, "records": 1000}},
    ],
    "workloads": [{"kind": "ycsb", "name": "A", "mix": "a", "threads": 2, "runtime_s": 2, "warmup_s": 1}],
    "baseline": {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume", "instances": 1,
                 "same": ["server", "profile"]},
}  # fmt: skip


def test_cassandra_scaling_with_one_and_two_containers(dirs: dict[str, Path]) -> None:
    before = bridges()
    dirs["spec"].write_text(yaml.safe_dump(SCALING))
    done = support.run(["run", str(dirs["spec"])], dirs, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = json.loads(support.run(["show", "latest", "--json"], dirs).stdout)
    assert {c["stack_label"] for c in shown["cells"]} == {
        "zram/ext4/docker:overlay2/volume/cassandra(1000rec)[MEM]",
        "zram/ext4/docker:overlay2/volume/cassandra(1000rec)x2[MEM]",
    }
    with sqlite3.connect(dirs["db"]) as db:
        jobs = db.execute(
            "SELECT c.label, s.job FROM samples s JOIN trials t ON t.id = s.trial_id JOIN cells c"
            " ON c.cell_id = t.cell_id WHERE s.metric = 'ops'"
        ).fetchall()
        limits = db.execute("SELECT detail FROM checks WHERE name = 'limit-applied'").fetchall()
    assert {job for label, job in jobs if "x2[MEM]" in label} == {"i0", "i1"}  # a client per instance
    assert len(limits) == 3 and all(": read back from the cgroup: " in d for (d,) in limits)  # 1 GiB each
    assert_nothing_left(dirs, before)
