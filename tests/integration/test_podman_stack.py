"""The Podman engine for real: a private podman service per storage driver on a loop-mounted
filesystem made here, the host-binary image through its Docker-compatible API, each placement
running fio, limits read back, the volatile trap made on purpose (an auto-removed container),
and after teardown nothing left: no service, conmon, mount, directory, runc state, lock or
live ledger row.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from docker.errors import NotFound
from docker.models.containers import Container

from layerbench.run.measure.mount_check import volatile_check
from layerbench.spec.models import EngineSpec, Limits, PlacementSpec, StackSpec
from layerbench.stack import mountinfo
from layerbench.stack.cgroups import mismatches
from layerbench.stack.dockerd import ApiDaemon, mounts_below
from layerbench.stack.engines import ENGINES
from layerbench.stack.engines.container import ApiEngine
from layerbench.stack.engines.podman import HOST_DIRS, containers_conf, podman_argv, service_env
from layerbench.stack.image import resolve
from layerbench.stack.target import BuildContext, Mount
from tests.integration.test_docker_stack import (
    BTRFS,
    DATA_BYTES,
    alive,
    loop_fs,
    make_ctx,
    processes_naming,
    run_fio,
)

EXT4 = ["mkfs.ext4", "-q", "-F", "-E", "nodiscard"]
PODMAN = [pytest.mark.requires_root, pytest.mark.requires_podman, pytest.mark.requires_fio]
PLACEMENTS = ["writable-layer", "volume", "bind", "tmpfs"]


# --- pure: what the service is told ------------------------------------------------------------


def test_service_configuration_is_private() -> None:
    exec_root, data_root = Path("/run/layerbench/ab12cd34"), Path("/mnt/x/podman")
    conf = containers_conf(exec_root, data_root)
    assert 'default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]' in conf
    assert 'lock_type = "file"' in conf and 'cgroup_manager = "cgroupfs"' in conf
    assert f'network_config_dir = "{exec_root}/cni"' in conf and f'tmp_dir = "{exec_root}/tmp"' in conf
    argv = podman_argv(exec_root, data_root, "overlay")
    assert f"--root={data_root}" in argv and f"--runtime-flag=root={exec_root}/runc" in argv
    assert argv[-1] == f"unix://{exec_root}/podman.sock" and "--time=0" in argv
    env = service_env(exec_root, data_root)
    assert env["CONTAINERS_CONF"] == f"{exec_root}/containers.conf"
    assert env["CONTAINERS_STORAGE_CONF"] == f"{exec_root}/storage.conf"


# --- fixtures --------------------------------------------------------------------------------------


@dataclass
class Stack:
    ctx: BuildContext
    mount: Mount
    engine: ApiEngine

    @property
    def daemon(self) -> ApiDaemon:
        return self.engine.daemon


def stack_spec(driver: str, placement: str, limits: Limits = Limits()) -> StackSpec:
    return StackSpec.model_validate(
        {
            "device": {"kind": "loop"},
            "filesystem": "ext4",
            "engine": f"podman:{driver}",
            "placement": placement,
            "limits": limits.model_dump(),
        }
    )


@contextmanager
def podman_stack(tmp: Path, fs: str, mkfs: list[str], driver: str) -> Iterator[Stack]:
    """fs → private podman service(driver); on the way out asserts that nothing is left."""
    ctx = make_ctx(tmp, f"t-podman-{driver}-{uuid.uuid4().hex[:4]}")
    shm_before = set(os.listdir("/dev/shm"))
    host_before = {d for d in HOST_DIRS if d.exists()}
    spooled_before = set(Path("/var/tmp").glob("api_load.tar*"))
    with loop_fs(tmp, fs, mkfs) as mount:
        with ENGINES["podman"].start(mount, EngineSpec(kind="podman", driver=driver), ctx) as engine:
            assert engine.kind == "podman" and engine.daemon.info["Driver"] == driver
            yield Stack(ctx, mount, engine)
        assert_nothing_left(engine.daemon, mount, ctx)
    assert set(os.listdir("/dev/shm")) <= shm_before, "a lock segment outlived the service"
    assert {d for d in HOST_DIRS if d.exists()} <= host_before, "runc's state dir or the blob cache outlived it"
    assert set(Path("/var/tmp").glob("api_load.tar*")) <= spooled_before, "an image import's spool file outlived it"


def assert_nothing_left(daemon: ApiDaemon, mount: Mount, ctx: BuildContext) -> None:
    assert mount.mountpoint is not None
    assert not alive(daemon.pid), "the podman service still runs"
    assert processes_naming(daemon.exec_root, daemon.data_root) == []  # conmon, exit commands
    assert mounts_below(mount.mountpoint) == [str(mount.mountpoint)]
    assert not daemon.exec_root.exists() and not daemon.data_root.exists()
    assert ctx.ledger.live() == []


@pytest.fixture(scope="module")
def overlay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with podman_stack(tmp_path_factory.mktemp("podman"), "ext4", EXT4, "overlay") as s:
        yield s


# --- every placement, limits, the volatile trap ----------------------------------------------------


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.requires_root
@pytest.mark.requires_podman
@pytest.mark.requires_fio
def test_each_placement_runs_fio_and_is_not_volatile(overlay: Stack, placement: str) -> None:
    spec = stack_spec("overlay", placement)
    with overlay.engine.place(overlay.mount, spec, DATA_BYTES, overlay.ctx) as t:
        assert t.engine == "podman" and t.path == "/data" and t.info["driver"] == "overlay"
        assert run_fio(t) > 0
        check = volatile_check(t.path, t.info["pid"])
        assert check.status == "pass", check.detail
        held = mountinfo.holding(mountinfo.parse(mountinfo.read(t.info["pid"])), t.path)[0]
        expected = {"writable-layer": "overlay", "volume": "ext4", "bind": "ext4", "tmpfs": "tmpfs"}[placement]
        assert held.fs_type == expected


@pytest.mark.requires_root
@pytest.mark.requires_podman
@pytest.mark.requires_fio
def test_limits_are_read_back_from_the_containers_cgroup(overlay: Stack) -> None:
    limits = Limits(cpus=1.0, memory=256 * 2**20, read_bps=50 * 2**20)
    spec = stack_spec("overlay", "volume", limits)
    with overlay.engine.place(overlay.mount, spec, DATA_BYTES, overlay.ctx) as t:
        asked = limits.model_dump(mode="json", exclude_none=True)
        assert mismatches(asked, t.info["limits_enforced"]) == []
        cgroup_dirs = t.info["cgroup"].values()
        assert cgroup_dirs and all(f"/layerbench/{overlay.daemon.exec_root.name}/" in d for d in cgroup_dirs)
        limits_file = Path(f"/proc/{t.info['pid']}/limits").read_text()
        assert re.search(r"Max open files\s+20000\s+20000", limits_file)  # Podman 4.3 needs it here
        assert re.search(r"Max processes\s+4096\s+4096", limits_file)


@pytest.mark.requires_root
@pytest.mark.requires_podman
def test_an_auto_removed_container_is_flagged_volatile(overlay: Stack) -> None:
    """The trap, made on purpose: Podman mounts an --rm container's overlay with fsync=volatile."""
    client = overlay.daemon.client
    image = overlay.engine.image(resolve(["sleep"]), overlay.ctx)
    with ExitStack() as undo:
        container = client.containers.run(
            image,
            ["sleep", "infinity"],
            detach=True,
            auto_remove=True,
            network_mode="none",
            cgroup_parent=overlay.daemon.cgroup_parent,
        )
        undo.callback(_remove, container)
        container.reload()
        pid = int(container.attrs["State"]["Pid"])
        check = volatile_check("/data", pid)
        assert check.status == "flag" and "overlay on /" in check.detail, check.detail
        assert mountinfo.parse(mountinfo.read(pid))[0].volatile


def _remove(container: Container) -> None:
    with contextlib.suppress(NotFound):  # auto-removed already
        container.remove(force=True)


@pytest.mark.parametrize(("driver", "fs", "mkfs"), [("vfs", "ext4", EXT4), ("btrfs", "btrfs", BTRFS)])
@pytest.mark.requires_root
@pytest.mark.requires_podman
@pytest.mark.requires_fio
def test_other_drivers_writable_layer(tmp_path: Path, driver: str, fs: str, mkfs: list[str]) -> None:
    with (
        podman_stack(tmp_path, fs, mkfs, driver) as s,
        s.engine.container(
            s.engine.image(resolve(["fio", "sleep"]), s.ctx),
            s.mount,
            PlacementSpec(kind="writable-layer"),
            Limits(),
            DATA_BYTES,
            s.ctx,
        ) as t,
    ):
        assert t.info["driver"] == driver
        run_fio(t)
