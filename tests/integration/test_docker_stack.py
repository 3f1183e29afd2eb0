"""The engine and placement layers for real: a private dockerd per storage driver on a
loop-mounted filesystem made here, the host-binary image, each placement running fio
(libaio, O_DIRECT), and after teardown nothing left: no daemon, containerd, shim,
mount, directory or live ledger row.

The loop devices and mounts are this file's own fixtures (plain subprocess), so
these tests do not depend on layerbench's device and filesystem layers.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from layerbench import proc
from layerbench.errors import PrerequisiteError, ToolError
from layerbench.spec.models import Limits, PlacementSpec
from layerbench.stack.cgroups import mismatches
from layerbench.stack.dockerd import API_ERRORS, ApiDaemon, log_tail, mentions, mounts_below, private_dockerd
from layerbench.stack.image import LABEL_PREFIX, binary_digests, ensure_image
from layerbench.stack.ledger import Ledger
from layerbench.stack.placement import container_placement, native_placement
from layerbench.stack.target import BuildContext, Device, Mount, Target
from tests.unavoidable_skips import cannot

MiB = 2**20
FS_BYTES = 512 * MiB  # mkfs.xfs wants 300 MB at least
DATA_BYTES = 32 * MiB
BINARIES = ["fio", "sleep"]
PLACEMENTS = ["writable-layer", "volume", "bind", "tmpfs"]
DOCKER = [pytest.mark.requires_root, pytest.mark.requires_docker, pytest.mark.requires_fio]


# --- pure helpers (no root needed) ---------------------------------------------------


def test_mentions_matches_our_roots_only() -> None:
    roots = [Path("/run/layerbench/ab12cd34"), Path("/mnt/x/docker")]
    assert mentions(["containerd", "--config", "/run/layerbench/ab12cd34/containerd/containerd.toml"], roots)
    assert mentions(["dockerd", "--data-root=/mnt/x/docker"], roots)
    assert mentions(["shim", "-address", "/run/layerbench/ab12cd34/containerd/containerd.sock"], roots)
    assert not mentions(["dockerd", "--data-root=/mnt/x/docker-other"], roots)
    assert not mentions(["containerd", "--config", "/run/layerbench/ab12cd345/containerd.toml"], roots)
    assert not mentions(["fio", "--filename=/mnt/x/lb-data/f"], roots)


def test_mounts_below_decodes_escapes_and_respects_boundaries() -> None:
    text = (
        "/dev/loop3 /tmp/a\\040b xfs rw 0 0\n"
        "overlay /tmp/a\\040b/docker/overlay2/1/merged overlay rw 0 0\n"
        "/dev/loop4 /tmp/a\\040bc xfs rw 0 0\n"
    )
    assert mounts_below(Path("/tmp/a b"), text) == ["/tmp/a b", "/tmp/a b/docker/overlay2/1/merged"]


def test_log_tail_prefers_the_daemon_errors() -> None:
    log = (
        'time="t" level=info msg="Starting up"\n'
        'time="t" level=error msg="[graphdriver] prior storage driver overlay2 failed: driver not supported"\n'
        'time="t" level=info msg="stopping event stream"\n'
        "failed to start daemon: error initializing graphdriver: driver not supported\n"
    )
    tail = log_tail(log)
    assert tail.startswith("[graphdriver] prior storage driver overlay2 failed")
    assert tail.endswith("failed to start daemon: error initializing graphdriver: driver not supported")
    assert "Starting up" not in tail


# --- fixtures: our own loop device and filesystem ------------------------------------


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=120).stdout


@contextmanager
def loop_fs(tmp: Path, fs: str, mkfs: list[str]) -> Iterator[Mount]:
    """A sparse file on a loop device (direct I/O), formatted and mounted; all undone after."""
    image = tmp / f"{fs}.img"
    with image.open("wb") as f:
        f.truncate(FS_BYTES)
    dev = sh("losetup", "--find", "--show", "--direct-io=on", str(image)).strip()
    mnt = tmp / f"mnt-{fs}"
    mnt.mkdir(exist_ok=True)
    mounted = False
    try:
        sh(*mkfs, dev)
        sh("mount", dev, str(mnt))
        mounted = True
        yield Mount(Device(dev, "loop", FS_BYTES), fs, mnt)
    finally:
        if mounted and subprocess.run(["umount", str(mnt)], check=False, timeout=60).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], check=False, timeout=60)
        subprocess.run(["losetup", "-d", dev], check=False, timeout=60)
        image.unlink(missing_ok=True)


def make_ctx(tmp: Path, run_id: str) -> BuildContext:
    work = tmp / "work"
    work.mkdir(mode=0o700, exist_ok=True)
    return BuildContext(
        work_dir=work, ledger=Ledger(tmp / "state" / "ledger.db", run_id), run_id=run_id, runner=proc.run
    )


@dataclass
class Stack:
    ctx: BuildContext
    mount: Mount
    engine: ApiDaemon
    image: str


@contextmanager
def docker_stack(tmp: Path, fs: str, mkfs: list[str], driver: str) -> Iterator[Stack]:
    """fs → private dockerd(driver) → image; on the way out asserts that nothing is left."""
    ctx = make_ctx(tmp, f"t-{driver}")
    with loop_fs(tmp, fs, mkfs) as mount:
        with private_dockerd(mount, driver, ctx) as engine:
            assert engine.info["Driver"] == driver
            assert Path(engine.info["DockerRootDir"]).parent == mount.mountpoint  # docker-<its exec root>
            yield Stack(ctx, mount, engine, ensure_image(engine, BINARIES, ctx))
        assert_nothing_left(engine, mount, ctx)


XFS = ["mkfs.xfs", "-f", "-q", "-n", "ftype=1"]
BTRFS = ["mkfs.btrfs", "-f", "-q"]


# --- what every placement must do -------------------------------------------------------


def fio_json(target: Target, *args: str, timeout: float = 60) -> dict:
    done = target.run(["fio", "--output-format=json", *args], timeout)
    assert done.rc == 0, done.stderr
    result = json.loads(done.stdout)
    assert all(job["error"] == 0 for job in result["jobs"])
    return result


def run_fio(target: Target) -> float:
    """fio --version, a fill, then 1 s of 4k random reads with libaio and O_DIRECT: the read IOPS."""
    version = target.run(["fio", "--version"], 30)
    assert version.rc == 0 and version.stdout.strip() == sh("fio", "--version").strip()
    path = f"{target.path}/lb.dat"
    common = [f"--filename={path}", f"--size={DATA_BYTES}", "--direct=1", "--ioengine=libaio"]
    fio_json(target, "--name=fill", "--rw=write", "--bs=1M", "--iodepth=4", *common)
    result = fio_json(
        target, "--name=rr", "--rw=randread", "--bs=4k", "--iodepth=8", "--time_based", "--runtime=1", *common
    )
    read = result["jobs"][0]["read"]
    assert read["iops"] > 0 and read["io_bytes"] > 0
    return float(read["iops"])


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def processes_naming(*roots: Path) -> list[str]:
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(str(r) in cmd for r in roots) and int(entry.name) != os.getpid():
            found.append(f"{entry.name}: {cmd[:100]}")
    return found


def assert_nothing_left(engine: ApiDaemon, mount: Mount, ctx: BuildContext, live_ok: tuple[str, ...] = ()) -> None:
    assert mount.mountpoint is not None
    assert not alive(engine.pid), "dockerd still runs"
    containerd = engine.info.get("containerd_pid")
    assert containerd and not alive(containerd), "its containerd still runs"
    assert processes_naming(engine.exec_root, engine.data_root) == []  # containerd, shims, fuse-overlayfs
    assert mounts_below(mount.mountpoint) == [str(mount.mountpoint)]
    assert mounts_below(engine.exec_root) == []
    assert not engine.exec_root.exists() and not engine.data_root.exists()
    assert [r.kind for r in ctx.ledger.live()] == list(live_ok)


# --- overlay2 on xfs: one daemon, every placement ---------------------------------------


@pytest.fixture(scope="module")
def overlay2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with docker_stack(tmp_path_factory.mktemp("overlay2"), "xfs", XFS, "overlay2") as stack:
        yield stack


@pytest.mark.parametrize("kind", PLACEMENTS)
@pytest.mark.requires_root
@pytest.mark.requires_docker
@pytest.mark.requires_fio
def test_overlay2_placement_runs_fio_where_it_says(overlay2: Stack, kind: str) -> None:
    s = overlay2
    assert s.mount.mountpoint is not None
    with container_placement(s.engine, s.image, s.mount, PlacementSpec(kind=kind), Limits(), DATA_BYTES, s.ctx) as t:
        assert t.engine == "docker" and t.path == "/data" and not t.path_is_device
        assert t.info["placement"] == kind and t.info["driver"] == "overlay2"
        assert t.info["fio_sha256"] == binary_digests(["fio"])["fio"]  # the host's own fio
        run_fio(t)
        found = (str(p.relative_to(s.mount.mountpoint)) for p in s.mount.mountpoint.rglob("lb.dat"))
        on_fs = sorted(f for f in found if "/merged/" not in f)  # the container's mounted view, not a copy
        expected = {
            "writable-layer": r"docker-[0-9a-f]{8}/overlay2/[0-9a-f]{64}/diff/data/lb.dat",
            "volume": r"docker-[0-9a-f]{8}/volumes/lb-[0-9a-f]{8}/_data/lb.dat",
            "bind": r"lb-bind-[0-9a-f]{8}/lb.dat",
        }
        if kind == "tmpfs":
            assert on_fs == []  # in memory: nothing on the filesystem under test
        else:
            assert len(on_fs) == 1 and re.fullmatch(expected[kind], on_fs[0]), on_fs
    assert s.engine.client.containers.list(all=True) == []
    assert s.engine.client.volumes.list() == []
    assert list(s.mount.mountpoint.glob("lb-bind-*")) == []


@pytest.mark.requires_root
@pytest.mark.requires_docker
@pytest.mark.requires_fio
def test_image_is_content_addressed(overlay2: Stack) -> None:
    created = overlay2.engine.client.images.get(overlay2.image).attrs["Created"]
    assert ensure_image(overlay2.engine, BINARIES, overlay2.ctx) == overlay2.image
    assert overlay2.engine.client.images.get(overlay2.image).attrs["Created"] == created  # no second import
    labels = overlay2.engine.client.images.get(overlay2.image).labels
    assert labels[f"{LABEL_PREFIX}fio"] == binary_digests(["fio"])["fio"]


@pytest.mark.requires_root
@pytest.mark.requires_docker
@pytest.mark.requires_fio
def test_exec_timeout_kills_the_process(overlay2: Stack) -> None:
    s = overlay2
    spec = PlacementSpec(kind="writable-layer")
    with container_placement(s.engine, s.image, s.mount, spec, Limits(), DATA_BYTES, s.ctx) as t:
        with pytest.raises(ToolError) as caught:
            t.run(["sleep", "30"], 1.0)
        assert caught.value.rc is None  # ended by the timeout; the sleep is gone, below
        top = s.engine.client.api.top(t.info["container"])
        assert [p for p in top["Processes"] if "sleep 30" in " ".join(p)] == []
        assert t.run(["sleep", "0"], 10).rc == 0  # the container still serves


@pytest.mark.requires_root
@pytest.mark.requires_docker
@pytest.mark.requires_fio
def test_limits_reach_the_cgroup(overlay2: Stack) -> None:
    s = overlay2
    limits = Limits(cpuset="0", cpus=1.5, memory="256MiB", read_bps="200MiB", write_bps="200MiB")
    spec = PlacementSpec(kind="volume")
    with container_placement(s.engine, s.image, s.mount, spec, limits, DATA_BYTES, s.ctx) as t:
        host = s.engine.client.api.inspect_container(t.info["container"])["HostConfig"]
        assert host["CpusetCpus"] == "0" and host["NanoCpus"] == 1_500_000_000
        assert host["Memory"] == 256 * MiB
        assert host["BlkioDeviceReadBps"] == [{"Path": s.mount.device.path, "Rate": 200 * MiB}]
        assert mismatches(t.info["limits"], t.info["limits_enforced"]) == []
        run_fio(t)


@pytest.mark.requires_root
@pytest.mark.requires_fio
def test_native_placements(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "t-native")
    with loop_fs(tmp_path, "xfs", XFS) as mount:
        assert mount.mountpoint is not None
        with native_placement(mount, PlacementSpec(kind="host-dir"), ctx) as t:
            assert Path(t.path).parent == mount.mountpoint and t.engine == "native"
            assert Path(t.path).name.startswith("lb-data-")  # its own: held stacks may share the filesystem
            run_fio(t)
        assert not Path(t.path).exists()
        with native_placement(mount, PlacementSpec(kind="raw"), ctx) as t:
            assert t.path == mount.device.path and t.path_is_device
            assert t.run(["fio", "--version"], 30).rc == 0
    assert ctx.ledger.live() == []


# --- the other drivers --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("driver", "fs", "mkfs"),
    [("vfs", "xfs", XFS), ("fuse-overlayfs", "xfs", XFS), ("btrfs", "btrfs", BTRFS)],
)
@pytest.mark.requires_root
@pytest.mark.requires_docker
@pytest.mark.requires_fio
def test_other_drivers_writable_layer(tmp_path: Path, driver: str, fs: str, mkfs: list[str]) -> None:
    with docker_stack(tmp_path, fs, mkfs, driver) as s:
        spec = PlacementSpec(kind="writable-layer")
        with container_placement(s.engine, s.image, s.mount, spec, Limits(), DATA_BYTES, s.ctx) as t:
            assert t.info["driver"] == driver
            run_fio(t)


# --- refusals and failures ------------------------------------------------------------------


def _rows(ctx: BuildContext) -> list[tuple[str, str, str]]:
    db = sqlite3.connect(ctx.ledger.path)
    try:
        return db.execute("SELECT kind, ident, detail FROM resources").fetchall()
    finally:
        db.close()


@pytest.mark.requires_root
@pytest.mark.requires_docker
def test_driver_refused_by_the_filesystem_is_a_prerequisite_error(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "t-refused")
    with loop_fs(tmp_path, "xfs", XFS) as mount:
        with pytest.raises(PrerequisiteError) as caught, private_dockerd(mount, "btrfs", ctx):
            pytest.fail("dockerd accepted the btrfs driver on xfs")
        assert "btrfs" in str(caught.value) and "exited" in str(caught.value)
        assert "(no log)" not in str(caught.value)
        [(kind, exec_root, detail)] = _rows(ctx)
        assert kind == "dockerd" and not Path(exec_root).exists()
        assert not alive(json.loads(detail)["pid"])
        assert processes_naming(Path(exec_root), mount.mountpoint / f"docker-{Path(exec_root).name}") == []
        assert mounts_below(mount.mountpoint) == [str(mount.mountpoint)]
    assert ctx.ledger.live() == []


@pytest.mark.requires_root
@pytest.mark.requires_docker
def test_overlay2_on_xfs_without_ftype_is_refused(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "t-ftype0")
    try:
        stack = loop_fs(tmp_path, "xfs", ["mkfs.xfs", "-f", "-q", "-m", "crc=0", "-n", "ftype=0"])
        mount = stack.__enter__()
    except subprocess.CalledProcessError as exc:
        if exc.cmd[0] == "mount":
            cannot("xfs-v4", "xfs ftype=0 exists only in the deprecated v4 format, which this kernel cannot mount")
        pytest.skip(f"xfs ftype=0 exists only in the deprecated v4 format, and mkfs.xfs refuses it: {exc.stderr}")
    try:
        with pytest.raises(PrerequisiteError, match=r"d_type|ftype"), private_dockerd(mount, "overlay2", ctx):
            pytest.fail("dockerd accepted overlay2 on xfs without d_type")
    finally:
        stack.__exit__(None, None, None)
    assert ctx.ledger.live() == []


@pytest.mark.requires_root
@pytest.mark.requires_docker
@pytest.mark.requires_fio
def test_killed_daemon_is_still_swept(tmp_path: Path) -> None:
    """SIGKILL leaves containerd, a shim, the container's process and its mounts: teardown finds them all."""
    ctx = make_ctx(tmp_path, "t-killed")
    spec = PlacementSpec(kind="writable-layer")
    with loop_fs(tmp_path, "xfs", XFS) as mount:
        # The container cannot be removed through a dead daemon: that error surfaces.
        with pytest.raises(API_ERRORS), private_dockerd(mount, "overlay2", ctx) as engine:
            image = ensure_image(engine, ["sleep"], ctx)
            with container_placement(engine, image, mount, spec, Limits(), DATA_BYTES, ctx) as t:
                os.kill(engine.pid, signal.SIGKILL)
                engine.process.wait(10)  # type: ignore[union-attr]
                with pytest.raises(ToolError) as caught:
                    t.run(["sleep", "0"], 10)
                assert caught.value.rc == 125
                assert processes_naming(engine.exec_root), "expected containerd and a shim to outlive dockerd"
        assert_nothing_left(engine, mount, ctx, live_ok=("container",))
