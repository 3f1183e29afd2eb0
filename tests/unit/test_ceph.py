"""The RBD transport without a cluster: its spec and refusals, the `ceph` adapter's parsing of outputs captured
from a real cluster here (tests/data/ceph/16.2.15/, three OSDs, then one killed), its argument lists and
ceph.conf."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from layerbench.spec.feasibility import HostCaps
from layerbench.spec.models import DeviceSpec, FioWorkload, RemoteSpec, StackSpec
from layerbench.spec.rules import why_not
from layerbench.stack.remote.ceph import cli, daemons, faults
from layerbench.stack.remote.ceph.clients import container_conf
from layerbench.stack.remote.ceph.cluster import setup_argvs
from layerbench.stack.remote.ceph.conf import OSD_MEMORY_TARGET, Paths, conf_text
from layerbench.workloads import fio

DATA = Path(__file__).parent.parent / "data" / "ceph" / "16.2.15"
HAS_ALL = {f: None for f in ("storage-host", "rbd", "rbd-fio", "rbd-fuse", "rbd-kernel", "tbf", "netem")}


def _stack(remote: dict, fs: str = "none", engine: str = "native", placement: str = "raw") -> StackSpec:
    device = {"kind": "loop", "size": "2GiB", "remote": remote}
    return StackSpec.model_validate({"device": device, "filesystem": fs, "engine": engine, "placement": placement})


def test_a_healthy_clusters_status_is_clean() -> None:
    status = cli.parse_status((DATA / "status-healthy.json").read_text())
    assert status.clean()
    assert (status.health, status.osds, status.osds_up, status.pgs) == ("HEALTH_OK", 3, 3, 33)
    assert status.pg_states == {"active+clean": 33}


def test_a_cluster_with_an_osd_down_is_refused_in_ceph_s_own_words() -> None:
    status = cli.parse_status((DATA / "status-osd-down.json").read_text())
    assert not status.clean()
    assert status.checks["OSD_DOWN"] == "1 osds down"
    said = status.said()
    assert said.startswith("HEALTH_WARN") and "OSD_DOWN: 1 osds down" in said
    assert "2/4 OSDs up" in said and "stale+active+clean" in said


def test_clean_needs_every_pg_active_and_clean_and_every_osd_up() -> None:
    healthy = cli.parse_status((DATA / "status-healthy.json").read_text())
    assert not replace(healthy, pg_states={"active+clean": 32, "peering": 1}).clean()
    assert not replace(healthy, osds_in=2).clean()
    assert not replace(healthy, pgs=0, pg_states={}).clean()


def test_the_settings_read_back_from_the_cluster() -> None:
    assert cli.parse_osd_id((DATA / "osd-new.json").read_text()) == 3
    assert cli.parse_osd_id("7\n") == 7
    pool = cli.parse_pool("lb", (DATA / "osd-pool-get-all.json").read_text())
    assert (pool.size, pool.min_size, pool.pg_num) == (3, 2, 32)
    osds = cli.parse_osd_metadata((DATA / "osd-metadata.json").read_text())
    assert sorted(osds) == [0, 1, 2]
    # The trap the issue measured: a virtual disk that calls itself rotational gets hard-disk settings.
    assert {o["default_device_class"] for o in osds.values()} == {"hdd"}
    assert cli.up_osds((DATA / "osd-dump.json").read_text()) == {0, 1, 2}


def test_every_ceph_command_has_its_conf_a_deadline_and_json() -> None:
    argv = cli.ceph_argv(Path("/w/ceph.conf"), "status")
    assert argv[:3] == ["ceph", "--conf", "/w/ceph.conf"] and argv[-1] == "status"
    assert f"--connect-timeout={cli.CONNECT_TIMEOUT_S}" in argv and "--format=json" in argv
    assert cli.CONNECT_TIMEOUT_S < cli.DEADLINE_S < 300  # a command with no keyring waits 300 s otherwise


def test_the_conf_puts_everything_under_the_runs_directory_with_small_targets() -> None:
    paths = Paths(Path("/w/ceph-1"))
    text = conf_text("fsid-1", "10.213.0.1", paths)
    glob = text.split("[mon]")[0]
    assert "mon host = [v2:10.213.0.1:3300]" in glob
    assert "mgr initial modules =" in glob  # read only under [global]
    assert OSD_MEMORY_TARGET >= 896 * 2**20 and f"osd memory target = {OSD_MEMORY_TARGET}" in text
    assert "mon allow pool size one = true" in text
    assert "rbd cache = false" in text.split("[client]")[1].split("[mon]")[0]
    assert "osd pool default size = 3" in glob  # Ceph's own, with three OSDs or more
    assert "osd pool default size = 1" in conf_text("fsid-1", "10.213.0.1", paths, osds=1)  # never TOO_FEW_OSDS
    paths_in = [
        line.split(" = ", 1)[1]
        for line in text.splitlines()
        if line.split(" = ")[0] in ("mon data", "run dir", "log file")
    ]
    assert paths_in and all(p.startswith("/w/ceph-1/") for p in paths_in)


def test_daemons_run_in_the_foreground_and_osds_each_on_a_host_of_their_own() -> None:
    conf = Path("/w/ceph.conf")
    assert daemons.mon_argv(conf, "a")[:2] == ["ceph-mon", "-f"]
    osd = daemons.osd_argv(conf, 2, "10.213.4.2", "lb-st-1")
    assert osd[:2] == ["ceph-osd", "-f"] and "--public-addr=10.213.4.2" in osd
    assert "--crush-location=root=default host=lb-st-1" in osd
    setup = setup_argvs(Paths(Path("/w/c")), "fsid-1", "10.213.0.1")
    assert setup[-1][:2] == ["ceph-mon", "--conf"] and "--mkfs" in setup[-1]
    assert setup[3][:5] == ["monmaptool", "--create", "--addv", "a", "[v2:10.213.0.1:3300]"]


def test_the_cluster_spec_names_the_field_and_its_bounds() -> None:
    remote = RemoteSpec(transport="rbd", client="fio")
    assert remote.cluster is None and remote.cluster_built() is not None
    assert remote.label() == "rbd-fio(3osd,size3/2)"
    assert RemoteSpec(transport="rbd", cluster={"osds": 2, "size": 1}).label() == "rbd(2osd,size1/1)"
    with pytest.raises(ValidationError, match=r"cluster.size 3 is more than cluster.osds 2"):
        RemoteSpec(transport="rbd", cluster={"osds": 2, "size": 3})
    with pytest.raises(ValidationError, match=r"cluster.min_size 3 is more than cluster.size 2"):
        RemoteSpec(transport="rbd", cluster={"size": 2, "min_size": 3})
    with pytest.raises(ValidationError, match=r"device.remote.cluster is for transport 'rbd'; nbd exports one"):
        RemoteSpec(transport="nbd", cluster={})
    with pytest.raises(ValidationError, match=r"cluster.replicas"):
        RemoteSpec(transport="rbd", cluster={"replicas": 3})


def test_a_cluster_the_user_runs_is_told_by_its_conf_and_needs_no_storage_host() -> None:
    remote = RemoteSpec(transport="rbd", client="fio", cluster={"conf": "/etc/ceph/ceph.conf", "pool": "rbd"})
    assert remote.cluster_built() is None and remote.own_cluster() is not None
    assert remote.label() == "rbd-fio(own:rbd)"
    assert remote.host_needs() == ["rbd-own", "rbd-fio"]  # the ceph and rbd tools and fio's engine: no daemon here
    assert RemoteSpec(transport="rbd", client="fio").host_needs()[:2] == ["storage-host", "rbd"]
    assert remote.model_dump()["cluster"] == {"conf": "/etc/ceph/ceph.conf", "pool": "rbd", "user": "admin"}
    with pytest.raises(ValidationError, match=r"cluster.osds\n  Extra inputs"):  # a built cluster's field on the user's
        RemoteSpec(transport="rbd", cluster={"conf": "/c", "pool": "rbd", "osds": 3})
    with pytest.raises(ValidationError, match=r"cluster.pool\n  String should match pattern"):
        RemoteSpec(transport="rbd", cluster={"conf": "/c", "pool": "rbd; rm -rf /"})


def test_a_transport_without_a_cluster_dumps_as_before() -> None:
    assert "cluster" not in DeviceSpec(kind="zram", remote={"transport": "nbd"}).model_dump()["remote"]
    assert DeviceSpec(kind="zram", remote={"transport": "rbd", "cluster": {"size": 1}}).model_dump()["remote"][
        "cluster"
    ] == {"osds": 3, "size": 1, "min_size": None}


def test_fio_reaches_an_image_with_its_rbd_engine_and_the_clusters_conf() -> None:
    uri = "rbd://lb/lb-img?conf=/w/ceph-1/ceph.conf&user=admin"
    args = fio.argv(FioWorkload(name="w", rw="randwrite"), uri, True)
    assert args[:3] == ["env", "CEPH_CONF=/w/ceph-1/ceph.conf", "fio"]
    assert args[-4:] == ["--ioengine=rbd", "--clientname=admin", "--pool=lb", "--rbdname=lb-img"]
    assert not [a for a in args if a.startswith("--filename=")]


def test_krbd_is_refused_where_the_kernel_has_no_rbd_module(full_caps: HostCaps) -> None:
    lacks = "this kernel has no rbd (not loaded, and modprobe finds no such module)"
    caps = replace(full_caps, remote={**HAS_ALL, "rbd-kernel": lacks})
    assert "this kernel has no rbd" in why_not(_stack({"transport": "rbd"}), caps)
    assert why_not(_stack({"transport": "rbd", "client": "fio"}), caps) is None
    assert why_not(_stack({"transport": "rbd", "client": "fuse"}, "ext4", "native", "host-dir"), caps) is None
    docker = _stack({"transport": "rbd", "client": "fio"}, "ext4", "docker:overlay2", "volume")
    assert "filesystem none, placement raw only" in why_not(docker, caps)
    assert "ceph-osd not installed" in why_not(
        _stack({"transport": "rbd", "client": "fio"}),
        replace(caps, remote={**HAS_ALL, "rbd": "ceph-osd not installed"}),
    )


def test_a_device_the_user_named_is_never_given_to_more_than_one_osd() -> None:
    with pytest.raises(ValidationError, match=r"names one device, and device.remote.cluster.osds 3 needs one per OSD"):
        DeviceSpec(kind="block", path="/dev/vdb", remote={"transport": "rbd"})
    assert DeviceSpec(kind="block", path="/dev/vdb", remote={"transport": "rbd", "cluster": {"osds": 1, "size": 1}})


@pytest.mark.skipif(shutil.which("ceph-conf") is None, reason="needs ceph-conf (ceph-common: make test installs it)")
def test_a_containers_client_reads_the_runs_conf_without_this_hosts_log_and_socket(tmp_path: Path) -> None:
    """Ceph's own parser reads the conf a container's fio is given: the cluster's, keyring and all, but no log
    file or admin socket in directories the container does not have."""
    paths = Paths(tmp_path)
    text = conf_text("fsid-1", "10.0.0.1", paths)
    theirs = text + "\n[client.bench]\nkeyring = /etc/ceph/bench.keyring\nlog file = /w/client.log\n"
    for user, conf, keyring in (("admin", text, paths.admin_keyring), ("bench", theirs, "/etc/ceph/bench.keyring")):
        path = tmp_path / f"{user}.conf"
        path.write_text(container_conf(conf, user))
        asked = {
            key: subprocess.run(
                ["ceph-conf", "-c", str(path), "--name", f"client.{user}", "--lookup", key],
                capture_output=True, text=True, timeout=30, check=False,
            ).stdout.strip()
            for key in ("log_file", "admin_socket", "keyring", "rbd_cache", "mon_host")
        }  # fmt: skip
        assert asked == {
            "log_file": "", "admin_socket": "", "keyring": str(keyring), "rbd_cache": "false",
            "mon_host": "[v2:10.0.0.1:3300]",
        }, (user, asked)  # fmt: skip


def test_a_fault_on_a_cluster_the_user_runs_needs_the_flag_naming_its_fsid(tmp_path: Path) -> None:
    conf = tmp_path / "ceph.conf"
    conf.write_text(
        "[global]\n# fsid = not-this\nfsid = 1234-abcd  ; theirs\nmon host = 10.0.0.1\n[client]\nfsid = x\n"
    )
    assert faults.conf_fsid(str(conf)) == "1234-abcd"
    degraded = RemoteSpec.model_validate(
        {"transport": "rbd", "client": "fio", "cluster": {"conf": str(conf), "pool": "p", "state": "degraded"}}
    )
    assert "allow it with --allow-faults-on FSID" in str(faults.unallowed(degraded, ()))
    other = faults.unallowed(degraded, ("9999",))
    assert other == (
        f"cluster.state degraded on the cluster at {conf}: --allow-faults-on names 9999, not this cluster "
        "(fsid 1234-abcd in its conf)"
    )
    assert faults.unallowed(degraded, ("9999", "1234-abcd")) is None
    conf.write_text("[global]\nmon host = 10.0.0.1\n")  # no fsid: the monitors' answer decides, at the build
    assert faults.conf_fsid(str(conf)) is None and faults.unallowed(degraded, ("9999",)) is None
    healthy = RemoteSpec.model_validate({"transport": "rbd", "cluster": {"conf": str(conf), "pool": "p"}})
    assert faults.unallowed(healthy, ()) is None
