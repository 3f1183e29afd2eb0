"""OCI runtimes as a spec names them, the feasibility rules refuse them, and a daemon registers them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from layerbench.analysis.comparisons import reference
from layerbench.spec.engines import docker
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.models import EngineSpec, FioWorkload, StackSpec
from layerbench.spec.rules import why_not, workload_fits
from layerbench.stack import runtimes
from layerbench.stack.engines.podman import podman_argv
from layerbench.workloads import fio

DATA = Path(__file__).parents[1] / "data" / "runtimes"


def stack(runtime: str | None, kind: str = "docker") -> StackSpec:
    engine = {"kind": kind, **({"runtime": runtime} if runtime else {})}
    body = {"device": {"kind": "zram", "size": "1GiB"}, "filesystem": "ext4", "engine": engine, "placement": "volume"}
    return StackSpec.model_validate(body)


def test_runtime_is_the_daemons_engines_and_shows_in_the_label() -> None:
    assert stack("runsc").engine.label() == "docker:overlay2+runsc"
    assert stack("crun", "podman").engine.label() == "podman:overlay+crun"
    # Without a runtime a cell dumps as before the field existed: its id (a hash of the dump) is unchanged.
    assert "runtime" not in EngineSpec.model_validate("docker:overlay2").model_dump()
    with pytest.raises(ValidationError, match="runtime is for engines docker and podman"):
        EngineSpec.model_validate({"kind": "native", "runtime": "runsc"})
    with pytest.raises(ValidationError, match="'runc', 'crun' or 'runsc'"):
        EngineSpec.model_validate({"kind": "docker", "runtime": "kata"})


def test_a_runtime_the_probe_could_not_run_refuses_its_cells(full_caps: HostCaps) -> None:
    said = (DATA / "crun-hybrid.stderr").read_text().strip()
    caps = with_runtimes(full_caps, {"crun": f"crun cannot run a container on this host: {said}", "runsc": None})
    assert why_not(stack("crun"), caps) == f"runtime crun: crun cannot run a container on this host: {said}"
    assert why_not(stack("crun", "podman"), caps).startswith("runtime crun: ")
    assert why_not(stack("runsc"), caps) is None
    assert why_not(stack(None), caps) is None
    assert why_not(stack("runc"), caps) == "runtime runc: not probed"


def test_io_uring_under_gvisor_is_refused_with_the_reason() -> None:
    uring = FioWorkload(name="RR", rw="randread", ioengine="io_uring")
    assert "double free" in (workload_fits(stack("runsc"), uring) or "")
    assert workload_fits(stack("runc"), uring) is None
    assert workload_fits(stack("runsc"), FioWorkload(name="RR", rw="randread", ioengine="psync")) is None


def test_a_runtime_is_judged_against_runc_and_runc_against_native() -> None:
    assert reference(stack("runsc")) == stack("runc")
    assert reference(stack("runc")).engine.kind == "native"


def test_the_daemon_registers_gvisor_without_its_sandbox_network() -> None:
    config = runtimes.daemon_config("runsc")
    assert config["default-runtime"] == "runsc"
    assert config["runtimes"]["runsc"]["runtimeArgs"] == ["--network=none"]
    assert runtimes.daemon_config("runc") == {"default-runtime": "runc"}  # built into dockerd
    argv = podman_argv(Path("/run/layerbench/x"), Path("/mnt/podman"), "overlay", "runsc")
    assert "--runtime=runsc" in argv and "--runtime-flag=network=none" in argv


def test_the_refusal_quotes_what_the_runtime_said() -> None:
    runc = (DATA / "runc-run-failed.stderr").read_text()
    assert runtimes.last_line(runc).startswith("runc run failed: unable to start container process: error during")
    assert '"cgroup" to rootfs' in runtimes.last_line(runc)
    assert runtimes.last_line((DATA / "crun-hybrid.stderr").read_text()).startswith("cgroups in hybrid mode")


def test_fio_refused_io_uring_in_its_own_words() -> None:
    said = (DATA / "fio-io_uring-seccomp-eperm.stdout").read_text()  # fio 3.33 says it before its JSON
    assert fio.io_uring_refused(said) == "Operation not permitted"
    assert fio.io_uring_refused("fio: pid=9, err=2/file:filesetup.c:805, func=open, error=No such file") is None


def test_the_io_uring_probe_reads_a_device_and_writes_only_its_own_file() -> None:
    device = fio.io_uring_probe_argv("/dev/zram1", True)
    assert "--rw=read" in device and "--filename=/dev/zram1" in device and "--unlink=1" not in device
    directory = fio.io_uring_probe_argv("/data", False)
    assert "--filename=/data/.lb-io_uring-probe" in directory and "--unlink=1" in directory
    assert "--ioengine=io_uring" in device and "--ioengine=io_uring" in directory


def test_a_daemons_seccomp_profile_is_dockers_and_must_be_a_json_file(tmp_path: Path, full_caps: HostCaps) -> None:
    with pytest.raises(ValidationError, match="seccomp is the docker engine's"):
        EngineSpec.model_validate({"kind": "podman", "seccomp": "/x.json"})
    body = {"device": {"kind": "zram", "size": "1GiB"}, "filesystem": "ext4", "placement": "volume"}
    missing = StackSpec.model_validate({**body, "engine": {"kind": "docker", "seccomp": str(tmp_path / "no.json")}})
    assert "not a readable JSON file" in (why_not(missing, full_caps) or "")
    given = {"kind": "docker", "seccomp": str(DATA / "seccomp-no-io_uring.json")}
    assert why_not(StackSpec.model_validate({**body, "engine": given}), full_caps) is None


def test_a_database_server_under_gvisor_is_refused_with_the_reason(full_caps: HostCaps) -> None:
    caps = with_runtimes(full_caps, {"runsc": None})
    body = {"device": {"kind": "zram", "size": "1GiB"}, "filesystem": "ext4", "placement": "volume"}
    server = StackSpec.model_validate({**body, "engine": {"kind": "docker", "runtime": "runsc"}, "server": "postgres"})
    assert "root network namespace" in (why_not(server, caps) or "")


def with_runtimes(caps: HostCaps, found: dict[str, str | None]) -> HostCaps:
    """``caps`` with what the runtimes' probe found (the runtimes are Docker's registry, Podman's too)."""
    return caps.with_engine(docker.KIND, replace(docker.of(caps), runtimes=found))
