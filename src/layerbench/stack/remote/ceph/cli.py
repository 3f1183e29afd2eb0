"""The `ceph` and `rbd` command-line tools: argument lists with the cluster's conf and a deadline (a command
that cannot reach a monitor, or has no keyring, waits 300 s by default), JSON output parsed into typed results.

Ceph's Python bindings are built for the distribution's /usr/bin/python3, not a virtual environment's
interpreter: the command-line tools are the interface."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerbench.errors import ToolError
from layerbench.proc import Runner

CONNECT_TIMEOUT_S = 20  # `ceph --connect-timeout`: how long to look for a monitor
DEADLINE_S = 60.0  # every command's own deadline, beyond which the runner kills it


USER = "admin"  # the user of a cluster layerbench builds (its conf names the keyring)


@dataclass(frozen=True)
class Access:
    """How a command reaches a cluster: its conf and the Ceph user to act as (client.admin on a cluster
    layerbench builds; on one the user runs, their user, whose keyring our conf names)."""

    conf: Path
    user: str = USER


Conf = Path | Access  # a conf alone (as client.admin: a cluster layerbench builds, while it builds it), or both


def _reach(conf: Conf) -> list[str]:
    if isinstance(conf, Access):
        return ["--conf", str(conf.conf), "--id", conf.user]
    return ["--conf", str(conf)]


def ceph_argv(conf: Conf, *words: str) -> list[str]:
    return ["ceph", *_reach(conf), f"--connect-timeout={CONNECT_TIMEOUT_S}", "--format=json", *words]


def rbd_argv(conf: Conf, *words: str) -> list[str]:
    return ["rbd", *_reach(conf), *words]


def ceph(runner: Runner, conf: Conf, *words: str, timeout: float = DEADLINE_S) -> str:
    """A `ceph` command's output; a failure, or no answer by the deadline, is a ToolError with Ceph's words."""
    return runner(ceph_argv(conf, *words), timeout=timeout).check().stdout


def ceph_json(runner: Runner, conf: Conf, *words: str) -> Any:
    out = ceph(runner, conf, *words)
    return json.loads(out) if out.strip() else None


def rbd(runner: Runner, conf: Conf, *words: str, timeout: float = DEADLINE_S) -> str:
    return runner(rbd_argv(conf, *words), timeout=timeout).check().stdout


@dataclass(frozen=True)
class Status:
    """What `ceph status --format json` says of a cluster's health and placement groups."""

    health: str  # HEALTH_OK, HEALTH_WARN, HEALTH_ERR
    checks: dict[str, str]  # each failing check's code → Ceph's own summary of it
    osds: int
    osds_up: int
    osds_in: int
    pgs: int
    pg_states: dict[str, int]  # "active+clean" → count
    degraded_objects: int = 0  # object copies missing (pgmap's degraded_objects of degraded_total)
    degraded_total: int = 0
    misplaced_objects: int = 0
    recovering_bytes_per_sec: int = 0  # absent from the pgmap while nothing recovers

    def count(self, word: str) -> int:
        """Placement groups whose state names ``word`` (degraded, recovering, backfilling, undersized...)."""
        return sum(n for state, n in self.pg_states.items() if word in state.split("+"))

    def active(self) -> bool:
        """Every placement group active: the pool takes reads and writes."""
        return self.pgs > 0 and self.count("active") == self.pgs

    def recovering(self) -> bool:
        """Data still to recover: a PG recovering or waiting to, backfilling, or degraded."""
        return any(self.count(w) for w in ("recovering", "recovery_wait", "backfilling", "backfill_wait", "degraded"))

    def to_json(self) -> dict[str, object]:
        """What a trial records of the cluster's state (run/: TrialInfo.cluster)."""
        return {
            "health": self.health,
            "osds": self.osds,
            "osds_up": self.osds_up,
            "osds_in": self.osds_in,
            "pgs": self.pgs,
            "pg_states": dict(self.pg_states),
            "degraded_objects": self.degraded_objects,
            "degraded_total": self.degraded_total,
            "misplaced_objects": self.misplaced_objects,
            "recovering_bytes_per_sec": self.recovering_bytes_per_sec,
        }

    def clean(self) -> bool:
        """HEALTH_OK, every OSD up and in, and every placement group active+clean."""
        return (
            self.health == "HEALTH_OK"
            and self.osds == self.osds_up == self.osds_in
            and self.pgs > 0
            and self.pg_states.get("active+clean", 0) == self.pgs
        )

    def said(self) -> str:
        """Ceph's own words for what is not clean: health, each check, the placement groups' states."""
        checks = "; ".join(f"{code}: {text}" for code, text in sorted(self.checks.items()))
        states = ", ".join(f"{n} {s}" for s, n in sorted(self.pg_states.items()))
        osds = f"{self.osds_up}/{self.osds} OSDs up, {self.osds_in} in"
        return f"{self.health}{f' ({checks})' if checks else ''}; {osds}; {self.pgs} PGs: {states or 'none'}"


def parse_status(text: str) -> Status:
    doc = json.loads(text)
    health = doc.get("health", {})
    checks = {code: c.get("summary", {}).get("message", "") for code, c in health.get("checks", {}).items()}
    osdmap = doc.get("osdmap", {})
    osdmap = osdmap.get("osdmap", osdmap)  # nested in older releases
    pgmap = doc.get("pgmap", {})
    states = {s["state_name"]: int(s["count"]) for s in pgmap.get("pgs_by_state", [])}
    return Status(
        health=str(health.get("status", "unknown")),
        checks=checks,
        osds=int(osdmap.get("num_osds", 0)),
        osds_up=int(osdmap.get("num_up_osds", 0)),
        osds_in=int(osdmap.get("num_in_osds", 0)),
        pgs=int(pgmap.get("num_pgs", 0)),
        pg_states=states,
        degraded_objects=int(pgmap.get("degraded_objects", 0)),
        degraded_total=int(pgmap.get("degraded_total", 0)),
        misplaced_objects=int(pgmap.get("misplaced_objects", 0)),
        recovering_bytes_per_sec=int(pgmap.get("recovering_bytes_per_sec", 0)),
    )


def status(runner: Runner, conf: Conf, timeout: float = DEADLINE_S) -> Status:
    return parse_status(ceph(runner, conf, "status", timeout=timeout))


def parse_osd_id(text: str) -> int:
    """`ceph osd new UUID --format json` answers the new OSD's id (a bare number)."""
    value = json.loads(text)
    if isinstance(value, dict):
        value = value.get("osdid", value)
    if not isinstance(value, int):
        raise ToolError(["ceph", "osd", "new"], 0, f"no OSD id in its answer: {text.strip()[:200]}")
    return value


def up_osds(text: str) -> set[int]:
    """`ceph osd dump --format json`: the ids of the OSDs that are up."""
    return {int(o["osd"]) for o in json.loads(text).get("osds", []) if o.get("up") == 1}


@dataclass(frozen=True)
class Pool:
    name: str
    size: int
    min_size: int
    pg_num: int


def parse_pool(name: str, text: str) -> Pool:
    """`ceph osd pool get NAME all --format json`: the settings a trial ran with, read back from the cluster."""
    doc = json.loads(text)
    return Pool(name, int(doc["size"]), int(doc["min_size"]), int(doc["pg_num"]))


def parse_osd_metadata(text: str) -> dict[int, dict[str, str]]:
    """`ceph osd metadata --format json`: each OSD's id → what it says of its device (class, rotational)."""
    wanted = ("hostname", "osd_objectstore", "bluestore_bdev_type", "rotational", "default_device_class")
    return {int(o["id"]): {k: str(o.get(k, "")) for k in wanted} for o in json.loads(text)}


# The settings a result about recovery depends on, as each OSD reports them (`ceph config show-with-defaults
# osd.N`, from the manager: `ceph tell osd.N config show` needs the OSD's admin socket, whose path a deep
# work directory makes too long for a UNIX socket; the report lags a change by seconds: cluster.py waits): the
# plain name wins where it is not 0, else the one of the device class the OSD took (hdd, ssd, hybrid).
SETTINGS = (
    "osd_recovery_sleep",
    "osd_recovery_sleep_hdd",
    "osd_recovery_sleep_ssd",
    "osd_recovery_max_active",
    "osd_recovery_max_active_hdd",
    "osd_recovery_max_active_ssd",
    "osd_max_backfills",
    "osd_memory_target",
    "osd_op_queue",
)


def parse_config_show(text: str, names: Collection[str] = SETTINGS) -> dict[str, str]:
    """`ceph config show-with-defaults osd.N --format json` (each setting's name, value and source): the
    named settings in force in that daemon."""
    return {str(o["name"]): str(o["value"]) for o in json.loads(text) if o.get("name") in names}


def parse_device_classes(text: str) -> dict[int, str]:
    """`ceph osd tree --format json`: each OSD's id → the device class it took (hdd, ssd, nvme)."""
    nodes = json.loads(text).get("nodes", [])
    return {int(n["id"]): str(n.get("device_class", "")) for n in nodes if n.get("type") == "osd"}
