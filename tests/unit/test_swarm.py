"""The swarm engine's spec, its feasibility rules, the service it asks for, and its registration."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from docker.types import Mount
from pydantic import ValidationError

from layerbench.cli.options import SWARM_ENV, use_swarm_manager
from layerbench.spec.engines import swarm
from layerbench.spec.engines.swarm import SwarmCaps, SwarmNode
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.load import validate
from layerbench.spec.matrix import expand
from layerbench.spec.models import EngineSpec, Limits
from layerbench.stack.cleanup import REMOVERS
from layerbench.stack.engines import failure_category
from layerbench.stack.engines.swarm import _resources, _service, swarm_api

LABELS = {"layerbench.run": "run-1", "layerbench.scope": "run-1.abc123"}

READY = SwarmNode(ready=True, unreachable=None)


def with_swarm(full_caps: HostCaps, **nodes: SwarmNode) -> HostCaps:
    return full_caps.with_engine(swarm.KIND, SwarmCaps(nodes))


def refusals(caps: HostCaps, placement: str, node: str = "node2", **stack: object) -> list[str]:
    engine = {"kind": "swarm", "node": node}
    one = {"device": {"kind": "zram"}, "filesystem": "ext4", "engine": engine, "placement": placement, **stack}
    spec = {"name": "s", "stacks": [one], "workloads": [{"name": "RR", "rw": "randread"}]}
    return [r.reason for r in expand(validate(spec), caps).refused]


def test_the_swarm_engine_needs_a_node_and_dumps_it() -> None:
    engine = EngineSpec.model_validate({"kind": "swarm", "node": "node2"})
    assert engine.label() == "swarm(node2)"
    assert engine.model_dump() == {"kind": "swarm", "driver": None, "node": "node2"}
    with pytest.raises(ValidationError, match="engine swarm needs node: the node to run on"):
        EngineSpec.model_validate({"kind": "swarm"})
    with pytest.raises(ValidationError, match="node is the kubernetes engine's and the swarm engine's"):
        EngineSpec.model_validate({"kind": "podman", "node": "node2"})


def test_a_ready_node_reached_through_its_own_daemon_runs_bind_volume_and_tmpfs(full_caps: HostCaps) -> None:
    caps = with_swarm(full_caps, node2=READY)
    for placement in ("bind", "volume", "tmpfs"):
        assert refusals(caps, placement) == [], placement
    assert refusals(caps, "tmpfs", limits={"cpus": 0.5, "memory": "256MiB"}) == []


def test_what_a_swarm_cannot_run_is_refused_with_the_reason(full_caps: HostCaps) -> None:
    caps = with_swarm(
        full_caps,
        node1=READY,
        node2=READY,
        node3=SwarmNode(ready=False, unreachable=None),
        node4=SwarmNode(ready=True, unreachable="it has no label layerbench.socket (its own daemon's socket)"),
    )
    assert "under the node daemon's data-root" in refusals(caps, "writable-layer")[0]
    assert refusals(caps, "tmpfs", node="node9") == [
        "node 'node9' is not in the swarm; its nodes: node1, node2, node3, node4"
    ]
    assert refusals(caps, "tmpfs", node="node3") == ["swarm node 'node3' is not ready (or not active)"]
    (no_socket,) = refusals(caps, "bind", node="node4")
    assert "no label layerbench.socket" in no_socket and "docker node update --label-add" in no_socket
    assert "no block-I/O limit" in refusals(caps, "tmpfs", limits={"write_bps": "10MiB"})[0]
    assert "no cpuset" in refusals(caps, "tmpfs", limits={"cpuset": "0"})[0]
    assert "placement 'host-dir' is native" in refusals(caps, "host-dir")[0]


def test_an_unreachable_swarm_refuses_its_cells_with_why(full_caps: HostCaps) -> None:
    caps = full_caps.with_engine(
        swarm.KIND, SwarmCaps("no Docker daemon answers at unix:///x.sock: connection refused")
    )
    assert refusals(caps, "tmpfs") == [
        "no Docker Swarm: no Docker daemon answers at unix:///x.sock: connection refused"
    ]
    assert "not probed" in refusals(full_caps, "tmpfs")[0]  # the default: a swarm named by no option


def test_the_cells_service_is_one_task_pinned_never_restarted_labelled_and_limited() -> None:
    mounts = [Mount("/data", "/mnt/x/lb-1-data", type="bind")]
    body = _service("lb-1", "layerbench/tools:abc", "node2", Limits(cpus=0.5, memory="256MiB"), mounts, LABELS)
    assert body["constraints"] == ["node.hostname==node2"]
    assert body["restart_policy"]["Condition"] == "none"
    assert body["endpoint_spec"] == {"Mode": "dnsrr"}  # no virtual IP: this kernel has no IPVS
    assert body["labels"] == body["container_labels"] == LABELS
    assert body["command"] == ["sleep", "infinity"] and body["mounts"] == mounts
    assert body["resources"] == {"Limits": {"NanoCPUs": 500_000_000, "MemoryBytes": 256 * 2**20}}
    assert "resources" not in _service("lb-2", "i", "node2", Limits(), [], LABELS)


def test_a_servers_service_has_its_port_published_by_the_node_in_host_mode() -> None:
    body = _service("lb-3", "i", "node2", Limits(), [], LABELS, port=5432)
    (port,) = body["endpoint_spec"]["Ports"]
    assert port == {"TargetPort": 5432, "Protocol": "tcp", "PublishMode": "host"}  # the node picks the port
    assert body["endpoint_spec"]["Mode"] == "dnsrr"


def test_limits_become_a_services_resource_limits() -> None:
    assert _resources(Limits(cpus=1.5, memory="1GiB")) == {"cpu_limit": 1_500_000_000, "mem_limit": 2**30}
    assert _resources(Limits()) == {}


def test_a_failed_exec_on_the_nodes_daemon_is_the_engines_failure() -> None:
    assert failure_category(125, "swarm exec in /lb-1.1.x failed: 404 Client Error") == "engine-error"
    assert failure_category(1, "fio: file not found") is None


def test_cleanup_has_a_remover_for_everything_the_engine_records() -> None:
    assert {"swarm-run", "swarm-service", "swarm-volume", "swarm-image"} <= set(REMOVERS)


def test_the_manager_option_takes_a_url_or_a_socket_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SWARM_ENV, raising=False)
    use_swarm_manager(None)
    assert SWARM_ENV not in os.environ
    use_swarm_manager("unix:///var/tmp/s/node1/docker.sock")
    assert swarm_api.manager_url() == "unix:///var/tmp/s/node1/docker.sock"
    monkeypatch.chdir(tmp_path)
    use_swarm_manager("node1/docker.sock")
    assert swarm_api.manager_url() == f"unix://{tmp_path}/node1/docker.sock"


def test_no_manager_named_is_a_prerequisite_with_the_option_to_pass() -> None:
    assert swarm_api.swarm_nodes(None) == "no Docker Swarm manager named"
    assert swarm_api.swarm_nodes("unix:///nonexistent/docker.sock").startswith(
        "no Docker daemon answers at unix:///nonexistent/docker.sock"
    )


def test_a_node_label_that_is_no_socket_here_says_so(tmp_path: Path) -> None:
    assert "has no label layerbench.socket" in str(swarm_api._unreachable(None, "id1"))
    assert "is not a unix socket on this host" in str(swarm_api._unreachable(f"unix://{tmp_path}/docker.sock", "id1"))
    assert "is not a unix socket on this host" in str(swarm_api._unreachable("tcp://10.0.0.2:2375", "id1"))


def test_a_database_server_runs_on_a_swarm_node_with_cpu_and_memory_profiles_only(full_caps: HostCaps) -> None:
    def refused(**stack: object) -> list[str]:
        one = {"device": {"kind": "zram"}, "filesystem": "ext4", "engine": {"kind": "swarm", "node": "node2"}}
        one |= {"placement": "bind", "server": {"kind": "postgres"}, **stack}
        spec = {"name": "s", "stacks": [one], "workloads": [{"kind": "ycsb", "name": "A", "mix": "a"}]}
        return [r.reason for r in expand(validate(spec), with_swarm(full_caps, node2=READY)).refused]

    assert refused() == [] and refused(profile="CPU+MEM", instances=2) == []
    (bandwidth,) = refused(profile="BW", instances=2)
    assert "shares the device's bandwidth: a service has no block-I/O limit" in bandwidth
    assert refused(tuning="host-network") == [
        "tuning 'host-network' is a Docker container option, not a service's: drop it (or use engine docker)"
    ]
