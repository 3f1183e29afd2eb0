"""Database servers on a swarm's node and in a Kubernetes pod are reachable beyond this host (the node's
published port, the pod network): while a run's servers serve, each of their listening sockets is read
and its server asked, in its protocol, whether it lets a client in without the run's password.

- On a swarm node the server listens on its container's wildcard (the node publishes the port): every
  socket on a non-private address must refuse a client without the password.
- In a pod it listens at the pod's IP alone: every socket must be on a private address (never the
  wildcard) and refuse a client without the password.

The servers are found in the run's ledger (their host PIDs: a pod's server by its container's cgroup,
engines/kubernetes/kube_api.py), their sockets in their own network namespace's tables, and each is asked from inside
that namespace (tests/sockets.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from layerbench.stack import capabilities
from tests import sockets, support
from tests.deadlines import wait_for
from tests.integration.leftovers import assert_nothing_left, bridges, server_dirs
from tests.k8s.cells import node_spec

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_docker, pytest.mark.requires_db, pytest.mark.slow]

SERVERS = [{"kind": "postgres", "records": 500}, {"kind": "redis", "records": 500}]
# Each server serves through YCSB's load (a JVM's start and 500 records) and this run: at least 10 s, in
# which the poll (a ledger read, a probe, about a second even on a busy machine) sees it ten times over
# (the wait is on the state, below). 20 s runs made each of the two tests a minute.
WORKLOAD = {"kind": "ycsb", "name": "A", "mix": "a", "threads": 1, "runtime_s": 10}
SERVE_S = 600.0  # a stack built, its image loaded on the node, its server up: minutes on a busy machine

Check = Callable[[str, int], list[str]]


def check_servers_during_the_run(engine: str, extra: list[str], dirs: dict[str, Path], check: Check) -> list[str]:
    """Start the run; as each server answers, ``check`` it; then the run's end. What is wrong, said."""
    spec = {**node_spec(engine, ["volume" if engine == "swarm" else "bind"], server=SERVERS), "workloads": [WORKLOAD]}
    dirs["spec"].write_text(yaml.safe_dump(spec))
    proc = support.start(["run", str(dirs["spec"]), "--cache-dir", str(capabilities.DEFAULT_CACHE), *extra], dirs)
    ledger = dirs["state"] / "ledger.db"
    wrong: list[str] = []
    seen: set[str] = set()
    rows: set[str] = set()  # every server row the poll read: what a failure says it saw
    try:
        while len(seen) < len(SERVERS):
            try:
                kind, pid = wait_for(
                    lambda: next(
                        ((k, p) for k, p in _servers(ledger, rows) if k not in seen and sockets.serving(k, p)), None
                    ),
                    f"a {engine} server serving (seen: {sorted(seen)})",
                    SERVE_S,
                    alive=lambda: proc.poll() is None,
                )
            except AssertionError as exc:
                out, err = proc.communicate(timeout=SERVE_S) if proc.poll() is not None else ("", "")
                said = f"{exc}; the ledger's server rows: {sorted(rows) or 'none'}"
                raise AssertionError(f"{said}\n{out}{err[-3000:]}") from exc
            seen.add(kind)
            wrong += check(kind, pid)
        out, err = proc.communicate(timeout=SERVE_S)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.communicate(timeout=support.TEARDOWN_S)
    assert proc.returncode == 0, out + err
    return wrong


def _servers(ledger: Path, rows: set[str]) -> list[tuple[str, int]]:
    """(kind, host PID) of the run's live servers whose PID is recorded; ``rows`` gets every server row."""
    found = sockets.server_rows(ledger) if ledger.exists() else []
    rows.update(f"{d['ident']} pid={d.get('pid')}" for d in found)
    return [(str(d["server"]), int(str(d["pid"]))) for d in found if d.get("pid")]


def test_servers_on_a_swarm_node_want_the_run_s_password(local_swarm: Any) -> None:
    before = bridges()
    with server_dirs("lbswarm-sockets-") as dirs:
        manager = ["--swarm-manager", local_swarm.manager]
        assert check_servers_during_the_run("swarm", manager, dirs, sockets.open_doors) == []
        assert_nothing_left(dirs, before)


def test_servers_in_kubernetes_pods_listen_privately_and_want_the_run_s_password(cluster: Any) -> None:
    before = bridges()
    with server_dirs("lbk8s-sockets-") as dirs:
        kubeconfig = ["--kubeconfig", str(cluster.kubeconfig)]
        assert check_servers_during_the_run("kubernetes", kubeconfig, dirs, sockets.private_and_closed) == []
        assert_nothing_left(dirs, before)
