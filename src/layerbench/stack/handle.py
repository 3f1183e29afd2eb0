"""Long-lived processes a stack runs (database servers), natively or in a container.

One interface for both: the host PID, a log file on the host, a signal, a
wait. Natively that is a process of our own session; in a container it is a
``docker exec`` whose output a thread streams into the log file, and whose
host PID the daemon reports, so it is signalled the same way.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from layerbench.errors import ToolError
from layerbench.proc import spawn

POLL_S = 0.05
PID_WAIT_S = 10.0
# The environment variable that marks a process with its ledger row (see ``marked_env``).
MARK_VARIABLE = "LAYERBENCH_RESOURCE"


class Handle(Protocol):
    log: Path

    @property
    def pid(self) -> int: ...

    def alive(self) -> bool: ...

    def signal(self, sig: int) -> None: ...

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None if still running after ``timeout`` seconds."""
        ...


@dataclass
class NativeHandle:
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):  # its own session: the server and its workers
            os.killpg(self.process.pid, sig)

    def wait(self, timeout: float) -> int | None:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None


def start_native(argv: Sequence[str], log: Path, user: int | None) -> NativeHandle:
    return NativeHandle(spawn(argv, log, user=user), log)


@dataclass
class ExecHandle:
    api: Any  # docker.APIClient
    exec_id: str
    log: Path
    _pid: int = 0
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self._pid

    def alive(self) -> bool:
        return bool(self.api.exec_inspect(self.exec_id).get("Running"))

    def signal(self, sig: int) -> None:
        if self._pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, sig)

    def wait(self, timeout: float) -> int | None:
        return _await_exit(self._exit_code, self._thread, timeout)

    def _exit_code(self) -> int | None:
        state = self.api.exec_inspect(self.exec_id)
        done = not state.get("Running") and state.get("ExitCode") is not None
        return int(state["ExitCode"]) if done else None


def start_exec(api: Any, container_id: str, argv: Sequence[str], log: Path, user: int | None) -> ExecHandle:
    """``argv`` exec'd in the container as ``user``; its output streamed into ``log`` by a thread."""
    args = [str(a) for a in argv]
    owner = f"{user}:{user}" if user is not None else ""
    exec_id = api.exec_create(container_id, args, stdout=True, stderr=True, user=owner)["Id"]
    handle = ExecHandle(api, exec_id, log)
    handle._thread = _follow(api.exec_start(exec_id, stream=True), log)
    handle._pid = _exec_pid(api, exec_id, args)
    return handle


@dataclass
class ContainerHandle:
    """A container whose own process is the server (an image server): its log is the container's."""

    container: Any  # docker.models.containers.Container
    log: Path
    _pid: int = 0
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self._pid

    def alive(self) -> bool:
        self.container.reload()
        return bool(self.container.attrs["State"]["Running"])

    def signal(self, sig: int) -> None:
        with contextlib.suppress(Exception):  # gone already: nothing to signal
            self.container.kill(signal=int(sig))

    def wait(self, timeout: float) -> int | None:
        return _await_exit(self._exit_code, self._thread, timeout)

    def _exit_code(self) -> int | None:
        return None if self.alive() else int(self.container.attrs["State"]["ExitCode"])


def follow_container(container: Any, log: Path) -> ContainerHandle:
    """A started container as a server's handle; its output streamed into ``log`` by a thread."""
    container.reload()
    handle = ContainerHandle(container, log, int(container.attrs["State"]["Pid"]))
    handle._thread = _follow(container.logs(stream=True, follow=True), log)
    return handle


def _await_exit(exit_code: Callable[[], int | None], drain: threading.Thread | None, timeout: float) -> int | None:
    """Poll ``exit_code`` (None while running) for up to ``timeout`` s; once it ends, let its log catch up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = exit_code()
        if code is not None:
            if drain is not None:
                drain.join(1.0)
            return code
        time.sleep(POLL_S)
    return None


def _follow(stream: Any, log: Path) -> threading.Thread:
    """A thread that copies ``stream`` into ``log`` until it ends."""
    thread = threading.Thread(target=_drain, args=(stream, log), daemon=True)
    thread.start()
    return thread


def _drain(stream: Any, log: Path) -> None:
    with log.open("ab") as out, contextlib.suppress(Exception):  # the stream ends as the container goes
        for chunk in stream:
            out.write(chunk)
            out.flush()


def _exec_pid(api: Any, exec_id: str, args: list[str]) -> int:
    deadline = time.monotonic() + PID_WAIT_S
    while time.monotonic() < deadline:
        state = api.exec_inspect(exec_id)
        if state.get("Pid"):
            return int(state["Pid"])
        if not state.get("Running") and state.get("ExitCode") is not None:
            return 0  # already over (it failed at once); wait() gives its exit code
        time.sleep(POLL_S)
    raise ToolError(args, None, f"docker exec did not report a PID within {PID_WAIT_S:.0f}s")


def stop(handle: Handle, sig: int, grace_s: float) -> int | None:
    """``sig`` (the server's clean shutdown), then SIGKILL if it has not ended within ``grace_s``."""
    handle.signal(sig)
    code = handle.wait(grace_s)
    if code is None:
        handle.signal(signal.SIGKILL)
        code = handle.wait(10.0)
    return code


# The most of a log's end read for an error message.
LOG_TAIL_BYTES = 2**20


def log_tail(log: Path, lines: int = 15) -> str:
    """A server log's last lines. A guest's server writes its log into the 9p share, where the guest is root:
    a symbolic link there is not followed, nor anything but a regular file read, and only its last MiB."""
    try:
        fd = os.open(log, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return "(no log)"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "(the log is not a regular file: not read)"
        os.lseek(fd, max(0, info.st_size - LOG_TAIL_BYTES), os.SEEK_SET)
        text = os.read(fd, LOG_TAIL_BYTES).decode(errors="replace")
    except OSError:
        return "(no log)"
    finally:
        os.close(fd)
    return "\n".join(text.strip().splitlines()[-lines:]) or "(empty log)"


def start_time(pid: int) -> str | None:
    """The live process's start time in clock ticks since boot (with the PID, it names one process);
    None if there is none, or only a zombie waiting to be reaped."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def new_mark() -> str:
    return uuid.uuid4().hex[:16]


def marked_env(mark: str) -> dict[str, str]:
    """This process's environment, plus ``mark``. A row is recorded before its process exists and gets
    the PID only after: a run killed in between leaves a row without a PID and a process that runs on.
    The mark, inherited by the process and its children, lets cleanup find them all the same."""
    return {**os.environ, MARK_VARIABLE: mark}


def kill_marked(mark: str) -> None:
    """Kill every process whose environment carries ``mark``, with its group, and wait for each to go."""
    needle = f"{MARK_VARIABLE}={mark}".encode()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            marked = needle in (proc / "environ").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or a kernel thread
            continue
        if marked:
            kill_if_same(int(proc.name), start_time(int(proc.name)))


def kill_if_same(pid: int, started: str | None, wait_s: float = 10.0) -> None:
    """Kill the process group of ``pid`` only if it is still the process we started (PIDs are reused),
    and wait for it to be gone."""
    if pid <= 0 or started is None or start_time(pid) != started:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    while (start_time(pid) == started or _threads_exiting(pid)) and time.monotonic() < deadline:
        time.sleep(POLL_S)


def _threads_exiting(pid: int) -> bool:
    """Whether threads of ``pid`` still run after its leader became a zombie: the process's files (a
    device it held open) are released only when the last of them is gone."""
    try:
        states = [(t / "stat").read_text().rsplit(")", 1)[1].split()[0] for t in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return False
    return any(state not in ("Z", "X") for state in states)
