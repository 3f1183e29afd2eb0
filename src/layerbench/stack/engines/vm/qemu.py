"""A Debian guest under qemu: a modern host (systemd as PID 1, cgroup v2, every kernel module) on any
host that has qemu, for proving what this host cannot show.

The image is built once by tools/vm/build-image.sh into the cache. A guest boots it with
``snapshot=on`` (the cached image never changes), gets folders of the host over 9p at the same paths
(so the host's checkout and venv run unchanged inside), runs one script, writes its output and exit
code back to the share and powers off. KVM where it really runs a guest, TCG otherwise: an emulated
CPU is 10-50x slower, so a TCG guest proves function, never speed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from layerbench.errors import LayerbenchError, PrerequisiteError, ToolError
from layerbench.proc import spawn

QEMU = "qemu-system-x86_64"
SUITE = "bookworm"
SHARE_TAG = "lbshare"
# How long the probe waits for the banner. Under TCG this host's qemu printed it 3.9 s after its start
# (2026-11-29); under KVM it comes sooner. Where /dev/kvm opens but runs nothing, qemu prints nothing and
# spins a core in the kernel until killed, so every probe on such a host waits this long.
KVM_PROBE_TIMEOUT_S = 20.0
# What a booting kernel prints first on the serial console: the probe's proof that the CPU ran it.
KERNEL_BANNER = "Linux version"
# The CPU an emulated guest is given: Nehalem's x86-64-v2 (what numpy's wheels need at least) and
# nothing newer. TCG's AVX, AVX2 and BMI emulation is young in Debian's qemu 7.2: with ``-cpu max``,
# numpy's and pandas' AVX2 sorting crashed (SIGSEGV) or hung guests that ran the same code cleanly on
# the host. Nehalem keeps the guest's libraries on their long-emulated SSE paths.
TCG_CPU = "Nehalem"
# A booting kernel writes to the console every few seconds until it starts init. Under TCG one stopped
# there for good (its console ended at the kernel's 3.65 s while qemu spun both cores for 14 minutes):
# a console silent this long before init is a hung boot, and the guest is killed and booted again.
KERNEL_STALL_S = 120.0
# What the kernel prints as it frees its boot-time memory, just before it starts init: past it, the
# console may rightly stay silent while systemd works (the guest's units print nothing).
INIT_HANDOFF = "Freeing unused kernel"
BOOT_ATTEMPTS = 2
# The share's own files (tools/vm/guest/run-host-script): the rest is what the script left for the host.
CHANNEL_FILES = frozenset({"script", "mounts", "output", "rc"})
# The most the host reads of one file a guest left in the share: a guest's output, a command's answer.
GUEST_FILE_LIMIT = 64 * 2**20


@dataclass(frozen=True)
class GuestImage:
    directory: Path

    @property
    def kernel(self) -> Path:
        return self.directory / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.directory / "initrd.img"

    @property
    def rootfs(self) -> Path:
        return self.directory / "rootfs.img"


@dataclass(frozen=True)
class Share:
    """A host folder the guest mounts read-only at the same path (``tag`` names it on the 9p bus)."""

    tag: str
    path: Path


@dataclass(frozen=True)
class GuestRun:
    rc: int | None  # None: the script never reported (the guest did not boot, or timed out)
    output: str  # the script's stdout and stderr
    console: str  # the serial console: kernel and systemd messages, for a guest that failed
    accel: str
    seconds: float
    files: dict[str, str]  # what else the script wrote into the share, by path relative to it


class ConsoleWatch:
    """Has a booting kernel hung? Its console silent KERNEL_STALL_S before it started init."""

    def __init__(self, console: Path) -> None:
        self.console = console
        self.size, self.changed, self.past_init = -1, time.monotonic(), False

    def hung(self) -> bool:
        now = time.monotonic()
        size = self.console.stat().st_size if self.console.exists() else 0
        if size != self.size:
            self.size, self.changed = size, now
            self.past_init = self.past_init or INIT_HANDOFF in read(self.console)
            return False
        return not self.past_init and now - self.changed > KERNEL_STALL_S


def find_image(cache_dir: Path) -> GuestImage | None:
    """The newest complete image in the cache, or None (build it with tools/vm/build-image.sh)."""
    complete = sorted((cache_dir / "vm").glob(f"{SUITE}-*/complete"), key=lambda p: p.stat().st_mtime)
    return GuestImage(complete[-1].parent) if complete else None


def missing(cache_dir: Path) -> str | None:
    """Why no guest can boot here, or None."""
    if not _on_path(QEMU):
        return f"{QEMU} is not installed (apt-get install qemu-system-x86)"
    if find_image(cache_dir) is None:
        return f"no test VM image in {cache_dir}/vm (make vm-image builds it, about 10 minutes)"
    return None


def qemu_argv(
    image: GuestImage,
    accel: str,
    share: Path,
    shares: Sequence[Share],
    console: Path,
    memory_mib: int = 4096,
    cpus: int = 2,
    disks: Sequence[str] = (),
    pidfile: Path | None = None,
    forwards: Sequence[tuple[int, int]] = (),
) -> list[str]:
    # apparmor=0: the image has no AppArmor userspace, and dockerd warns that docker-default cannot load.
    # net.ifnames=0: the guest's one network card is eth0, whatever bus it sits on.
    # rootflags=noinit_itable: the root image is booted with snapshot=on, so ext4lazyinit would zero its
    # inode tables again on every boot; under emulation that kept both CPUs busy for minutes (soft lockups
    # of ext4lazyinit and systemd in the console, a guest stuck past 13 minutes).
    append = (
        "root=/dev/vda rw rootflags=noinit_itable console=ttyS0 apparmor=0 panic=-1 systemd.show_status=0 net.ifnames=0"
    )
    argv = [
        QEMU,
        "-name", "layerbench-vm",
        "-machine", "q35",
        "-accel", "kvm" if accel == "kvm" else "tcg,thread=multi",
        "-cpu", "host" if accel == "kvm" else TCG_CPU,
        "-smp", str(cpus),
        "-m", str(memory_mib),
        "-nodefaults", "-display", "none", "-no-reboot",
        "-kernel", str(image.kernel),
        "-initrd", str(image.initrd),
        "-append", append,
        "-drive", f"file={image.rootfs},if=virtio,format=raw,snapshot=on",
        "-device", "virtio-rng-pci",
        "-serial", f"file:{console}",
        "-virtfs", f"local,path={share},mount_tag={SHARE_TAG},security_model=none,id={SHARE_TAG}",
    ]  # fmt: skip
    for s in shares:
        argv += ["-virtfs", f"local,path={s.path},mount_tag={s.tag},security_model=none,readonly=on,id={s.tag}"]
    # Data disks (the guest's /dev/vdb, ...) bypass the host's page cache (cache=none is O_DIRECT), as a
    # VM host set up for I/O runs them: the device under the stack sees the guest's every read and write.
    for path in disks:
        argv += ["-drive", f"file={path},if=virtio,format=raw,cache=none,aio=native"]
    if pidfile is not None:
        argv += ["-pidfile", str(pidfile)]
    if forwards:  # user-mode networking, restricted: the guest reaches nothing; the host reaches these ports
        rules = "".join(f",hostfwd=tcp:127.0.0.1:{host}-:{guest}" for host, guest in forwards)
        argv += ["-netdev", f"user,id=lbnet,restrict=on{rules}", "-device", "virtio-net-pci,netdev=lbnet"]
    return argv


def kvm_usable(image: GuestImage, work_dir: Path) -> bool:
    """Does KVM really run a guest here? A device node is not proof: on some hosts /dev/kvm opens
    but every guest fails. The probe boots the image's kernel with no disk and waits for its banner."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    console = work_dir / "kvm-probe.console"
    argv = [
        QEMU, "-accel", "kvm", "-cpu", "host", "-m", "256", "-nodefaults", "-display", "none", "-no-reboot",
        "-kernel", str(image.kernel), "-append", "console=ttyS0 panic=-1", "-serial", f"file:{console}",
    ]  # fmt: skip
    # Never outlives this process: a caller killed mid-probe (a command's timeout) left qemus spinning
    # both cores for 40 minutes (2026-11-29).
    process = spawn(argv, work_dir / "kvm-probe.log", die_with_parent=True)
    try:
        deadline = time.monotonic() + KVM_PROBE_TIMEOUT_S
        while time.monotonic() < deadline and process.poll() is None:
            if KERNEL_BANNER in read(console):
                return True
            time.sleep(0.2)
        return KERNEL_BANNER in read(console)
    finally:
        kill(process)


def run_script(
    image: GuestImage,
    script: str,
    shares: Sequence[Share],
    timeout: float,
    work_dir: Path,
    accel: str | None = None,
) -> GuestRun:
    """Boot a guest, run ``script`` (POSIX sh) in it as root, and return its output once it powered off.

    The script finds the share at /mnt/lbshare: files it writes there come back in ``GuestRun.files``.

    The guest is killed (by PID) when ``timeout`` passes or the caller is interrupted.
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    accel = accel or accel_for(image, work_dir)
    with tempfile.TemporaryDirectory(dir=work_dir, prefix="share-") as tmp:
        share = Path(tmp)
        prepare_share(share, script, shares)
        console = work_dir / "console.log"
        started = time.monotonic()
        argv = qemu_argv(image, accel, share, shares, console)
        for _ in range(BOOT_ATTEMPTS):  # a kernel that hung never ran the script: boot it again
            console.unlink(missing_ok=True)
            process = spawn(argv, work_dir / "qemu.log")
            try:
                hung = _wait(process, started + timeout, ConsoleWatch(console))
            finally:
                kill(process)
            if not hung:
                break
        seconds = time.monotonic() - started
        if process.returncode not in (0, -signal.SIGKILL) and not (share / "rc").exists():
            raise ToolError(argv, process.returncode, read(work_dir / "qemu.log"))
        rc_text = _left(share, "rc").strip()
        files = {rel: guest_text(share, rel) for rel in guest_files(share) if rel not in CHANNEL_FILES}
        return GuestRun(
            int(rc_text) if rc_text.lstrip("-").isdigit() else None,
            _left(share, "output"),
            read(console),
            accel,
            seconds,
            files,
        )


def _wait(process: subprocess.Popen[bytes], deadline: float, watch: ConsoleWatch) -> bool:
    """Until the guest powers off or ``deadline`` passes; True if its kernel hung first."""
    while process.poll() is None and time.monotonic() < deadline:
        if watch.hung():
            return True
        time.sleep(0.2)
    return False


def prepare_share(share: Path, script: str, shares: Sequence[Share]) -> None:
    """The channel's files: the script the guest's boot unit runs, and the folders it mounts."""
    (share / "script").write_text(script)
    (share / "mounts").write_text("".join(f"{s.tag} {s.path}\n" for s in shares))


def accel_for(image: GuestImage, work_dir: Path) -> str:
    """ "kvm" where a probe guest ran under KVM, else "tcg"; probed once per image and process (a host's
    KVM does not come and go within a run), in a folder of ``work_dir`` that is removed after."""
    if image.directory not in _ACCEL:
        with tempfile.TemporaryDirectory(dir=work_dir, prefix="kvm-probe-") as tmp:
            _ACCEL[image.directory] = "kvm" if kvm_usable(image, Path(tmp)) else "tcg"
    return _ACCEL[image.directory]


_ACCEL: dict[Path, str] = {}


class GuestFileError(LayerbenchError):
    """A file in the guest's share that the host will not read: a link, not a regular file, or too large."""


def guest_text(share: Path, rel: str, limit: int = GUEST_FILE_LIMIT) -> str:
    """A file the guest wrote at ``rel`` below ``share``, read as root on the host without following a
    symbolic link at any step (the guest, root in its own right, could point one at any host file) and
    only if it is a regular file of at most ``limit`` bytes. FileNotFoundError if it is not there."""
    parts = [p for p in Path(rel).parts if p not in ("", ".")]
    if not parts or ".." in parts or Path(rel).is_absolute():
        raise GuestFileError(f"{rel!r} is not a path inside the guest's share")
    fd = os.open(share, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            fd = _step(fd, part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, rel)
        # O_NONBLOCK: a FIFO the guest left opens at once, and is refused below as not a regular file.
        fd = _step(fd, parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, rel)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise GuestFileError(f"the guest's {rel} is not a regular file; not read")
        if info.st_size > limit:
            raise GuestFileError(f"the guest's {rel} holds {info.st_size} bytes, more than the {limit} read")
        chunks, size = [], 0
        while size <= limit:  # it may grow while read: never past the limit
            chunk = os.read(fd, min(2**20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise GuestFileError(f"the guest's {rel} grew past the {limit} bytes read")
        return b"".join(chunks).decode(errors="replace")
    finally:
        os.close(fd)


def _step(fd: int, name: str, flags: int, rel: str) -> int:
    """``name`` opened below the directory ``fd``, which is then closed; on an error ``fd`` stays open."""
    try:
        nxt = os.open(name, flags, dir_fd=fd)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            raise GuestFileError(f"the guest's {rel} passes through a symbolic link or a non-directory") from err
        raise
    os.close(fd)
    return nxt


def guest_files(share: Path) -> list[str]:
    """The regular files below ``share`` (relative paths, sorted); links are neither followed nor listed."""
    found = []
    for root, _dirs, names in os.walk(share, followlinks=False):
        for name in names:
            path = Path(root, name)
            if stat.S_ISREG(path.lstat().st_mode):
                found.append(str(path.relative_to(share)))
    return sorted(found)


def _left(share: Path, rel: str) -> str:
    """A channel file the guest may not have written (it stopped first): "" then."""
    try:
        return guest_text(share, rel)
    except FileNotFoundError:
        return ""


def require(cache_dir: Path) -> GuestImage:
    reason = missing(cache_dir)
    if reason is not None:
        raise PrerequisiteError(reason, hint="make vm-image")
    image = find_image(cache_dir)
    assert image is not None  # missing() said so
    return image


def kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _on_path(name: str) -> bool:
    return any(Path(d, name).is_file() for d in os.environ.get("PATH", "").split(os.pathsep) if d)
