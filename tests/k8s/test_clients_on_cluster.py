"""Many fio clients at once on a cluster's nodes (docs/how-to/many-clients.md): three pods all on one claim of
the local cluster's StorageClass local-path on one node, or each with a claim of its own on each of three nodes;
three swarm services all on one volume, or each with a bind directory on the filesystem under test on each of
three nodes; three containers on two Docker hosts by their sockets. One result per trial, a row per client,
every server on a Unix socket in its container (nothing listens on the pod network or the swarm's), the nodes
flagged as one machine, and nothing left in the cluster."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import support
from tests.integration.leftovers import assert_nothing_left, bridges, server_dirs
from tests.k8s.cells import NODE, RR, node_spec, trials_by_label
from tests.k8s.test_docker_host import daemon_state
from tests.k8s.test_kubernetes_engine import api, claim_stack, cluster_leftovers, node_images
from tests.k8s.test_swarm import node_state, swarm_leftovers

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.slow]

CLIENTS = 3


def assert_one_result_of_three_clients(db_path: Path, unit: str) -> None:
    """One ok trial: each client in a target of its own (``unit``: pod or service), a row each, the merged
    percentiles, the spread judged."""
    ((info, status),) = trials_by_label(db_path).values()
    assert status == "ok", info
    described = info["clients"]
    assert [c["name"] for c in described] == [f"c{i}" for i in range(CLIENTS)]
    assert len({c[unit] for c in described}) == CLIENTS, described  # a pod (a service) each
    assert all(c["pid"] > 1 for c in described)  # their processes are this host's: the sockets are reached there
    with sqlite3.connect(db_path) as db:
        jobs = {j for (j,) in db.execute("SELECT DISTINCT job FROM samples WHERE metric = 'iops'")}
        assert jobs == {f"c{i}" for i in range(CLIENTS)}
        (p99,) = db.execute("SELECT value FROM samples WHERE job = 'all' AND metric = 'clat_p99'").fetchone()
        assert p99 > 0
        spread = dict(db.execute("SELECT metric, value FROM samples WHERE metric LIKE '%spread_ms'").fetchall())
        assert set(spread) == {"start_spread_ms", "finish_spread_ms"}
        status, detail = db.execute("SELECT status, detail FROM checks WHERE name = 'clients-in-step'").fetchone()
    # In step or not is the machine's to say; judged, with the spread it saw.
    assert status in ("pass", "flag") and detail.startswith("start spread"), detail


def assert_dealt_over_nodes(dirs: dict[str, Path], nodes: list[str], key: str = "node") -> None:
    """Client i on the spec's nodes[i % len(nodes)], each in a target of its own there (``key``: what names its
    node in the trial's info); the trial flags that the nodes are one machine, and `show` names each client's
    node."""
    dealt = [nodes[i % len(nodes)] for i in range(CLIENTS)]
    ((info, _),) = trials_by_label(dirs["db"]).values()
    assert [c[key] for c in info["clients"]] == dealt, info["clients"]
    with sqlite3.connect(dirs["db"]) as db:
        status, detail = db.execute("SELECT status, detail FROM checks WHERE name = 'shared-machine'").fetchone()
    assert status == "flag" and detail.startswith(f"nodes {', '.join(nodes)} are all this machine"), detail
    shown = support.run(["show", "--db", str(dirs["db"]), "--json"], dirs)
    assert shown.returncode == 0, shown.stderr
    rows = {r["client"]: r["node"] for r in json.loads(shown.stdout)["clients"]}
    assert [rows[f"c{i}"] for i in range(CLIENTS)] == dealt, rows


@pytest.mark.requires_k8s
@pytest.mark.parametrize(
    ("shared", "nodes"),
    [(True, None), (False, ["node1", "node2", "node3"])],
    ids=["one-claim", "a-claim-each-on-three-nodes"],  # a claim each is proved on three nodes only: the tier's time
)
def test_three_pods_with_claims_run_as_one_trial(cluster: Any, shared: bool, nodes: list[str] | None) -> None:
    core = api(cluster.kubeconfig)
    before, images = bridges(), node_images(Path(cluster.root))
    with server_dirs("lbk8s-clients-") as dirs:
        # node3: a node that is this host (every node of the local cluster is): the sockets are reached by /proc.
        clients = {"count": CLIENTS, "shared": shared} | ({"nodes": nodes} if nodes else {})
        spec = {**node_spec("kubernetes", ["tmpfs"], RR), "stacks": [claim_stack("node3", clients=clients)]}
        dirs["spec"].write_text(yaml.safe_dump(spec))
        done = support.run(["run", str(dirs["spec"]), "--kubeconfig", str(cluster.kubeconfig)], dirs)
        assert done.returncode == 0, done.stdout + done.stderr
        assert_one_result_of_three_clients(dirs["db"], "pod")
        ((info, _),) = trials_by_label(dirs["db"]).values()
        assert info["engine"] == "kubernetes"
        claims = {c["claim"]["claim"] for c in info["clients"]}
        assert len(claims) == (1 if shared else CLIENTS), info["clients"]  # shared: one claim, all the pods on it
        assert {c["claim"]["source"] for c in info["clients"]} == {"local"}  # what the class provisions
        if nodes:
            assert_dealt_over_nodes(dirs, nodes)
        assert_nothing_left(dirs, before)
    assert cluster_leftovers(core, Path(cluster.root), images) == []
    assert list((Path(cluster.root) / "volumes").iterdir()) == []  # the class reclaimed every claim's volume


@pytest.mark.requires_docker
@pytest.mark.parametrize(
    ("placement", "shared", "nodes"),
    [("volume", True, None), ("bind", False, [NODE, "node3", "node1"])],
    ids=["one-volume", "a-bind-each-on-three-nodes"],
)
def test_three_services_with_their_data_run_as_one_trial(
    local_swarm: Any, placement: str, shared: bool, nodes: list[str] | None
) -> None:
    before, baseline = bridges(), node_state(local_swarm)
    with server_dirs("lbswarm-clients-") as dirs:
        clients = {"count": CLIENTS, "shared": shared} | ({"nodes": nodes} if nodes else {})
        dirs["spec"].write_text(yaml.safe_dump(node_spec("swarm", [placement], RR, clients=clients)))
        done = support.run(["run", str(dirs["spec"]), "--swarm-manager", local_swarm.manager], dirs)
        assert done.returncode == 0, done.stdout + done.stderr
        assert_one_result_of_three_clients(dirs["db"], "service")
        ((info, _),) = trials_by_label(dirs["db"]).values()
        assert info["engine"] == "swarm" and [c["node"] for c in info["clients"]] == (nodes or [NODE] * CLIENTS)
        if nodes:
            assert_dealt_over_nodes(dirs, nodes)
        roots = {c["data_mount"]["root"] for c in info["clients"]}  # /data's directory on the filesystem under test
        assert len(roots) == (1 if shared else CLIENTS), info["clients"]
        assert_nothing_left(dirs, before)
    assert swarm_leftovers(local_swarm, baseline) == []


@pytest.mark.requires_docker
def test_clients_on_two_docker_hosts_by_their_sockets_run_as_one_trial(docker_hosts: Any) -> None:
    """Two plain daemons named by their unix sockets, a client on each then again (three, dealt in turn), a volume
    of the daemon's own each; their containers found in this host's /proc, where their sockets are reached."""
    sockets = [docker_hosts.socket(name) for name in docker_hosts.names]
    before, baseline = bridges(), daemon_state(docker_hosts)
    stack = {
        "device": {"kind": "none"},
        "filesystem": "none",
        "engine": {"kind": "docker-host", "node": sockets[0]},
        "placement": "volume",
        "clients": {"count": CLIENTS, "nodes": sockets},
    }
    spec = {**node_spec("swarm", ["volume"], RR), "device": {"kind": "none"}, "stacks": [stack]}
    with server_dirs("lbdocker-clients-") as dirs:
        dirs["spec"].write_text(yaml.safe_dump(spec))
        done = support.run(["run", str(dirs["spec"])], dirs)
        assert done.returncode == 0, done.stdout + done.stderr
        assert_one_result_of_three_clients(dirs["db"], "container")
        assert_dealt_over_nodes(dirs, sockets, "daemon_url")
        assert_nothing_left(dirs, before)
    assert daemon_state(docker_hosts) == baseline
