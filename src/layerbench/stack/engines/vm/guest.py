"""A guest that stays up: a VM booted once per engine layer, running the host's commands until told to stop.

``qemu.py`` boots a guest for one script; the VM engine needs one that lives as long as its stack and
runs every command of every trial. The guest's boot unit (tools/vm/guest/) starts ``guest_agent.py``
from the 9p share, and ``Guest.run`` passes argument lists to it and gets back exit code, stdout and
stderr, with the timeout enforced inside the guest as ``proc.run`` enforces it on the host.

The guest is recorded in the ledger before qemu starts (its directory; its PID and start time once it
runs), stopped by asking it to power off, and killed by PID if it does not: a dead run's guest is
killed by ``reclaim`` only while that PID is still the qemu process layerbench started.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from layerbench.errors import PrerequisiteError, ToolError
from layerbench.proc import Completed, Runner, spawn
from layerbench.stack import dockerd, image
from layerbench.stack.engines.vm import guest_agent, qemu
from layerbench.stack.handle import kill_if_same, log_tail, start_time
from layerbench.stack.ledger import Resource, tracked
from layerbench.stack.target import BuildContext

POLL_S = 0.05
# A TCG boot takes 1-3 minutes quietly and several times that on a busy host; past this, something broke.
BOOT_LIMIT_S = 1200.0
# Powering off under emulation takes seconds; a guest that ignores the request is killed after this.
STOP_LIMIT_S = 180.0
# Beyond a command's own timeout (enforced in the guest): the round trip over 9p.
ANSWER_GRACE_S = 60.0
# What a command gets when the guest is gone: the engine's failure, not the tool's (engines/vm/).
GONE_RC = 255
GONE = "layerbench: the guest is gone"
AGENT = "agent.py"
# qemu writes its own PID here as it starts: cleanup finds a guest that a run killed before it could
# record the PID in the ledger.
PIDFILE = "qemu.pid"
SCRIPT = f"exec python3 /mnt/{qemu.SHARE_TAG}/{AGENT} /mnt/{qemu.SHARE_TAG}\n"
GUEST_SHARE = Path("/mnt") / qemu.SHARE_TAG
# qemu's user-mode network forwards the host's ports to this address (its default for the guest).
GUEST_ADDRESS = "10.0.2.15/24"
GUEST_MOUNT = "/mnt/lbdata"  # where an engine mounts the filesystem it makes on the guest's data disk


class BootStalled(PrerequisiteError):
    """The guest's kernel hung before it started init."""


@dataclass
class Guest:
    process: subprocess.Popen[bytes]
    directory: Path  # the host's: share/ (the guest's /mnt/lbshare), console.log, qemu.log
    accel: str
    facts: dict[str, object] = field(default_factory=dict)  # what the agent said when ready (kernel, cpus)
    agent_up: bool = False  # the agent said it was ready: it can hear a request to power off
    _numbers: Iterator[int] = field(default_factory=itertools.count)

    @property
    def share(self) -> Path:
        return self.directory / "share"

    def alive(self) -> bool:
        return self.process.poll() is None

    def run(self, argv: Sequence[str], timeout: float) -> Completed:
        """Run ``argv`` in the guest; raises ToolError(rc=None) on timeout, as ``proc.run`` does."""
        args = [str(a) for a in argv]
        name = f"{next(self._numbers):08d}.json"
        guest_agent.write_whole(self.share / "req" / name, {"argv": args, "timeout": timeout})
        answer = self.share / "res" / name
        deadline = time.monotonic() + timeout + ANSWER_GRACE_S
        while not answer.exists():
            if not self.alive():
                return Completed(args, GONE_RC, "", f"{GONE} (qemu exited with {self.process.returncode})")
            if time.monotonic() > deadline:
                raise ToolError(args, None, f"no answer from the guest after {timeout:.0f}s")
            time.sleep(POLL_S)
        data = json.loads(qemu.guest_text(self.share, f"res/{name}"))
        answer.unlink()
        if data["rc"] is None:
            raise ToolError(args, None, data["stderr"])
        return Completed(args, int(data["rc"]), data["stdout"], data["stderr"])

    def put(self, name: str, text: str) -> str:
        """A small file the guest's commands can read (a job file); its path in the guest."""
        files = self.share / "files"
        files.mkdir(exist_ok=True)
        (files / name).write_text(text)
        return str(GUEST_SHARE / "files" / name)

    def unstage(self, path: str) -> None:
        """Remove a file ``put`` staged (its path in the guest)."""
        (self.share / "files" / Path(path).name).unlink(missing_ok=True)

    @contextmanager
    def staged_rootfs(self, entries: list[image.Entry], name: str) -> Iterator[str]:
        """An image's files as a tar in the share (its path in the guest), removed once the guest used it."""
        tar = self.share / "files" / name
        tar.parent.mkdir(exist_ok=True)
        try:
            image.write_rootfs(tar, entries)
            yield str(GUEST_SHARE / "files" / name)
        finally:
            tar.unlink(missing_ok=True)

    def console_tail(self, chars: int = 2000) -> str:
        return qemu.read(self.directory / "console.log")[-chars:]

    def wait_ready(self, limit_s: float) -> None:
        """Until the agent says it is ready; BootStalled if its kernel hung (qemu.ConsoleWatch),
        PrerequisiteError if the guest stops or ``limit_s`` passes."""
        ready, watch = self.share / "ready", qemu.ConsoleWatch(self.directory / "console.log")
        deadline = time.monotonic() + limit_s
        while not ready.exists():
            if not self.alive():
                # qemu's own words first: one that exits at once has written nothing to the console.
                said, console = log_tail(self.directory / "qemu.log"), self.console_tail()
                raise PrerequisiteError(f"the guest stopped while booting: qemu: {said}\nconsole: {console}")
            if time.monotonic() > deadline:
                raise PrerequisiteError(f"the guest did not come up in {limit_s:.0f}s: {self.console_tail()}")
            if watch.hung():
                raise BootStalled(f"the guest's kernel was silent {qemu.KERNEL_STALL_S:.0f}s: {self.console_tail()}")
            time.sleep(POLL_S)
        self.facts = json.loads(qemu.guest_text(self.share, "ready"))
        self.agent_up = True

    def stop(self) -> None:
        """Ask the guest to power off; kill it (by PID) if it does not within STOP_LIMIT_S. A guest whose
        agent never said it was ready cannot be asked: it is killed at once."""
        if self.alive() and self.agent_up:
            (self.share / "stop").touch()
            with contextlib.suppress(subprocess.TimeoutExpired):  # killed below
                self.process.wait(STOP_LIMIT_S)
        qemu.kill(self.process)


@contextmanager
def booted(
    image: qemu.GuestImage,
    ctx: BuildContext,
    accel: str,
    disks: Sequence[str] = (),
    shares: Sequence[qemu.Share] = (),
    memory_mib: int = 2048,
    cpus: int = 2,
    forwards: Sequence[tuple[int, int]] = (),
) -> Iterator[Guest]:
    """A running guest with ``disks`` as its /dev/vdb, /dev/vdc, ..., and, with ``forwards`` (host port,
    guest port), a network card (eth0, at GUEST_ADDRESS) whose guest ports are reached on the host's
    loopback; stopped and removed on exit."""
    directory = ctx.work_dir / f"vm-{ctx.run_id}-{time.monotonic_ns()}"

    def start(rid: int) -> Guest:
        (directory / "share").mkdir(parents=True, mode=0o700)
        qemu.prepare_share(directory / "share", SCRIPT, shares)
        shutil.copyfile(guest_agent.__file__, directory / "share" / AGENT)
        console = directory / "console.log"
        pidfile = directory / PIDFILE
        argv = qemu.qemu_argv(
            image, accel, directory / "share", shares, console, memory_mib, cpus, disks, pidfile, forwards
        )
        process = spawn(argv, directory / "qemu.log")
        ctx.ledger.update(rid, pid=process.pid, start_time=start_time(process.pid))
        return Guest(process, directory, accel)

    def ready(rid: int) -> Guest:
        """A guest whose agent answers; a boot whose kernel hung is killed and tried again."""
        attempt = 1
        while True:
            guest = start(rid)
            try:
                guest.wait_ready(BOOT_LIMIT_S)
            except BootStalled:
                remove(guest)
                if attempt == qemu.BOOT_ATTEMPTS:
                    raise
                attempt += 1
                continue
            except BaseException:
                remove(guest)
                raise
            guest.facts["boot_attempts"] = attempt
            return guest

    def create(rid: int) -> Guest:
        guest = ready(rid)
        try:
            if forwards:
                guest.run(["ip", "link", "set", "eth0", "up"], BOOT_LIMIT_S).check()
                guest.run(["ip", "address", "add", GUEST_ADDRESS, "dev", "eth0"], BOOT_LIMIT_S).check()
        except BaseException:
            remove(guest)
            raise
        return guest

    def remove(guest: Guest) -> None:
        guest.stop()
        shutil.rmtree(directory, ignore_errors=True)

    with tracked(ctx.ledger, "vm", str(directory), create, remove, accel=accel, disks=list(disks)) as guest:
        yield guest


def reclaim(res: Resource, runner: Runner) -> None:
    """A dead run's guest: killed if its PID is still that qemu, its directory removed."""
    kill_if_same(int(res.detail.get("pid", 0)), res.detail.get("start_time"))
    pidfile = Path(res.ident) / PIDFILE
    with contextlib.suppress(OSError, ValueError):
        pid = int(pidfile.read_text().strip())
        if dockerd.mentions(dockerd.cmdline(pid), [pidfile]):  # still that qemu: its command line names the file
            kill_if_same(pid, start_time(pid))
    shutil.rmtree(res.ident, ignore_errors=True)
