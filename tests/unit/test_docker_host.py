"""The docker-host engine's spec, its feasibility rules, what it records of a daemon, and its registration."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from layerbench.errors import SpecError
from layerbench.run import nodes
from layerbench.run.kinds.single import set_not_enforced, trial_checks
from layerbench.run.measure.monitor import Monitor
from layerbench.spec.engines import docker_host
from layerbench.spec.engines.docker_host import DaemonCaps
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.load import validate
from layerbench.spec.matrix import expand, expand_stacks
from layerbench.spec.models import EngineSpec
from layerbench.stack.cleanup import REMOVERS
from layerbench.stack.engines import ENGINES, failure_category
from layerbench.stack.engines.docker_host import data_mount, host_api, limits_set
from layerbench.stack.placement import kill_inside
from layerbench.stack.target import Device, Target
from layerbench.workloads import footprint

URL = "tcp://10.250.99.10:2375"
NOTHING_BUILT = {"device": {"kind": "none"}, "filesystem": "none"}


def answering(full_caps: HostCaps, **why: str | None) -> HostCaps:
    return full_caps.with_engine(docker_host.KIND, DaemonCaps({URL: None, **why}))


def spec_of(*stacks: dict[str, Any], workloads: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"name": "h", "stacks": list(stacks), "workloads": workloads or [{"name": "RR", "rw": "randread"}]}


def on_host(placement: str, url: str = URL, **stack: Any) -> dict[str, Any]:
    return {**NOTHING_BUILT, "engine": {"kind": "docker-host", "node": url}, "placement": placement, **stack}


def refusals(caps: HostCaps, *stacks: dict[str, Any]) -> list[str]:
    return [r.reason for r in expand(validate(spec_of(*stacks)), caps).refused]


def test_a_docker_host_is_named_by_its_daemons_url_and_dumps_it() -> None:
    for url in (URL, "unix:///var/run/docker.sock", "ssh://me@box"):
        engine = EngineSpec.model_validate({"kind": "docker-host", "node": url})
        assert engine.label() == f"docker-host({url})"
        assert engine.model_dump() == {"kind": "docker-host", "driver": None, "node": url}
    with pytest.raises(ValidationError, match="engine docker-host needs node: the node to run on"):
        EngineSpec.model_validate({"kind": "docker-host"})


@pytest.mark.parametrize("url", ["10.0.0.5:2375", "http://10.0.0.5:2375", "tcp://", "/var/run/docker.sock"])
def test_a_node_that_is_no_docker_url_is_refused_naming_the_field_and_the_schemes(url: str) -> None:
    with pytest.raises(SpecError) as caught:
        expand_stacks(validate(spec_of(on_host("tmpfs", url))))
    said = str(caught.value)
    assert "stacks[0].engine" in said and f"engine docker-host's node {url!r} is not a Docker daemon's URL" in said
    assert "unix://, tcp://, ssh://" in said


def test_writable_layer_volume_and_tmpfs_run_on_a_daemon_that_answers(full_caps: HostCaps) -> None:
    caps = answering(full_caps)
    for placement in ("writable-layer", "volume", "tmpfs"):
        assert refusals(caps, on_host(placement)) == [], placement
    assert refusals(caps, on_host("tmpfs", limits={"cpus": 0.5, "memory": "256MiB", "cpuset": "0"})) == []
    assert refusals(caps, on_host("writable-layer", tuning="seccomp-unconfined")) == []


def test_what_a_docker_host_cannot_run_is_refused_with_the_reason(full_caps: HostCaps) -> None:
    caps = answering(full_caps, **{"tcp://10.250.99.99:2375": "Connection refused"})
    (bind,) = refusals(caps, on_host("bind"))
    assert "bind is a directory of this host, which means nothing to a daemon named by URL" in bind
    (built,) = refusals(caps, on_host("volume", device={"kind": "zram"}, filesystem="ext4"))
    assert "layerbench builds no device nor filesystem for it; set device: {kind: none} and filesystem: none" in built
    assert refusals(caps, on_host("tmpfs", url="tcp://10.250.99.99:2375")) == [
        "no Docker daemon answers at tcp://10.250.99.99:2375: Connection refused"
    ]
    assert refusals(full_caps, on_host("tmpfs")) == [f"no Docker daemon answers at {URL}: not probed"]
    assert "drop read_bps/write_bps" in refusals(caps, on_host("tmpfs", limits={"write_bps": "10MiB"}))[0]
    assert "placement 'host-dir' is not a Docker host's" in refusals(caps, on_host("host-dir"))[0]
    (claim,) = refusals(caps, on_host({"kind": "claim", "storage_class": "local"}))  # type: ignore[arg-type]
    assert "not a Docker host's" in claim


def test_a_database_server_on_a_docker_host_is_not_supported_yet(full_caps: HostCaps) -> None:
    stack = on_host("volume", server={"kind": "postgres"})
    spec = spec_of(stack, workloads=[{"kind": "ycsb", "name": "A", "mix": "a"}])
    (refused,) = [r.reason for r in expand(validate(spec), answering(full_caps)).refused]
    assert refused.startswith("database servers on a Docker host are not supported yet")


def test_device_none_without_a_claim_names_both_of_its_uses(full_caps: HostCaps) -> None:
    stack = {**NOTHING_BUILT, "engine": "docker", "placement": "volume"}
    (refused,) = refusals(full_caps, stack)
    assert "placement claim" in refused and "engine docker-host" in refused


def test_the_space_check_leaves_a_docker_hosts_storage_to_its_daemon(full_caps: HostCaps) -> None:
    big = {"name": "big", "rw": "randread", "size": "64GiB"}  # larger than device none's nominal 2 GiB
    spec = spec_of(on_host("volume"), workloads=[big])
    matrix = expand(validate(spec), answering(full_caps), files=footprint.files)
    assert matrix.refused == [] and len(matrix.cells) == 1


def test_parallel_nodes_splits_by_daemon_url(full_caps: HostCaps) -> None:
    other = "unix:///var/tmp/lbdocker/node2/docker.sock"
    caps = full_caps.with_engine(docker_host.KIND, DaemonCaps({URL: None, other: None}))
    matrix = expand(validate(spec_of(on_host("tmpfs"), on_host("tmpfs", url=other))), caps)
    assert sorted(nodes.split(matrix)) == sorted([URL, other])
    assert nodes.docker_hosts(matrix) == sorted([URL, other])
    assert nodes.on_this_machine(matrix, {other: True}) == [other]
    (child,) = [c for c in nodes.children(matrix, ["run", "spec.yaml"]) if c.node == URL]
    assert child.argv[-2:] == ["--node", URL]  # the URL as one argument, no quoting needed
    assert [c.id for c in nodes.only(matrix, URL).cells] == [c.id for c in nodes.split(matrix)[URL].cells]


# `docker info` of the local test daemon (Debian's dockerd 20.10 in a network namespace), trimmed.
INFO = {
    "Name": "lbhost",
    "ServerVersion": "20.10.24+dfsg1",
    "Driver": "overlay2",
    "DriverStatus": [["Backing Filesystem", "extfs"], ["Supports d_type", "true"], ["Native Overlay Diff", "true"]],
    "DockerRootDir": "/var/tmp/lbdocker/node1/data",
    "KernelVersion": "6.1.0-test",
    "OperatingSystem": "Debian GNU/Linux 12 (bookworm)",
    "NCPU": 2,
    "MemTotal": 4_000_000_000,
    "Swarm": {"LocalNodeState": "inactive"},
}


def test_a_trial_records_what_the_daemon_says_its_storage_is() -> None:
    found = host_api.facts(INFO)
    assert found["driver"] == "overlay2" and found["backing_filesystem"] == "extfs"
    assert found["data_root"] == "/var/tmp/lbdocker/node1/data" and found["kernel"] == "6.1.0-test"
    assert (found["cpus"], found["memory_bytes"], found["server_version"]) == (2, 4_000_000_000, "20.10.24+dfsg1")
    assert "Swarm" not in found and "backing_filesystem" not in host_api.facts({"Driver": "vfs"})


MOUNTINFO = (
    "600 500 0:55 / / rw,relatime - overlay overlay rw,lowerdir=/d/l/A,upperdir=/d/u,workdir=/d/w\n"
    "601 600 0:56 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "602 600 254:1 /var/tmp/lbdocker/node1/data/volumes/lb-1/_data /data rw,relatime - ext4 /dev/vda1 rw\n"
)


def test_data_is_what_the_containers_own_mount_table_says() -> None:
    assert data_mount(lambda: MOUNTINFO) == {
        "source": "/dev/vda1",
        "fs_type": "ext4",
        "root": "/var/tmp/lbdocker/node1/data/volumes/lb-1/_data",
        "mount_point": "/data",
    }
    layer = "\n".join(MOUNTINFO.splitlines()[:2])
    assert data_mount(lambda: layer)["fs_type"] == "overlay"  # writable-layer: the driver's own mount

    def unreadable() -> str:
        raise OSError("exec failed")

    assert data_mount(unreadable) == {"unknown": "cannot read the container's mounts: exec failed"}


def test_limits_are_read_back_as_the_daemon_set_them_and_not_called_enforced() -> None:
    config = {"NanoCpus": 500_000_000, "Memory": 256 * 2**20, "CpusetCpus": ""}
    assert limits_set(config) == {"cpus": 0.5, "memory": 256 * 2**20, "cpuset": None}
    asked = {"cpus": 0.5, "memory": 256 * 2**20}
    check = set_not_enforced(asked, limits_set(config))
    assert check.status == "skip" and "the daemon set cpus=0.5" in check.detail and "unverified" in check.detail
    wrong = set_not_enforced({"memory": 2**30}, limits_set(config))
    assert wrong.status == "flag" and "memory: asked" in wrong.detail


def test_a_trials_limit_check_uses_the_daemons_account_where_no_cgroup_was_read() -> None:
    info = {"limits": {"cpus": 0.5}, "limits_set": {"cpus": 0.5, "memory": None, "cpuset": None}}
    target = Target(lambda a, t: None, lambda n, x: n, "/data", False, Device("", "none", 0), "docker-host", info,
                    mount_table=lambda: MOUNTINFO)  # type: ignore[arg-type,return-value]  # fmt: skip
    checks = {c.name: c for c in trial_checks([], Monitor([]), target, "")}
    assert checks["limit-applied"].status == "skip" and "the daemon set cpus=0.5" in checks["limit-applied"].detail


def test_a_failed_exec_on_the_daemon_is_the_engines_failure() -> None:
    assert failure_category(125, "docker-host exec in lb-1 failed: 404 Client Error") == "engine-error"
    assert failure_category(1, "fio: file not found") is None


def test_cleanup_has_a_remover_for_everything_the_engine_records() -> None:
    assert set(ENGINES["docker-host"].removers) == {
        "docker-host-run",
        "docker-host-container",
        "docker-host-volume",
        "docker-host-image",
    }
    assert set(ENGINES["docker-host"].removers) <= set(REMOVERS)


def test_a_dead_url_answers_why_without_waiting() -> None:
    why = host_api.answers("tcp://127.0.0.1:1")
    assert why is not None and why  # connection refused, in the SDK's words
    assert host_api.answers("unix:///nonexistent/docker.sock") is not None
    assert host_api.describe_facts("tcp://127.0.0.1:1")["unknown"]
    assert host_api.on_this_machine("unix:///nonexistent/docker.sock")  # a socket here is this machine
    assert not host_api.on_this_machine("tcp://127.0.0.1:1")
    assert host_api.describe("tcp://127.0.0.1:1") == (
        False,
        "no Docker daemon answers at tcp://127.0.0.1:1: Connection refused",
    )


def test_why_a_daemon_does_not_answer_is_the_systems_reason_unwrapped() -> None:
    refused = (
        "Error while fetching server API version: HTTPConnectionPool(host='127.0.0.1', port=1): Max retries "
        "exceeded with url: /version (Caused by NewConnectionError(\"HTTPConnection(host='127.0.0.1', port=1): "
        'Failed to establish a new connection: [Errno 111] Connection refused"))'
    )
    assert host_api.why(RuntimeError(refused)) == "Connection refused"
    gone = "Error while fetching server API version: ('Connection aborted.', FileNotFoundError(2, 'No such file'))"
    assert host_api.why(RuntimeError(gone)) == "No such file"
    assert host_api.why(RuntimeError("500 Server Error\nmore")) == "500 Server Error"


class RecordingApi:
    """The Docker API's exec calls, recorded (what kill_inside asks of the daemon)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def exec_create(self, container: str, argv: list[str], **kwargs: Any) -> dict[str, str]:
        self.calls.append(("create", (container, argv)))
        return {"Id": "exec-2"}

    def exec_start(self, exec_id: str) -> bytes:
        self.calls.append(("start", exec_id))
        return b""


def test_a_timed_out_exec_is_killed_from_inside_its_container_not_by_a_pid_of_this_host() -> None:
    api = RecordingApi()
    container = type("C", (), {"id": "c1"})()
    kill_inside(container)(api, "exec-1")  # type: ignore[arg-type]
    assert api.calls == [("create", ("c1", ["sh", "-c", "kill -9 -1"])), ("start", "exec-2")]


def test_a_run_records_a_daemon_through_the_registry() -> None:
    from layerbench.stack.engines import describe_daemons

    found = describe_daemons(["unix:///nonexistent/docker.sock"])
    assert list(found) == ["unix:///nonexistent/docker.sock"] and found["unix:///nonexistent/docker.sock"]["unknown"]
