"""A Ceph cluster's state as an axis, without a cluster: the spec's refusals, what a trial records and shows, the
checks on it (on `ceph` outputs captured from a real cluster here, tests/data/ceph/16.2.15/), and fio's verify:
its command lines, its read-back on a real file, and what fio says of a bad block."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from layerbench import proc
from layerbench.proc import Completed
from layerbench.records.info import ClusterInfo, TrialInfo
from layerbench.records.trial import TrialRecord
from layerbench.run.schedule import Trial
from layerbench.run.states import read_back
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.models import Cell, DeviceSpec, FioWorkload, StackSpec
from layerbench.spec.rules import why_not
from layerbench.spec.transports.rbd import ClusterSpec
from layerbench.stack.remote.ceph import cli
from layerbench.stack.remote.ceph.state import degraded, hdd_check, series, state_check
from layerbench.stack.target import Device, Target
from layerbench.workloads import fio

DATA = Path(__file__).parent.parent / "data"
CEPH = DATA / "ceph" / "16.2.15"
VERIFY = DATA / "fio" / "verify"


def _cluster(**given: object) -> ClusterSpec:
    return ClusterSpec.model_validate(given)


def test_a_state_names_the_field_and_its_allowed_values() -> None:
    with pytest.raises(ValidationError) as err:
        DeviceSpec.model_validate({"kind": "loop", "remote": {"transport": "rbd", "cluster": {"state": "broken"}}})
    said = str(err.value)
    assert "cluster.state" in said and "'healthy', 'degraded' or 'recovering'" in said


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"osds": 1, "size": 1}, "needs cluster.size >= 2 and cluster.osds >= 2"),
        ({"osds": 3, "size": 1}, "needs cluster.size >= 2"),
        ({"osds": 2, "size": 2, "min_size": 2}, "needs cluster.min_size < size"),
    ],
)
def test_a_state_other_than_healthy_is_refused_where_one_osd_down_stops_the_pool(given: dict, said: str) -> None:
    for state in ("degraded", "recovering"):
        with pytest.raises(ValidationError, match=said):
            _cluster(**given, state=state)
    assert _cluster(**given).state == "healthy"  # the same cluster, healthy, is fine


def test_the_state_and_recovery_settings_label_the_cell_and_a_healthy_one_dumps_as_before() -> None:
    spec = _cluster(state="recovering", recovery={"osd_recovery_sleep": 0, "osd_max_backfills": 2})
    assert spec.label() == "3osd,size3/2,recovering,recovery(sleep=0,backfills=2)"
    assert spec.model_dump()["state"] == "recovering"
    assert _cluster().label() == "3osd,size3/2" and "state" not in _cluster().model_dump()
    with pytest.raises(ValidationError, match="osd_recovery_slep"):
        _cluster(recovery={"osd_recovery_slep": 0})


def test_the_status_of_a_degraded_cluster_counts_its_pgs_and_objects() -> None:
    degraded = cli.parse_status((CEPH / "status-degraded.json").read_text())
    assert degraded.osds_up == 2 and degraded.osds == 3
    assert degraded.count("degraded") > 0 and degraded.active() and degraded.recovering()
    assert degraded.degraded_objects > 0 and degraded.degraded_total >= degraded.degraded_objects
    healthy = cli.parse_status((CEPH / "status-healthy.json").read_text())
    assert healthy.count("degraded") == 0 and healthy.active() and not healthy.recovering()


def test_the_status_of_a_recovering_cluster_shows_recovery_with_every_osd_up() -> None:
    status = cli.parse_status((CEPH / "status-recovering.json").read_text())
    assert status.osds_up == status.osds == 3
    assert status.recovering() and status.degraded_objects == 65
    assert state_check("recovering", status, status).status == "pass"
    later = cli.parse_status((CEPH / "status-recovering-later.json").read_text())
    assert later.count("recovery_wait") == 5 and later.recovering_bytes_per_sec == 14673147
    done = cli.parse_status((CEPH / "status-recovered.json").read_text())
    assert done.clean() and not done.recovering()


def test_the_state_check_flags_a_trial_whose_cluster_was_not_in_its_state() -> None:
    healthy = cli.parse_status((CEPH / "status-healthy.json").read_text())
    degraded = cli.parse_status((CEPH / "status-degraded.json").read_text())
    assert state_check("degraded", degraded, degraded).status == "pass"
    back = state_check("degraded", degraded, healthy)  # the OSD came back during the trial
    assert back.status == "flag" and "at the end: HEALTH_OK" in back.detail
    assert state_check("healthy", healthy, healthy).status == "pass"
    assert state_check("healthy", degraded, degraded).status == "flag"
    assert state_check("recovering", healthy, healthy).status == "flag"  # nothing left to recover


def test_the_settings_in_force_are_read_back_from_each_osd() -> None:
    """Ceph's defaults on a device it takes for a hard disk; and 2 s after a change, the manager's report of
    them unchanged yet: why cluster.py waits until each OSD reports the spec's settings."""
    config = cli.parse_config_show((CEPH / "config-show-with-defaults-osd.0.json").read_text())
    assert set(config) == set(cli.SETTINGS)
    assert float(config["osd_recovery_sleep_hdd"]) == pytest.approx(0.1) and float(config["osd_recovery_sleep"]) == 0
    assert (config["osd_max_backfills"], config["osd_recovery_max_active_hdd"]) == ("1", "3")
    assert int(config["osd_memory_target"]) == 896 * 2**20
    late = (CEPH / "config-show-with-defaults-osd.0-2s-after-set.json").read_text()
    assert cli.parse_config_show(late, ["osd_max_backfills", "osd_recovery_sleep_hybrid"]) == {
        "osd_max_backfills": "1",
        "osd_recovery_sleep_hybrid": "0.025000",
    }
    assert cli.parse_device_classes((CEPH / "osd-tree.json").read_text()) == {0: "hdd", 1: "hdd", 2: "hdd"}


def _found(sleep_hdd: str = "0.100000") -> dict[str, object]:
    osd = {"device_class": "hdd", "rotational": "1", "osd_recovery_sleep_hdd": sleep_hdd}
    return {"size": 3, "osds": {"osd.0": osd, "osd.1": osd}}


def test_the_hdd_check_names_the_trap_on_loop_devices_and_not_on_a_disk() -> None:
    flagged = hdd_check(_found(), {"loop"}, _cluster())
    assert flagged.status == "flag"
    assert "osd.0, osd.1 took device class hdd on loop devices (files)" in flagged.detail
    assert "0.100000 s between recovery operations" in flagged.detail
    assert hdd_check(_found(), {"block"}, _cluster()).status == "pass"  # a user's disk may be one
    given = hdd_check(_found("0.000000"), {"loop"}, _cluster(recovery={"osd_recovery_sleep": 0}))
    assert given.status == "pass" and "overrides" in given.detail


def test_a_trial_records_its_cluster_state_and_shows_a_short_note() -> None:
    start = cli.parse_status((CEPH / "status-degraded.json").read_text())
    info = ClusterInfo("degraded", "osd.2", start.to_json(), start.to_json(), {"size": 3})
    again = TrialInfo.from_json(json.loads(json.dumps(TrialInfo(cluster=info).to_json())))
    assert again.cluster == info
    degraded = start.count("degraded")
    assert info.note() == f"degraded: {degraded}/{start.pgs} PGs degraded, 2/3 OSDs up"


def test_verify_is_refused_where_fio_could_not_read_a_pass_back() -> None:
    ok = {"name": "V", "rw": "randwrite", "time_based": False, "verify": "crc32c"}
    assert FioWorkload.model_validate(ok).verify == "crc32c"
    for wrong, said in [
        ({"rw": "randread"}, "rw randread writes nothing"),
        ({"time_based": True}, "needs time_based: false"),
        ({"numjobs": 2}, "needs numjobs: 1"),
        ({"verify": "crc33"}, "'crc32c', 'md5' or 'sha256'"),
    ]:
        with pytest.raises(ValidationError, match=said):
            FioWorkload.model_validate({**ok, **wrong})
    assert "verify" not in FioWorkload(name="R").model_dump()  # other cells keep their ids


def test_the_read_back_asks_fio_to_verify_and_names_a_bad_block() -> None:
    w = FioWorkload(name="V", rw="randwrite", time_based=False, verify="crc32c")
    argv = fio.argv(w, "/dev/x", True)
    assert {"--verify=crc32c", "--do_verify=0", "--verify_state_save=0"} <= set(argv)
    back = fio.verify_only_argv(argv)
    assert back[-3:] == ["--verify_only", "--do_verify=1", "--verify_fatal=1"]  # the later option wins in fio
    said = fio.verify_error((VERIFY / "verify-bad.err").read_text())
    assert said is not None and said.startswith("verify: bad magic header 0") and "offset 1056768" in said
    assert fio.verified_bytes((VERIFY / "verify-ok.json").read_text()) == 16 * 2**20
    # --verify_only without --do_verify=1 read nothing and said success: what read_back never counts as a pass.
    assert fio.verified_bytes((VERIFY / "verify-nothing.json").read_text()) == 0


def _target(tmp_path: Path) -> Target:
    def run(argv: Sequence[str], timeout: float) -> Completed:
        return proc.run(list(argv), timeout=timeout)

    return Target(run, lambda n, t: str(tmp_path / n), str(tmp_path), False, Device("", "file", 0), "native")


@pytest.mark.requires_fio
def test_a_block_lost_after_the_trial_fails_it_naming_the_offset(tmp_path: Path) -> None:
    """Real fio on a 4 MiB file: the trial's pass, its read-back, then the same after 4 KiB were zeroed."""
    w = FioWorkload(name="V", rw="randwrite", size="4MiB", iodepth=4, time_based=False, verify="crc32c")
    w = w.model_copy(update={"ioengine": "psync", "direct": False})  # any filesystem under tmp_path
    target = _target(tmp_path)
    argv = fio.argv(w, target.path, False)
    proc.run(["fio", "--name=fill", f"--filename={argv[2].split('=', 1)[1]}", "--rw=write", "--size=4MiB"],
             timeout=60).check()  # fmt: skip
    proc.run(argv, timeout=60).check()
    shape = {"device": {"kind": "loop"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
    stack = StackSpec.model_validate(shape)
    trial = Trial(Cell(stack=stack, workload=w), 0)
    rec = TrialRecord(trial.cell.id, 0, "ok", None, 0.0, 1.0, argv, "", "", info=TrialInfo(), samples=[])
    ok = read_back(target, trial, rec)
    assert ok.status == "ok" and ok.info.verified == f"{4 * 2**20} bytes read back and verified"
    data = Path(argv[2].split("=", 1)[1])
    with data.open("r+b") as f:
        f.seek(8192)
        f.write(bytes(4096))
    bad = read_back(target, trial, rec)
    assert (bad.status, bad.category) == ("failed", "verify-failed")
    assert "verify: bad magic header 0" in bad.stderr and "offset 8192" in bad.stderr


def test_a_state_on_a_stack_with_servers_is_refused_not_run_healthy(full_caps: HostCaps) -> None:
    caps = replace(full_caps, remote={f: None for f in ("storage-host", "rbd", "rbd-fio", "rbd-fuse", "tbf")})
    device = {"kind": "loop", "size": "2GiB", "remote": {"transport": "rbd", "client": "fuse"}}
    fuse = {"device": device, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
    degraded = {**device, "remote": {**device["remote"], "cluster": {"state": "degraded"}}}
    assert why_not(StackSpec.model_validate({**fuse, "server": "postgres"}), caps) is None
    said = why_not(StackSpec.model_validate({**fuse, "device": degraded, "server": "postgres"}), caps)
    assert said is not None and "cluster.state degraded" in said and "servers" in said
    assert why_not(StackSpec.model_validate({**fuse, "device": degraded}), caps) is None


def test_a_degraded_state_is_reached_only_once_settled() -> None:
    """Captured 3 s after an OSD was killed: PGs still stale in the manager's map (status-osd-down.json)."""
    assert degraded(cli.parse_status((CEPH / "status-degraded.json").read_text()))
    assert not degraded(cli.parse_status((CEPH / "status-osd-down.json").read_text()))
    assert not degraded(cli.parse_status((CEPH / "status-healthy.json").read_text()))


def test_a_status_sampled_during_a_trial_is_the_monitors_points() -> None:
    status = cli.parse_status((CEPH / "status-recovering-later.json").read_text())
    later = {name: value for name, value, _ in series(status)}
    assert later == {
        "ceph.osds_up": 3.0,
        "ceph.pgs_active_clean": 11.0,
        "ceph.pgs_degraded": 17.0,
        "ceph.degraded_objects": 44.0,
        "ceph.recovering_bps": 14673147.0,
    }
