"""/proc/<pid>/mountinfo, parsed: which mounts a process sees, and which of them hold a path.

A measured path must not sit on a mount that skips flushes: overlayfs's
``volatile`` option (Podman sets it for ``--rm`` containers; kernels since 6.x
show it as ``fsync=volatile`` among the super options) turns every fsync into
a no-op, so a database or an fsync-ing fio job would measure a filesystem that
never flushes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

VOLATILE = ("volatile", "fsync=volatile")


@dataclass(frozen=True)
class MountEntry:
    mount_id: int
    parent_id: int
    root: str  # the part of the source filesystem mounted here
    mount_point: str  # as the process sees it
    options: tuple[str, ...]  # per-mount options (rw, relatime, ...)
    fs_type: str
    source: str
    super_options: tuple[str, ...]  # the filesystem's own (lowerdir=..., fsync=volatile, ...)

    @property
    def volatile(self) -> bool:
        return any(o in VOLATILE for o in (*self.options, *self.super_options))


class MountinfoError(ValueError):
    pass


def parse(text: str) -> list[MountEntry]:
    """Every line of a mountinfo file (proc(5)): optional fields end at a lone "-"."""
    return [_entry(line) for line in text.splitlines() if line.strip()]


def _entry(line: str) -> MountEntry:
    fields = line.split(" ")
    try:
        dash = fields.index("-", 6)
        mount_id, parent_id, root, point, options = fields[0], fields[1], fields[3], fields[4], fields[5]
        fs_type, source, supers = fields[dash + 1], fields[dash + 2], fields[dash + 3]
        return MountEntry(
            int(mount_id),
            int(parent_id),
            _unescape(root),
            _unescape(point),
            tuple(options.split(",")),
            fs_type,
            _unescape(source),
            tuple(supers.split(",")),
        )
    except (ValueError, IndexError) as exc:
        raise MountinfoError(f"not a mountinfo line: {line!r}") from exc


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def holding(entries: list[MountEntry], path: str) -> list[MountEntry]:
    """The mount that ``path`` lives on (the last one over it wins, as mounts stack) and every mount below it."""
    target = path.rstrip("/") or "/"
    over = [e for e in entries if _within(target, e.mount_point)]
    below = [e for e in entries if _within(e.mount_point, target) and e.mount_point != target]
    return ([over[-1]] if over else []) + below


def volatile_under(entries: list[MountEntry], path: str) -> list[MountEntry]:
    return [e for e in holding(entries, path) if e.volatile]


def read(pid: int | None) -> str:
    """The mountinfo of ``pid`` (a container's first process), or of this process (the host's view)."""
    return Path(f"/proc/{pid if pid else 'self'}/mountinfo").read_text()


def _within(path: str, parent: str) -> bool:
    parent = parent.rstrip("/")
    return path == parent or path.startswith(parent + "/") or parent == ""
