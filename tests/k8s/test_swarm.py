"""fio in services on a named node of a real three-node Docker Swarm: a bind mount, a local volume bound to
the filesystem under test, a tmpfs; limits read back from the kernel; refusals with reasons; nothing left
after a run, nor after a SIGKILL and `cleanup`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import support
from tests.integration.leftovers import assert_nothing_left, bridges, leftovers, server_dirs
from tests.k8s.cells import NODE, RR, node_spec, trials_by_label
from tests.k8s.daemons import daemon, wait_for_fio

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_docker, pytest.mark.slow]


def layerbench(args: list[str], dirs: dict[str, Path], manager: str) -> subprocess.CompletedProcess[str]:
    return support.run([*args, "--swarm-manager", manager], dirs)


def node_state(local_swarm: Any) -> dict[str, set[str]]:
    """What every node's daemon holds: containers, images (by id and tags), volumes; and the manager's services."""
    found: dict[str, set[str]] = {"services": set(), "containers": set(), "images": set(), "volumes": set()}
    with daemon(local_swarm.manager) as manager:
        found["services"] = {s.name for s in manager.services.list()}
    for name in local_swarm.names:
        with daemon(local_swarm.url(name)) as d:
            found["containers"] |= {f"{name}:{c.id[:12]}" for c in d.containers.list(all=True, sparse=True)}
            found["images"] |= {f"{name}:{i.id} {i.tags}" for i in d.images.list(all=True)}
            found["volumes"] |= {f"{name}:{v.name}" for v in d.volumes.list()}
    return found


def swarm_leftovers(local_swarm: Any, before: dict[str, set[str]]) -> list[str]:
    now = node_state(local_swarm)
    return [f"{kind} {what}" for kind in now for what in sorted(now[kind] - before[kind])]


def test_fio_runs_in_services_on_the_named_node_and_nothing_is_left(local_swarm: Any) -> None:
    before, baseline = bridges(), node_state(local_swarm)
    with server_dirs("lbswarm-run-") as dirs:
        limited = node_spec("swarm", ["bind", "volume", "tmpfs"], limits={"cpus": 0.5, "memory": "256MiB"})
        dirs["spec"].write_text(yaml.safe_dump(limited))
        done = layerbench(["run", str(dirs["spec"])], dirs, local_swarm.manager)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "3 trials ok, 0 failed" in done.stdout
        trials = trials_by_label(dirs["db"])
        assert len(trials) == 3
        for label, (info, status) in trials.items():
            assert status == "ok", label
            target = info["target"]
            assert target["node"] == NODE and target["service"].startswith("lb-"), target
            assert target["pid"] > 1  # the task's container, on this host
            enforced = target["limits_enforced"]  # the service's limits, as the kernel's cgroup has them
            assert (enforced["cpus"], enforced["memory"]) == (pytest.approx(0.5), 256 * 2**20), enforced
            on = target["data_mount"]  # /data in the task: the filesystem under test, or memory
            placement = target["placement"]
            assert (on["fs_type"], on["source"].startswith("/dev/zram")) == (
                ("tmpfs", False) if placement == "tmpfs" else ("ext4", True)
            ), (placement, on)
            assert placement == "tmpfs" or on["root"].endswith("-data"), on  # the directory layerbench made
        assert_nothing_left(dirs, before)
    assert swarm_leftovers(local_swarm, baseline) == []


def test_cells_a_swarm_cannot_run_are_refused_with_reasons(local_swarm: Any) -> None:
    with (
        server_dirs("lbswarm-refused-") as dirs,
        _changed(local_swarm, "node3", lambda s: {**s, "Labels": {}}),  # as a node of another swarm is
        _changed(local_swarm, "node1", lambda s: {**s, "Availability": "drain"}),
    ):
        wrong = node_spec("swarm", ["writable-layer"])
        for node, extra in (("node9", {}), ("node3", {}), ("node1", {}), (NODE, {"limits": {"write_bps": "10MiB"}})):
            wrong["stacks"].append(
                {"filesystem": "ext4", "engine": {"kind": "swarm", "node": node}, "placement": "tmpfs", **extra}
            )
        dirs["spec"].write_text(yaml.safe_dump(wrong))
        done = layerbench(["run", str(dirs["spec"]), "--dry-run"], dirs, local_swarm.manager)
        assert done.returncode == 0, done.stderr
        text = " ".join(done.stdout.split())
        assert "writable layer is under the node daemon's data-root" in text
        assert "node 'node9' is not in the swarm; its nodes: node1, node2, node3" in text
        assert "swarm node 'node3': it has no label layerbench.socket" in text
        assert "swarm node 'node1' is not ready (or not active)" in text
        assert "a service has no cpuset and no block-I/O limit" in text


@contextlib.contextmanager
def _changed(local_swarm: Any, name: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Iterator[None]:
    """Node ``name``'s spec changed for a while (its labels, its availability), then put back."""
    with daemon(local_swarm.manager) as manager:
        (node,) = [n for n in manager.nodes.list() if n.attrs["Description"]["Hostname"] == name]
        was = dict(node.attrs["Spec"])
        node.update(change(was))
        try:
            yield
        finally:
            node.reload()  # its version moved on with the update
            node.update(was)


def test_sigkill_then_cleanup_leaves_nothing_on_the_swarm(local_swarm: Any) -> None:
    before, baseline = bridges(), node_state(local_swarm)
    with server_dirs("lbswarm-kill-") as dirs:
        dirs["spec"].write_text(yaml.safe_dump(node_spec("swarm", ["volume"], workload={**RR, "runtime_s": 600})))
        proc = support.start(["run", str(dirs["spec"]), "--swarm-manager", local_swarm.manager], dirs)
        try:
            wait_for_fio(local_swarm.url(NODE), proc)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate()
        assert swarm_leftovers(local_swarm, baseline)  # the kill left its service, volume and image
        cleaned = support.run(["cleanup"], dirs)
        assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
        assert "swarm-service" in cleaned.stdout and "swarm-run" in cleaned.stdout
        assert leftovers(dirs["work"]) == [] and bridges() <= before  # the run's dir stays, for `resume`
        with sqlite3.connect(dirs["state"] / "ledger.db") as db:
            assert db.execute("SELECT kind, ident FROM resources WHERE removed_at IS NULL").fetchall() == []
    assert swarm_leftovers(local_swarm, baseline) == []


def test_doctor_reports_the_swarm_and_its_nodes(local_swarm: Any) -> None:
    argv = [sys.executable, "-m", "layerbench.cli", "doctor", "--json", "--swarm-manager", local_swarm.manager]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = {r["value"]: r for r in json.loads(done.stdout) if r["axis"] == "swarm"}
    assert rows["swarm"]["ok"] and rows["swarm"]["note"].startswith("Docker "), rows["swarm"]
    for name in local_swarm.names:
        assert rows[f"node {name}"]["ok"] and local_swarm.url(name) in rows[f"node {name}"]["note"]


@pytest.mark.requires_db
def test_postgresql_serves_from_a_service_on_a_volume(local_swarm: Any) -> None:
    before, baseline = bridges(), node_state(local_swarm)
    server = {"kind": "postgres", "records": 2000, "scale": 2}
    workloads = [
        {"kind": "ycsb", "name": "A", "mix": "a", "threads": 2, "runtime_s": 2, "warmup_s": 1},
        {"kind": "pgbench", "name": "tpcb", "clients": 2, "runtime_s": 2},
    ]
    with server_dirs("lbswarm-db-") as dirs:
        db_spec = {**node_spec("swarm", ["volume"], server=server), "workloads": workloads}  # bind: fio's test
        dirs["spec"].write_text(yaml.safe_dump(db_spec))
        done = layerbench(["run", str(dirs["spec"])], dirs, local_swarm.manager)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "2 trials ok, 0 failed" in done.stdout
        with sqlite3.connect(dirs["db"]) as db:
            ops = db.execute("SELECT COUNT(*) FROM samples WHERE metric='ops' AND value > 0").fetchone()[0]
        assert ops >= 2  # every trial measured operations against the server in its service
        for info, _ in trials_by_label(dirs["db"]).values():
            (endpoint,) = info["endpoints"]
            assert endpoint["host"] == local_swarm.address(NODE) and endpoint["port"] != 5432, endpoint
        assert_nothing_left(dirs, before)
    assert swarm_leftovers(local_swarm, baseline) == []
