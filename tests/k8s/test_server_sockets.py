"""Database servers on a swarm's node are reachable beyond this host (the node's published port): while a
run's servers serve, each of their listening sockets on a non-private address (a wildcard, in the
service's namespace) must refuse a client without the run's password. (The same check of a Kubernetes
pod's servers is not here yet: its first run on the local cluster ended without the poll seeing a server
in the run's ledger, and is issue 32's open part.) The servers are found in the run's ledger (their
host PIDs), their sockets in their own network namespace's tables, and each is asked from inside that
namespace (tests/sockets.py)."""

from __future__ import annotations

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
# Long enough that every server is still up when its sockets are read (the wait is on the state, below).
WORKLOAD = {"kind": "ycsb", "name": "A", "mix": "a", "threads": 1, "runtime_s": 20}
SERVE_S = 600.0  # a stack built, its image loaded on the node, its server up: minutes on a busy machine


def check_servers_during_the_run(engine: str, extra: list[str], dirs: dict[str, Path]) -> list[str]:
    """Start the run; as each server answers, its open doors; then the run's end. What is wrong, said."""
    spec = {**node_spec(engine, ["volume" if engine == "swarm" else "bind"], server=SERVERS), "workloads": [WORKLOAD]}
    dirs["spec"].write_text(yaml.safe_dump(spec))
    proc = support.start(["run", str(dirs["spec"]), "--cache-dir", str(capabilities.DEFAULT_CACHE), *extra], dirs)
    ledger = dirs["state"] / "ledger.db"
    wrong: list[str] = []
    seen: set[str] = set()
    try:
        while len(seen) < len(SERVERS):
            kind, pid = wait_for(
                lambda: next(((k, p) for k, p in _servers(ledger) if k not in seen and sockets.serving(k, p)), None),
                f"a {engine} server serving (seen: {sorted(seen)})",
                SERVE_S,
                alive=lambda: proc.poll() is None,
            )
            seen.add(kind)
            wrong += sockets.open_doors(kind, pid)
        out, err = proc.communicate(timeout=SERVE_S)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.communicate(timeout=support.TEARDOWN_S)
    assert proc.returncode == 0, out + err
    return wrong


def _servers(ledger: Path) -> list[tuple[str, int]]:
    return sockets.live_servers(ledger) if ledger.exists() else []


def test_servers_on_a_swarm_node_want_the_run_s_password(local_swarm: Any) -> None:
    before = bridges()
    with server_dirs("lbswarm-sockets-") as dirs:
        assert check_servers_during_the_run("swarm", ["--swarm-manager", local_swarm.manager], dirs) == []
        assert_nothing_left(dirs, before)

