"""Remove what dead runs left behind, from the ledger, newest first.

Each ledger row says what was about to exist; each remover here makes sure it
no longer does, and succeeds when there is nothing to remove (so cleanup can
be run any number of times). Rows of a live run (its lock is held) are never
touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker

from layerbench.errors import LayerbenchError
from layerbench.proc import Runner
from layerbench.stack import devmapper, dockerd, handle
from layerbench.stack.cell_cgroup import remove_dirs
from layerbench.stack.device import read_or_empty, release_zram, why_unsafe
from layerbench.stack.engines import removers
from layerbench.stack.ledger import Ledger, Resource
from layerbench.stack.remote import host as storage_host
from layerbench.stack.remote import link
from layerbench.stack.remote import removers as transport_removers
from layerbench.stack.runlock import is_live

Remover = Callable[[Resource, Runner], None]


@dataclass(frozen=True)
class Action:
    resource: Resource
    done: bool
    error: str | None = None

    def describe(self) -> str:
        r = self.resource
        return f"{r.kind} {r.ident} (run {r.run_id})"


def reclaim(ledger: Ledger, state_dir: Path, runner: Runner, dry_run: bool = False) -> list[Action]:
    """Remove every live-in-the-ledger resource whose run is dead; report each."""
    actions = []
    for res in ledger.live():
        # A resumed run holds its own lock; what an earlier, dead process of it left is fair game.
        earlier_life = res.run_id == ledger.run_id and res.pid != os.getpid()
        if is_live(state_dir, res.run_id) and not earlier_life:
            continue
        if dry_run:
            actions.append(Action(res, done=False))
            continue
        try:
            REMOVERS[res.kind](res, runner)
        except (LayerbenchError, OSError, docker.errors.DockerException) as exc:
            actions.append(Action(res, done=False, error=f"{type(exc).__name__}: {exc}"))
            continue
        ledger.removed(res.id)
        actions.append(Action(res, done=True))
    return actions


def _process(res: Resource, runner: Runner) -> None:
    """A database server, a target's server, a native workload: ended only if it is still that process."""
    handle.kill_if_same(int(res.detail.get("pid", 0)), res.detail.get("start_time"))
    if mark := res.detail.get("mark"):  # the run may have died before the row got the PID
        handle.kill_marked(str(mark))


def _mount(res: Resource, runner: Runner) -> None:
    target = Path(res.ident)
    if dockerd.mounts_below(target):
        for mnt in sorted(dockerd.mounts_below(target), key=len, reverse=True):
            if runner(["umount", mnt], timeout=120).rc != 0:
                runner(["umount", "-l", mnt], timeout=120).check()
    with contextlib.suppress(FileNotFoundError):
        target.rmdir()


def _loop(res: Resource, runner: Runner) -> None:
    backing = res.detail.get("backing", res.ident)
    attached = runner(["losetup", "--associated", backing], timeout=30).stdout
    for line in attached.splitlines():
        device = line.split(":", 1)[0]
        runner(["losetup", "--detach", device], timeout=60).check()


def _zram(res: Resource, runner: Runner) -> None:
    num = res.detail.get("num") or res.ident.removeprefix("/dev/zram")
    if not str(num).isdigit() or not Path(f"/sys/block/zram{num}").exists():
        return
    reason = why_unsafe(f"/dev/zram{num}", read_or_empty("/proc/mounts"), read_or_empty("/proc/swaps"), [])
    if reason:  # someone uses it now: not ours to reset any more
        raise LayerbenchError(f"zram{num} left as it is: {reason}")
    # A dead run's killed workload lets go of the device a moment after it is gone (more so on a busy
    # host): a single reset there failed with EBUSY and left the device behind.
    release_zram(str(num))


def _netns(res: Resource, runner: Runner) -> None:
    storage_host.remove_netns(res.ident, runner)


def _veth(res: Resource, runner: Runner) -> None:
    storage_host.delete_link(res.ident, runner)


def _qdisc(res: Resource, runner: Runner) -> None:
    link.remove_qdisc(res.ident, res.detail.get("netns"), runner)


def _thinpool(res: Resource, runner: Runner) -> None:
    """direct-lvm's volume group, and whatever a killed dockerd left active on its pool."""
    devmapper.remove_pool(res.ident, res.detail.get("loop", ""), res.detail.get("backing", ""), runner)


def _file(res: Resource, runner: Runner) -> None:
    Path(res.ident).unlink(missing_ok=True)


def _dir(res: Resource, runner: Runner) -> None:
    shutil.rmtree(res.ident, ignore_errors=True)


def _cgroup(res: Resource, runner: Runner) -> None:
    """A native cell's own cgroup: whatever still runs in it is killed, then it is removed."""
    remove_dirs([Path(d) for d in res.detail.get("dirs", {}).values()])


REMOVERS: dict[str, Remover] = {
    "server": _process,
    "process": _process,
    "mount": _mount,
    "loop": _loop,
    "zram": _zram,
    "thinpool": _thinpool,
    "netns": _netns,
    "veth": _veth,
    "qdisc": _qdisc,
    "file": _file,
    "dir": _dir,
    "cgroup": _cgroup,
    # Each engine's: its daemon ("dockerd", "podman"), and what Docker's API made there (container, volume,
    # network: stack/engines/container.py), from its module in stack/engines.
    **removers(),
    # Each remote transport's target and client ("nvmet", "iscsi-session", ...), from its module in stack/remote.
    **transport_removers(),
}
