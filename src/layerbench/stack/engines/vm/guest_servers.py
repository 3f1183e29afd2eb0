"""Database servers in a VM (the vm engine's fleet): the same server, with the same host binaries, in a guest.

The server's files are what its container image carries (stack/image.py: the host's binaries, their
libraries, the server's share files), unpacked into a root in the guest and run there with
``chroot --userspec`` as the server's user: the guest's kernel, the host's PostgreSQL. Its data lives on
the guest's filesystem (the disk file on the stack's filesystem), bound into that root at the same path.
Each instance is a transient systemd unit whose output goes to a log in the share, so the host reads its
tail when it fails. The client on the host reaches it through a port qemu forwards from the host's
loopback (user-mode networking, ``restrict=on``: the guest reaches nothing else); that network path is
part of what a VM cell measures.

Nothing here is in the ledger: it all lives in the guest, and the guest is (guest.py).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from layerbench.errors import ToolError
from layerbench.spec.models import Limits, StackSpec
from layerbench.stack import handle as handles
from layerbench.stack import image
from layerbench.stack.engines.vm.guest import GUEST_MOUNT, GUEST_SHARE, Guest
from layerbench.stack.fleet import (
    IMAGE_TOOLS,
    PREPARE_TIMEOUT_S,
    Endpoint,
    ServerError,
    Starter,
    server_config,
    wait_ready,
)
from layerbench.stack.target import BuildContext, Mount
from layerbench.workloads.servers import SERVER_UID, ServerConfig, ServerDef

ROOT = "/opt/layerbench/root"
COMMAND_TIMEOUT_S = 900.0
POLL_S = 0.5
AS_SERVER = ["chroot", f"--userspec={SERVER_UID}:{SERVER_UID}", ROOT]


@dataclass
class GuestHandle:
    """A server running in the guest as a transient unit; ``log`` is its output, on the host's side of the share."""

    guest: Guest
    unit: str
    log: Path

    @property
    def pid(self) -> int:
        """The server's PID in the guest (not a process of this host)."""
        shown = self.guest.run(["systemctl", "show", "--property=MainPID", "--value", self.unit], COMMAND_TIMEOUT_S)
        return int(shown.stdout.strip() or 0)

    def alive(self) -> bool:
        if not self.guest.alive():
            return False
        return self.guest.run(["systemctl", "is-active", "--quiet", self.unit], COMMAND_TIMEOUT_S).rc == 0

    def signal(self, sig: int) -> None:
        if self.guest.alive():
            argv = ["systemctl", "kill", "--kill-whom=main", f"--signal={int(sig)}", self.unit]
            self.guest.run(argv, COMMAND_TIMEOUT_S)

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() > deadline:
                return None
            time.sleep(POLL_S)
        return 0


def starter(
    guest: Guest, ports: list[tuple[int, int]], definition: ServerDef, exits: ExitStack, ctx: BuildContext
) -> Starter:
    """The per-instance starter of a fleet in ``guest``: one root for every instance, one forwarded port each."""
    exits.enter_context(_server_root(guest, definition, ctx))

    @contextmanager
    def start(
        index: int, stack: StackSpec, definition: ServerDef, limits: Limits, mount: Mount, ctx: BuildContext
    ) -> Iterator[Endpoint]:
        host_port, guest_port = ports[index]
        with _home(guest, definition, index) as data:
            config = server_config(stack, data, "0.0.0.0", guest_port, limits, ctx.cache_dir, ctx.password)
            for name, text in definition.setup_files(config).items():
                _write(guest, str(Path(data).parent), name, text)
            prepare(guest, AS_SERVER, definition, config, index)
            for name, text in definition.config_files(config).items():
                _write(guest, data, name, text)
            with server_unit(guest, definition, index, [*AS_SERVER, *definition.argv(config)]) as h:
                wait_ready(h, definition, "127.0.0.1", host_port, ctx, index)
                info = {"guest_port": guest_port, "data_dir": data, "unit": h.unit, "accel": guest.accel,
                        "guest_kernel": guest.facts.get("kernel")}  # fmt: skip
                yield Endpoint(index, "127.0.0.1", host_port, config.memory, limits, h, info)

    return start


def prepare(guest: Guest, prefix: list[str], definition: ServerDef, config: ServerConfig, index: int) -> None:
    """The server's preparation (initdb), each step run in the guest behind ``prefix`` (as the server's user)."""
    for step in definition.prepare(config):
        done = guest.run([*prefix, *step], PREPARE_TIMEOUT_S)
        if done.rc != 0:
            raise ServerError(f"{definition.kind} #{index}: {Path(step[0]).name} exited {done.rc}:\n{done.stderr}")


@contextmanager
def _server_root(guest: Guest, definition: ServerDef, ctx: BuildContext) -> Iterator[None]:
    """The server's image, unpacked in the guest, with the guest's data filesystem, /dev and /proc in it."""
    paths = {**image.resolve(IMAGE_TOOLS), **definition.binaries(ctx.cache_dir)}
    entries, _, tag = image.recipe(paths, ctx, definition.files(ctx.cache_dir))
    with guest.staged_rootfs(entries, f"server-{tag}.tar") as tar:
        _run(guest, ["mkdir", "-p", ROOT])
        _run(guest, ["tar", "-xf", tar, "-C", ROOT])
    mounts = [  # (where in the root, the mount command)
        (f"{ROOT}{GUEST_MOUNT}", ["mount", "--bind", GUEST_MOUNT, f"{ROOT}{GUEST_MOUNT}"]),
        (f"{ROOT}/dev", ["mount", "--rbind", "/dev", f"{ROOT}/dev"]),
        (f"{ROOT}/proc", ["mount", "-t", "proc", "proc", f"{ROOT}/proc"]),
    ]
    mounted: list[str] = []
    try:
        for target, argv in mounts:
            _run(guest, ["mkdir", "-p", target])
            _run(guest, argv)
            mounted.append(target)
        yield
    finally:
        for target in reversed(mounted):
            _quietly(guest, ["umount", "--recursive", "--lazy", target])
        _quietly(guest, ["rm", "-rf", "--one-file-system", ROOT])


@contextmanager
def _home(guest: Guest, definition: ServerDef, index: int) -> Iterator[str]:
    home = f"{GUEST_MOUNT}/lb-db-{index}-{uuid.uuid4().hex[:6]}"
    data = f"{home}/{definition.kind}"
    _run(guest, ["mkdir", "-p", data])
    _run(guest, ["chown", f"{SERVER_UID}:{SERVER_UID}", home, data])
    _run(guest, ["chmod", "0700", home, data])
    try:
        yield data
    finally:
        _quietly(guest, ["rm", "-rf", home])


@contextmanager
def server_unit(
    guest: Guest,
    definition: ServerDef,
    index: int,
    command: list[str],
    handle: Callable[[Guest, str, Path], GuestHandle] = GuestHandle,
) -> Iterator[GuestHandle]:
    """``command`` as a transient unit of the guest, its output in the share; stopped with the server's own
    signal on the way out. ``handle`` makes what the fleet holds (how the server is signalled)."""
    unit = f"layerbench-{definition.kind}-{index}-{uuid.uuid4().hex[:6]}"
    (guest.share / "logs").mkdir(exist_ok=True)
    log = GUEST_SHARE / "logs" / f"{unit}.log"
    output = [f"--property=StandardOutput=file:{log}", f"--property=StandardError=file:{log}"]
    _run(guest, ["systemd-run", f"--unit={unit}", "--collect", "--quiet", *output, *command])
    h = handle(guest, unit, guest.share / "logs" / f"{unit}.log")
    try:
        yield h
    finally:
        handles.stop(h, definition.stop_signal, definition.stop_grace_s)


def _write(guest: Guest, directory: str, name: str, text: str) -> None:
    """A config file into the data directory, owned by the server's user, readable by it alone; its
    staged copy in the share is removed once installed (it may hold the run's password)."""
    staged = guest.put(f"{uuid.uuid4().hex[:8]}-{name}", text)
    path = f"{directory}/{name}"
    try:
        _run(guest, ["install", "-m", "0600", "-o", str(SERVER_UID), "-g", str(SERVER_UID), staged, path])
    finally:
        guest.unstage(staged)


def _run(guest: Guest, argv: list[str]) -> None:
    guest.run(argv, COMMAND_TIMEOUT_S).check()


def _quietly(guest: Guest, argv: list[str]) -> None:
    if guest.alive():
        with contextlib.suppress(ToolError):
            guest.run(argv, COMMAND_TIMEOUT_S)
