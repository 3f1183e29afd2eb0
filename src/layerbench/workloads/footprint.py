"""What a workload leaves on the filesystem under test, counted before anything runs.

A peer's job file (2 jobs x 2 GiB) and a 1 GiB workload on a 5 GiB device
failed mid-run with "No space left on device": every workload's files stay on
the filesystem for the stack's life (the next trial reads them again), and a
job file's sizes were never read. Each workload's files are named here, so
files that workloads share (one fill per size, as ``fio.data_file``) count
once, and a cell whose files cannot fit beside its stack's others is refused
with the numbers instead.
"""

from __future__ import annotations

from layerbench.spec.models import StackSpec, Workload
from layerbench.workloads import registry
from layerbench.workloads.personalities import job_file_bytes

__all__ = ["USABLE_SHARE", "files", "job_file_bytes", "refused"]

# What a fresh filesystem leaves for files, from mkfs's own figures on 1-8 GiB devices
# (ext4: journal and inode tables, its 5% reserve is root's; btrfs: metadata and system chunks).
USABLE_SHARE = 0.9


def files(w: Workload) -> dict[str, int]:
    """The files `w` keeps on the filesystem: a name that is the same for workloads sharing it → bytes
    (each workload type's own ``files``; a database's data set is sized by its server spec, not here)."""
    return registry.of(w).files(w)


def refused(stack: StackSpec, w: Workload) -> str | None:
    """Why the workload cannot run on this stack where only its tool can tell (fio reading a user's job
    file: ``jobfile.refusal``), or None."""
    return registry.of(w).reads(stack, w)
