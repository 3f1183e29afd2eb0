"""`layerbench doctor`: which axes this host supports, and why not, from the same rules `run` applies."""

from __future__ import annotations

from typing import NamedTuple, get_args

from layerbench.spec.databases import PgbenchWorkload, ServerKind, YcsbWorkload
from layerbench.spec.devices import DEVICES
from layerbench.spec.engines import API_ENGINE, HOST_ENGINE, guest_accel
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.models import DRIVERS, DeviceSpec, DmMode, FsType, StackSpec
from layerbench.spec.rules import (
    client_ready,
    host_has_device,
    host_has_engine,
    host_has_filesystem,
    host_has_remote,
    host_has_server,
    needs_root,
)
from layerbench.spec.traits import TRAITS
from layerbench.spec.transports import doctor_remotes

# Probed by `doctor`: Docker Hub, where the seeds' databases' official images are.
DOCTOR_IMAGES = ("mongo:7",)
# Docker's programs (its row in spec/engines/) among the tools a stack needs.
TOOLS = ("fio", *TRAITS[API_ENGINE].tools, "fuse-overlayfs", "losetup", "mount")
# The engine whose guest `doctor` boots: the one whose workload runs in a guest, not a container of it.
GUEST = next(kind for kind, t in TRAITS.items() if t.guest and not t.container)


class DoctorRow(NamedTuple):
    axis: str
    value: str
    ok: bool
    note: str


def doctor_rows(caps: HostCaps) -> list[DoctorRow]:
    rows = [DoctorRow("host", "root", caps.is_root, needs_root(_stack(), caps) or f"kernel {caps.kernel}")]
    for kind, device in DEVICES.items():
        if device.doctor:  # nothing to probe ahead: say what it is
            rows.append(DoctorRow("device", kind, True, device.doctor))
            continue
        reason = host_has_device(_stack(device={"kind": kind}), caps)
        rows.append(DoctorRow("device", kind, reason is None, reason or ""))
    for fs in get_args(FsType):
        if fs != "none":
            reason = host_has_filesystem(_stack(filesystem=fs, placement="host-dir"), caps)
            rows.append(DoctorRow("filesystem", fs, reason is None, reason or ""))
    for engine, drivers in DRIVERS.items():
        for driver in drivers:
            # devicemapper's two modes need different things (direct-lvm: LVM's tools): a row each.
            modes = get_args(DmMode) if driver == "devicemapper" else (None,)
            for mode in modes:
                stack = _stack(
                    filesystem="btrfs" if driver == "btrfs" else "xfs",
                    engine={"kind": engine, "driver": driver, "mode": mode},
                    placement="writable-layer",
                )
                reason = host_has_engine(stack, caps)
                rows.append(
                    DoctorRow(f"{engine} driver", stack.engine.label().partition(":")[2], reason is None, reason or "")
                )
    rows.append(_guest_row(caps))
    rows.extend(_remote_rows(caps))
    for server in get_args(ServerKind):
        if server != "image":
            reason = host_has_server(_stack(filesystem="xfs", placement="host-dir", server=server), caps)
            rows.append(DoctorRow("database", server, reason is None, reason or ""))
    rows.extend(_image_rows(caps))
    for workload in (YcsbWorkload(name="y"), PgbenchWorkload(name="p")):
        reason = client_ready(workload, caps)
        rows.append(DoctorRow("client", workload.kind, reason is None, reason or ""))
    for tool in TOOLS:
        ok = tool in caps.binaries
        rows.append(DoctorRow("tool", tool, ok, "" if ok else "not on PATH (`make setup` installs it)"))
    rows.append(_profiler_row(caps))
    rows.extend(DoctorRow("note", "", True, note) for note in caps.notes)
    return rows


def _image_rows(caps: HostCaps) -> list[DoctorRow]:
    """Whether image servers' images can be pulled here (one probe per registry, by a known image)."""
    rows = []
    for image in DOCTOR_IMAGES:
        reason = caps.images.get(image, "not probed")
        note = reason or "pulled by the engine's daemon when a spec names it (a docker-archive file always works)"
        rows.append(DoctorRow("database image", image, reason is None, note))
    return rows


def _profiler_row(caps: HostCaps) -> DoctorRow:
    reason = caps.profiler_missing
    return DoctorRow("profiler", "perf", reason is None, reason or "records the whole machine (profile: cpu)")


def _remote_rows(caps: HostCaps) -> list[DoctorRow]:
    """A row per client of each transport (spec/transports/), as a spec names it, then the link's qdiscs."""
    rows = []
    for name, remote in doctor_remotes():
        reason = host_has_remote(_stack(device={"kind": "zram", "remote": remote}), caps)
        rows.append(DoctorRow("remote device", name, reason is None, reason or ""))
    for qdisc, shapes in (("netem", "a link's delay (link.delay)"), ("tbf", "a link's rate alone (link.rate)")):
        reason = caps.remote.get(qdisc, "not probed")
        rows.append(DoctorRow("link shaping", qdisc, reason is None, reason or shapes))
    return rows


def _guest_row(caps: HostCaps) -> DoctorRow:
    reason = host_has_engine(_stack(filesystem="xfs", engine=GUEST, placement="host-dir"), caps)
    if reason is not None:
        return DoctorRow("engine", GUEST, False, reason)
    if guest_accel(caps) == "kvm":
        return DoctorRow("engine", GUEST, True, "guests run under KVM")
    return DoctorRow("engine", GUEST, False, "emulation only (no usable KVM): VM cells need 'emulation: allow'")


def _stack(**fields: object) -> StackSpec:
    data: dict[str, object] = {
        "device": DeviceSpec(),
        "filesystem": "none",
        "engine": HOST_ENGINE,
        "placement": "raw",
    }
    data.update(fields)
    return StackSpec.model_validate(data)
