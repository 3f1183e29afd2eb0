"""The volatile-mount check: is the measured path on a mount whose fsync does nothing?

Podman mounts an auto-removed (``--rm``) container's overlay with
``volatile``: every fsync returns at once, so a workload that flushes looks
fast for a reason no production container would share. layerbench never
auto-removes a measured container; this check proves it on every trial, from
the mounts the workload's own process sees (its container's first process,
or the host for a native cell).
"""

from __future__ import annotations

from collections.abc import Callable

from layerbench.errors import LayerbenchError
from layerbench.records.checks import Check
from layerbench.stack import mountinfo

NAME = "volatile-mount"
REMEDY = (
    "fsync is a no-op there, so flush-bound results are not comparable: do not auto-remove (--rm) "
    "a measured Podman container, and mount overlays without the volatile option"
)


def volatile_check(
    path: str, pid: int | None, is_device: bool = False, table: Callable[[], str] | None = None
) -> Check:
    """``path`` as the process ``pid`` (None: this one, the host) sees it, or as ``table`` (a guest's
    mountinfo) says."""
    if is_device:
        return Check(NAME, "skip", "a raw device: no mount between the workload and the device")
    try:
        entries = mountinfo.parse(table() if table else mountinfo.read(pid))
    except (OSError, LayerbenchError, mountinfo.MountinfoError) as exc:
        return Check(NAME, "skip", f"cannot read the mounts the workload sees: {exc}")
    return judge(entries, path)


def judge(entries: list[mountinfo.MountEntry], path: str) -> Check:
    found = mountinfo.volatile_under(entries, path)
    if found:
        where = ", ".join(f"{e.fs_type} on {e.mount_point}" for e in found)
        return Check(NAME, "flag", f"{path} is on a volatile mount ({where}): {REMEDY}")
    held = mountinfo.holding(entries, path)
    on = f"{held[0].fs_type} on {held[0].mount_point}" if held else "no mount found"
    return Check(NAME, "pass", f"{path} is on {on}, not volatile")
