"""The one place that starts a process.

Argument lists only (never a shell string), a timeout on everything, and the
whole process group killed if the caller is interrupted, so a Ctrl-C never
leaves a fio or mkfs running behind us.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from layerbench.errors import ToolError

DEFAULT_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Completed:
    argv: list[str]
    rc: int
    stdout: str
    stderr: str

    def check(self) -> Completed:
        if self.rc != 0:
            raise ToolError(self.argv, self.rc, self.stderr or self.stdout)
        return self


class Runner(Protocol):
    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        started: Callable[[int], None] | None = None,
    ) -> Completed: ...


def run(
    argv: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    started: Callable[[int], None] | None = None,
    cwd: str | None = None,
) -> Completed:
    """Run ``argv`` to completion (in ``cwd`` if given); never raises for a non-zero exit (see ``check``).

    ``started`` gets the PID once the process exists (the ledger records workloads that way, so a
    killed run's fio does not outlive it). Raises ToolError with rc=None on timeout, after killing
    the process group.
    """
    args = [str(a) for a in argv]
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(env) if env is not None else None,
            start_new_session=True,
            cwd=cwd,
        )
    except FileNotFoundError as exc:
        raise ToolError(args, 127, f"{args[0]}: not found on PATH") from exc
    try:
        if started is not None:
            started(proc.pid)
        out, err = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        raise ToolError(args, None, f"timed out after {timeout:.0f}s\n{err}") from None
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    return Completed(args, proc.returncode, out, err)


def run_all(
    argvs: Sequence[Sequence[str]], *, timeout: float = DEFAULT_TIMEOUT_S, env: Mapping[str, str] | None = None
) -> list[Completed]:
    """Run several commands at once (one client per database server), each to completion, in ``env``
    (this process's environment unless given).

    They start together, in their own sessions; if the caller is interrupted, or
    one of them outlives ``timeout``, every one still running is killed with its
    group (ToolError with rc=None for the one that timed out).
    """
    procs: list[subprocess.Popen[str]] = []
    try:
        for argv in argvs:
            args = [str(a) for a in argv]
            try:
                procs.append(
                    subprocess.Popen(
                        args,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                        env=dict(env) if env is not None else None,
                        start_new_session=True,
                    )
                )
            except FileNotFoundError as exc:
                raise ToolError(args, 127, f"{args[0]}: not found on PATH") from exc
        return _collect_all(procs, timeout)
    except BaseException:
        for proc in procs:
            _kill_group(proc)
            proc.wait()
        raise


def _collect_all(procs: list[subprocess.Popen[str]], timeout: float) -> list[Completed]:
    # communicate() on each in a thread of its own: a full pipe must never stall another client.
    outputs: dict[int, tuple[str, str] | BaseException] = {}

    def collect(i: int) -> None:
        try:
            outputs[i] = procs[i].communicate(timeout=timeout)
        except BaseException as exc:  # reported below, in the caller's thread
            outputs[i] = exc

    threads = [threading.Thread(target=collect, args=(i,), daemon=True) for i in range(len(procs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = []
    for i, proc in enumerate(procs):
        got = outputs[i]
        if isinstance(got, subprocess.TimeoutExpired):
            raise ToolError([str(a) for a in proc.args], None, f"timed out after {timeout:.0f}s")
        if isinstance(got, BaseException):
            raise got
        done.append(Completed([str(a) for a in proc.args], proc.returncode, got[0], got[1]))
    return done


def spawn(
    argv: Sequence[str],
    log: Path,
    *,
    env: Mapping[str, str] | None = None,
    user: int | None = None,
    die_with_parent: bool = False,
) -> subprocess.Popen[bytes]:
    """Start a long-lived process (a daemon, a database server) with its output in ``log``.

    ``run`` waits for its process to end; a server must outlive the call. Its own
    session lets teardown signal its whole group; ``user`` drops to that uid (and
    its gid, with no supplementary groups) before exec: PostgreSQL refuses root.
    ``die_with_parent``: the kernel SIGKILLs it when the thread that started it ends, however that
    ends (util-linux's setpriv sets the parent-death signal, then execs it), for a helper that no
    ledger records because it lives only inside one call, such as a probe. Until setpriv has armed
    the signal (its first milliseconds) a caller's death leaves the helper be.
    """
    args = [str(a) for a in argv]
    if die_with_parent:
        args = ["setpriv", "--pdeathsig", "KILL", "--", *args]
    ids: dict[str, object] = {"user": user, "group": user, "extra_groups": []} if user is not None else {}
    with log.open("ab") as out:
        try:
            return subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                start_new_session=True,
                **ids,  # type: ignore[arg-type]
            )
        except FileNotFoundError as exc:
            raise ToolError(args, 127, f"{args[0]}: not found on PATH") from exc


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone: nothing to kill
        os.killpg(proc.pid, signal.SIGKILL)


@dataclass
class FakeRunner:
    """Stands in for ``run`` in tests: records every argv, answers from a table.

    ``answers`` maps the program name (argv[0]) to a Completed-like triple.
    """

    answers: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    calls: list[list[str]] = field(default_factory=list)

    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        started: Callable[[int], None] | None = None,
    ) -> Completed:
        args = [str(a) for a in argv]
        self.calls.append(args)
        rc, out, err = self.answers.get(os.path.basename(args[0]), (0, "", ""))
        return Completed(args, rc, out, err)
