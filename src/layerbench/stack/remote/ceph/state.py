"""A cell's cluster state, applied around each of its trials (``cluster.state``): every trial starts from a
healthy cluster; ``degraded`` takes one OSD down (on a cluster layerbench builds, its daemon stopped by the PID
layerbench started it with; on one the user runs and named, held down by a flag: faults.py) and waits until
its PGs are degraded and still active; ``recovering`` then writes while degraded, brings the OSD back and hands
the trial a cluster recovering. After the trial the OSD is back and the cluster healthy again, so the next trial
(another workload on the same stack, or the next repetition) starts where this one did.

Per trial, not per build: a state is transient (recovery ends on its own), and a stack is built once per
round for all its workloads; applied at the build, only the first trial would see recovery."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from layerbench.errors import PrerequisiteError
from layerbench.proc import Runner
from layerbench.records.checks import Check
from layerbench.records.info import ClusterInfo
from layerbench.spec.transports import ClusterSpec, OwnClusterSpec
from layerbench.stack.remote.ceph import cli, own
from layerbench.stack.remote.ceph.cluster import (
    FILL_BYTES,
    HEALTHY_LIMIT_S,
    POLL_S,
    Cluster,
    healthy,
    osd_up,
    settings,
)

STATE_LIMIT_S = 180.0  # measured here: an OSD stopped is down with its PGs degraded within 10 s; back in 17 s
SAMPLE_DEADLINE_S = 10.0  # a sample during a trial: a late one is a gap, not a wait
RESTORE_LIMIT_S = 600.0  # recovery of a fill at hard-disk settings (0.1 s per operation) and the trial's writes
# Device kinds layerbench makes that are no hard disk, whatever the kernel says of the disk beneath a loop file.
NOT_HARD_DISKS = {"loop": "loop devices (files)", "zram": "zram (memory)", "ram": "ram disks", "null": "null_blk"}


class Switch(Protocol):
    """How a trial's OSD goes down and comes back."""

    @property
    def osd_id(self) -> int: ...

    def down(self) -> None: ...  # down, and marked down in the map now

    def up(self) -> None: ...  # back, and up in the map

    def is_up(self) -> bool: ...


@dataclass
class Stopped:
    """The last OSD of a cluster layerbench builds, its daemon stopped and started by its PID: the first OSD's
    device is the one whose counters judge a trial (ceph/__init__.py)."""

    cluster: Cluster
    runner: Runner

    @property
    def osd_id(self) -> int:
        return self.cluster.daemons[-1][0]

    def down(self) -> None:
        self.cluster.daemons[-1][1].stop()
        # Ceph waits for peers to report a silent OSD; a stopped one is marked down now (rc: it may be already).
        self.runner(cli.ceph_argv(self.cluster.access, "osd", "down", f"osd.{self.osd_id}"), timeout=cli.DEADLINE_S)

    def up(self) -> None:
        self.cluster.daemons[-1][1].start(lambda: osd_up(self.cluster.access, self.osd_id, self.runner))

    def is_up(self) -> bool:
        return self.cluster.daemons[-1][1].up()


# A cluster the user runs is no test host's: its devices are theirs, and it need not be clean to be measured.
THEIR_DEVICES = Check("ceph-hdd-settings", "skip", "the OSDs' devices are the cluster's own, not ones layerbench made")


@dataclass
class States:
    """The trial states of one cluster (stack/target.TrialStates), its OSD taken down and back by ``osd``
    (``Stopped`` on a cluster layerbench builds); a cluster the user runs (``spec`` an OwnClusterSpec) starts a
    trial once every PG is active and none degraded, and its settings are read as a run there reads them."""

    cluster: Cluster
    spec: ClusterSpec | OwnClusterSpec
    runner: Runner
    osd: Switch
    _start: cli.Status | None = field(default=None, init=False)
    _settings: dict[str, object] = field(default_factory=dict, init=False)
    _up: int = field(default=0, init=False)  # OSDs up as the trial's state is applied

    @property
    def theirs(self) -> bool:
        return isinstance(self.spec, OwnClusterSpec)

    def _settled(self, s: cli.Status) -> bool:
        return s.active() and not s.recovering() if self.theirs else s.clean()

    def enter(self) -> None:
        conf = self.cluster.access
        # Every trial starts from a healthy cluster, whatever the last one left.
        self._up = healthy(
            conf, self.runner, own.ACTIVE_LIMIT_S if self.theirs else HEALTHY_LIMIT_S, self._settled
        ).osds_up
        # Read while every OSD answers.
        self._settings = (
            settings(conf, self.runner, self.cluster.pool) if self.theirs else settings_in_force(conf, self.runner)
        )
        try:
            if self.spec.state != "healthy":
                self._degrade()
            if self.spec.state == "recovering":
                self._recover()
        except Exception:  # an interrupt is not waited on: the teardown stops the whole cluster
            self._restore()  # the next trial starts from a healthy cluster, not from this one's half-state
            raise
        self._start = cli.status(self.runner, conf)

    def _degrade(self) -> None:
        self.osd.down()
        reached(self._status, degraded, "degraded")

    def _recover(self) -> None:
        """Data written while the OSD is down (the fill image, not the trial's), then the OSD back: recovery."""
        fill = f"{self.cluster.pool}/{self.cluster.fill}"
        bench = ["bench", "--io-type", "write", "--io-size", "4M", "--io-threads", "4", "--io-pattern", "seq"]
        cli.rbd(self.runner, self.cluster.access, *bench, "--io-total", f"{FILL_BYTES // 2**20}M", fill, timeout=300)
        self.osd.up()
        now = reached(self._status, lambda s: s.osds_up >= self._up, "recovering")
        if not now.recovering():
            raise PrerequisiteError(
                f"cluster.state recovering: recovery had ended before the trial could start ({now.said()})"
            )

    def sample(self) -> list[tuple[str, float, str]]:
        """The cluster's state as a monitor's points, while the trial runs."""
        return series(cli.status(self.runner, self.cluster.access, SAMPLE_DEADLINE_S))

    def leave(self) -> tuple[ClusterInfo, list[Check]]:
        end = cli.status(self.runner, self.cluster.access)
        osd_id = self._restore()
        start = self._start
        assert start is not None  # enter() ran
        stopped = f"osd.{osd_id}" if self.spec.state != "healthy" else None
        info = ClusterInfo(self.spec.state, stopped, start.to_json(), end.to_json(), self._settings)
        kinds = (
            THEIR_DEVICES
            if isinstance(self.spec, OwnClusterSpec)
            else hdd_check(self._settings, self._kinds(), self.spec)
        )
        return info, [state_check(self.spec.state, start, end), kinds]

    def _restore(self) -> int:
        """The OSD back and the cluster healthy (recovery done); the OSD's id."""
        if not self.osd.is_up():
            self.osd.up()
        healthy(self.cluster.access, self.runner, RESTORE_LIMIT_S, self._settled)
        return self.osd.osd_id

    def _status(self) -> cli.Status:
        return cli.status(self.runner, self.cluster.access)

    def _kinds(self) -> set[str]:
        return {backing.kind for backing, _ in self.cluster.osds}


def series(s: cli.Status) -> list[tuple[str, float, str]]:
    """A status as the monitor's points: what recovery's progress is read from beside the trial's throughput."""
    return [
        ("ceph.osds_up", float(s.osds_up), "OSDs"),
        ("ceph.pgs_active_clean", float(s.pg_states.get("active+clean", 0)), "PGs"),
        ("ceph.pgs_degraded", float(s.count("degraded")), "PGs"),
        ("ceph.degraded_objects", float(s.degraded_objects), "objects"),
        ("ceph.recovering_bps", float(s.recovering_bytes_per_sec), "B/s"),
    ]


def degraded(s: cli.Status) -> bool:
    """An OSD down, PGs degraded, every PG active (the pool takes writes) and none stale: settled (the manager's
    map of PGs lags the monitor's of OSDs by seconds)."""
    return s.osds_up < s.osds and s.count("degraded") > 0 and s.active() and not s.count("stale")


def reached(status: Callable[[], cli.Status], wanted: Callable[[cli.Status], bool], name: str) -> cli.Status:
    """The cluster's status once ``wanted``; refused in Ceph's words after STATE_LIMIT_S."""
    deadline = time.monotonic() + STATE_LIMIT_S
    while True:
        now = status()
        if wanted(now):
            return now
        if time.monotonic() > deadline:
            raise PrerequisiteError(f"the Ceph cluster is not {name} after {STATE_LIMIT_S:.0f}s: {now.said()}")
        time.sleep(POLL_S)


def settings_in_force(conf: cli.Conf, runner: Runner) -> dict[str, object]:
    """The pool, and each OSD's device and settings, read back from the cluster and the daemons (not the spec)."""
    found = settings(conf, runner)
    classes = cli.parse_device_classes(cli.ceph(runner, conf, "osd", "tree"))
    meta = found.pop("osds")
    assert isinstance(meta, dict)
    osds = {}
    for osd_id, said in sorted(meta.items()):
        config = cli.parse_config_show(cli.ceph(runner, conf, "config", "show-with-defaults", f"osd.{osd_id}"))
        osds[f"osd.{osd_id}"] = {**said, "device_class": classes.get(osd_id, ""), **config}
    return {**found, "osds": osds}


def state_check(state: str, start: cli.Status, end: cli.Status) -> Check:
    """Whether the cluster was in the cell's state as the trial began (and, degraded, still as it ended)."""
    said = f"at the start: {start.said()}; at the end: {end.said()}"
    if state == "healthy":
        ok = start.clean()
    elif state == "degraded":
        ok = all(s.osds_up < s.osds and s.count("degraded") > 0 for s in (start, end))
    else:
        ok = start.osds_up == start.osds and start.recovering()
    return Check("cluster-state", "pass" if ok else "flag", f"{state}: {said}")


def hdd_check(found: dict[str, object], kinds: set[str], spec: ClusterSpec) -> Check:
    """The trap measured here: OSDs on loop files of a virtual disk that calls itself rotational take device
    class hdd, and with it a 0.1 s sleep between recovery operations, on a device that is no hard disk."""
    osds = found.get("osds", {})
    assert isinstance(osds, dict)
    hdd = sorted(name for name, o in osds.items() if o.get("device_class") == "hdd" or o.get("rotational") == "1")
    not_disks = sorted(NOT_HARD_DISKS[k] for k in kinds if k in NOT_HARD_DISKS)
    if not hdd or not not_disks:
        return Check("ceph-hdd-settings", "pass", "no OSD took hard-disk settings on a device that is no hard disk")
    sleeps = {o.get("osd_recovery_sleep_hdd") for o in osds.values() if isinstance(o, dict)}
    given = spec.recovery is not None and spec.recovery.osd_recovery_sleep is not None
    detail = (
        f"{', '.join(hdd)} took device class hdd on {', '.join(not_disks)}: Ceph applies its hard-disk settings "
        f"(osd_recovery_sleep_hdd {', '.join(sorted(str(s) for s in sleeps))} s between recovery operations, "
        "fewer at once)"
    )
    if given:
        return Check("ceph-hdd-settings", "pass", f"{detail}; cluster.recovery.osd_recovery_sleep overrides the sleep")
    return Check("ceph-hdd-settings", "flag", f"{detail}; set cluster.recovery to measure recovery at other settings")


@dataclass
class Observed:
    """The trials of a cluster the user runs (ceph/own.py): no state applied, since layerbench stops nothing of a
    cluster it did not build; its state read as each trial begins and ends, and sampled while it runs, as on one
    it builds. A trial starts once every PG is active; one whose cluster was not clean is flagged, not refused."""

    cluster: Cluster
    runner: Runner
    _start: cli.Status | None = field(default=None, init=False)
    _settings: dict[str, object] = field(default_factory=dict, init=False)

    def enter(self) -> None:
        self._start = healthy(self.cluster.access, self.runner, own.ACTIVE_LIMIT_S, cli.Status.active)
        self._settings = settings(self.cluster.access, self.runner, self.cluster.pool)

    def sample(self) -> list[tuple[str, float, str]]:
        return series(cli.status(self.runner, self.cluster.access, SAMPLE_DEADLINE_S))

    def leave(self) -> tuple[ClusterInfo, list[Check]]:
        end = cli.status(self.runner, self.cluster.access)
        start = self._start
        assert start is not None  # enter() ran
        info = ClusterInfo("healthy", None, start.to_json(), end.to_json(), self._settings)
        return info, [state_check("healthy", start, end), THEIR_DEVICES]
