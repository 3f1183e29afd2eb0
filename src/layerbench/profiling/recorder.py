"""A CPU profile of one trial: perf across the whole machine while it runs.

Three perf processes: ``perf record`` (call stacks), ``perf stat`` (system
calls, context switches) and ``perf record -e sched:sched_switch`` (when the
workload waited, runnable, for a CPU). System-wide because a container's
workload is exec'd through its daemon: the process we start is the client,
not fio. Each perf process is in the ledger while it runs (a run killed mid-trial leaves them recording until cleanup
ends them), stopped with SIGINT as perf expects, and their files are folded
into a ``ProfileRecord`` kept with the trial. A profiler that fails is a note
on the profile, never a failed trial: the measurement stands without it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from layerbench.errors import LayerbenchError
from layerbench.proc import spawn
from layerbench.profiling import perf
from layerbench.records.trial import ProfileRecord
from layerbench.stack.handle import kill_if_same, marked_env, new_mark, start_time
from layerbench.stack.ledger import Ledger, tracked
from layerbench.stack.target import BuildContext

FREQUENCY_HZ = 99  # off the kernel's 100 Hz tick, so samples do not beat with timer work
READY_S = 30.0  # perf maps a buffer per CPU before it records: on a busy host that takes a while
STOP_S = 60.0  # perf record writes its build-ids on SIGINT
SCRIPT_S = 600.0


@dataclass
class Recording:
    """Filled in when the trial ends: the profile, or why there is none."""

    profile: ProfileRecord | None = None
    notes: list[str] = field(default_factory=list)


@contextmanager
def recording(ctx: BuildContext, comms: tuple[str, ...] = (), frequency: int = FREQUENCY_HZ) -> Iterator[Recording]:
    """Profile the machine for as long as the block runs; ``comms``: the workload's processes, whose time
    spent preempted (runnable, another process on its CPU) is counted too."""
    out = Recording()
    with _work_dir(ctx) as work:
        data, counts, switches = work / "perf.data", work / "stat.csv", work / "switches.data"
        t0 = time.monotonic()
        with (
            _perf(perf.record_argv(data, frequency), work / "record.log", ctx.ledger) as rec,
            _perf(perf.stat_argv(counts), work / "stat.log", ctx.ledger),
            _perf(perf.switches_argv(switches), work / "switches.log", ctx.ledger) as sw,
        ):
            _wait_started(rec, data)
            _wait_started(sw, switches)
            yield out  # the trial's own errors pass through untouched
        try:
            profile = _folded(data, counts, work, time.monotonic() - t0, frequency, ctx)
            waited = _preempted(switches, comms, ctx)
            out.profile = dataclasses.replace(profile, counters=profile.counters | waited)
        except (LayerbenchError, OSError) as exc:
            out.notes.append(f"no profile: {exc}")


@contextmanager
def _work_dir(ctx: BuildContext) -> Iterator[Path]:
    """perf's files (megabytes for a busy trial), in the ledger: a run killed while profiling leaves them
    for cleanup, not for ever."""

    def make(rid: int) -> Path:
        path.mkdir(mode=0o700)
        return path

    path = ctx.work_dir / f"lb-profile-{uuid.uuid4().hex[:8]}"
    with tracked(ctx.ledger, "dir", str(path), make, lambda p: shutil.rmtree(p, ignore_errors=True)) as made:
        yield made


def _preempted(switches: Path, comms: tuple[str, ...], ctx: BuildContext) -> dict[str, float]:
    """The workload's time preempted, and the processes that took its CPU most (the top five)."""
    if not comms or not switches.exists():
        return {}
    script = ctx.runner(perf.switches_script_argv(switches), timeout=SCRIPT_S).check()
    p = perf.preempted(script.stdout, comms)
    top = sorted(p.by.items(), key=lambda kv: -kv[1])[:5]
    return {"preemptions": float(p.count), "preempted_s": p.seconds} | {f"preempted_by:{c}": s for c, s in top}


@contextmanager
def _perf(argv: list[str], log: Path, ledger: Ledger) -> Iterator[subprocess.Popen[bytes]]:
    mark = new_mark()
    rid = ledger.record("process", argv[0], role="profiler", mark=mark)
    process = spawn(argv, log, env=marked_env(mark))
    try:
        ledger.update(rid, pid=process.pid, start_time=start_time(process.pid))
        yield process
    finally:
        _stop(process)
        ledger.removed(rid)


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    try:
        process.wait(STOP_S)
    except subprocess.TimeoutExpired:
        kill_if_same(process.pid, start_time(process.pid))
        process.wait()


def _wait_started(process: subprocess.Popen[bytes], data: Path) -> None:
    """perf record writes its file's header once its buffers are mapped: from then on it samples."""
    deadline = time.monotonic() + READY_S
    while not (data.exists() and data.stat().st_size > 0):
        if process.poll() is not None or time.monotonic() > deadline:
            return  # the profile will say what perf said; the trial runs regardless
        time.sleep(0.02)


def _folded(data: Path, counts: Path, work: Path, seconds: float, frequency: int, ctx: BuildContext) -> ProfileRecord:
    log = (work / "record.log").read_text(errors="replace")
    if not data.exists():
        raise LayerbenchError(f"perf record wrote nothing: {log.strip()[-400:]}")
    script = ctx.runner(perf.script_argv(data), timeout=SCRIPT_S).check()
    counters = perf.parse_stat(counts.read_text()) if counts.exists() else {}
    counters |= {"seconds": round(seconds, 3), "frequency_hz": float(frequency)}
    detail = "" if counters.keys() > {"context-switches"} else "perf stat counted nothing here"
    return ProfileRecord("cpu", perf.fold(script.stdout), counters, detail)
