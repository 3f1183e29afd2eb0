"""One trial: run the workload at the target under the monitor, parse, check.

Everything that can go wrong becomes data: a failed TrialRecord with a
category and the tool's stderr. Nothing here raises for a bad trial.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from layerbench.errors import ToolError
from layerbench.records.checks import Check
from layerbench.records.info import Prepared, TrialInfo
from layerbench.records.sample import Sample
from layerbench.records.trial import MonitorPoint, TrialRecord
from layerbench.run.measure.checks import FIO_REMEDY, accounting_blind, clock_bound, device_accounting, emulated
from layerbench.run.measure.monitor import Monitor, devices_beneath
from layerbench.run.measure.monitor_checks import bottleneck_check, contended_check
from layerbench.run.measure.mount_check import volatile_check
from layerbench.run.schedule import Trial
from layerbench.spec.models import FileWorkload, FioWorkload, StackSpec, Workload
from layerbench.spec.transports import without_device
from layerbench.stack.cgroups import mismatches, verdict
from layerbench.stack.engines import failure_category
from layerbench.stack.target import DEFAULT_CACHE, BuildContext, Device, Target
from layerbench.workloads import fio, fio_log, iozone, jobfile, registry
from layerbench.workloads.fio_kind import job_source

OnPoint = Callable[[str, float, str], None] | None  # BuildContext.on_monitor

# fio with 32 jobs needs a while to fork and lay out before its clock starts.
TRIAL_SLACK_S = 120.0


@dataclass
class Outcome:
    """What a trial produced, filled in as far as it got."""

    argv: list[str] = field(default_factory=list)
    status: str = "failed"
    category: str | None = None
    stdout: str = ""
    stderr: str = ""
    samples: list[Sample] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    monitor: list[MonitorPoint] = field(default_factory=list)
    info: TrialInfo = field(default_factory=TrialInfo)
    logs: dict[str, str] = field(default_factory=dict)  # the tool's logs as it wrote them ("lat": fio's)


def workload_argv(
    w: FileWorkload, target: Target, tools: Path = DEFAULT_CACHE, lat_log: str | None = None
) -> list[str]:
    """The workload's command line at the target; ``tools`` is where set-up put IOzone (its cache);
    ``lat_log``: the prefix of fio's latency logs (``lat_log_prefix``), None for none."""
    build = registry.of(w).argv
    assert build is not None  # a file workload's type builds its command
    return build(w, target, tools, lat_log)


def lat_log_prefix(w: FileWorkload, target: Target) -> str | None:
    """Where fio writes a workload's latency logs: in the placement directory, which goes with the stack (fio
    writes them as it exits, after the measured window); on a device, beside its job files (``put``'s
    directory), from where ``read_lat_log`` removes them."""
    if not registry.of(w).lat_log(w):
        return None
    if not target.path_is_device:
        return fio_log.prefix(target.path, w.name)
    marker = target.put(f"lb-{w.name}.lat", "fio's latency logs of this workload go beside this file\n")
    return fio_log.prefix(marker.rsplit("/", 1)[0], w.name)


def read_lat_log(target: Target, w: FioWorkload, prefix: str, out: Outcome) -> None:
    """The logs of every job, as fio wrote them, into ``out.logs["lat"]``; one that cannot be read is a note
    in the trial's info, never a failed trial (the results are fio's JSON)."""
    files = fio_log.files(prefix, w.numjobs)
    done = target.run(["cat", *files], READ_OUTPUT_S)
    out.info = replace(out.info, lat_log_ms=fio_log.interval_ms(w))
    if done.rc == 0:
        out.logs["lat"] = done.stdout
    else:
        out.info = replace(out.info, lat_log=f"unread: {done.stderr.strip()[:200]}")
    if target.path_is_device:  # beside the job files: this host's or a guest's run directory, which has rm
        marker = f"{prefix.rsplit('/', 1)[0]}/lb-{w.name}.lat"
        target.run(["rm", "-f", marker, *fio_log.written(prefix, w.numjobs)], READ_OUTPUT_S)


def watched(device: Device) -> str:
    """The block device whose counters judge a trial: the device under test, or, where fio's nbd engine
    reaches an export with no block device here, the backing device the storage host's qemu-nbd reads
    and writes with O_DIRECT (in this same kernel)."""
    return device.info.get("backing", device.path) if without_device(device.kind) else device.path


def needs_precondition(w: FileWorkload) -> bool:
    """Job files and personalities lay out their own files, as fio does, and IOzone writes its own before
    reading it; 'none' wants a fresh one."""
    return registry.of(w).needs_precondition(w)


def precondition(target: Target, workloads: list[FileWorkload]) -> dict[str, Prepared]:
    """Prepare each test file once per stack, as its workloads ask (a job file lays out its own)."""
    done: dict[str, Prepared] = {}
    # One preparation per file: the first workload that names a (size, mode) sets its window.
    firsts = {(int(w.size), w.precondition): w for w in reversed(workloads) if needs_precondition(w)}
    for (size, mode), w in sorted(firsts.items()):
        t0 = time.monotonic()
        timeout = size / 2**20 + 600 + TRIAL_SLACK_S
        outputs = [target.run(argv, timeout).check().stdout for argv in _precondition_steps(w, target)]
        # A cap reached means the device was still settling: a steady fill says so with the trial.
        steady = fio.steady_attained(outputs[-1]) if mode == "steady" else None
        done[f"{size}:{mode}"] = Prepared(seconds=round(time.monotonic() - t0, 3), steady_attained=steady)
    return done


def _precondition_steps(w: FioWorkload, target: Target) -> list[list[str]]:
    size = int(w.size)
    if w.precondition == "sparse":
        return [fio.sparse_argv(size, target.path)]
    steps = [fio.precondition_argv(size, target.path, target.path_is_device)]
    if w.precondition == "steady":
        steps.append(fio.steady_argv(size, target.path, target.path_is_device, window_s=w.ss_dur_s))
    return steps


def run_trial(
    target: Target,
    trial: Trial,
    prepared: dict[str, Prepared],
    tools: Path = DEFAULT_CACHE,
    on_monitor: OnPoint = None,
    latency_log: bool = False,
) -> TrialRecord:
    """``latency_log``: fio writes its latency log (the spec's ``latency_log``), which costs it CPU per I/O."""
    started = time.time()
    out = Outcome(info=TrialInfo(precondition=prepared, engine=target.engine))
    w = trial.cell.workload
    assert not w.needs_server  # the run loop sends database clients to a fleet
    attempt(out, lambda: _blocked_or_executed(target, w, out, tools, on_monitor, latency_log))
    # The target's facts as the trial left them: its io_uring probe's answer among them.
    out.info = replace(out.info, target=target.facts)
    return record(trial, started, out)


def attempt(out: Outcome, step: Callable[[], None]) -> None:
    """Run a trial's step; a tool that failed or a file that could not be read becomes the outcome's
    category and stderr, never an exception: the run goes on."""
    try:
        step()
    except ToolError as exc:
        out.category, out.stderr = category(exc.rc, exc.stderr), exc.stderr
        out.argv = out.argv or exc.argv
    except OSError as exc:
        out.category, out.stderr = "setup-error", f"{type(exc).__name__}: {exc}"


def _blocked_or_executed(
    target: Target, w: FileWorkload, out: Outcome, tools: Path, on_monitor: OnPoint, latency_log: bool
) -> None:
    blocked = io_uring_blocked(target, w)
    if blocked:
        out.category, out.stderr = "io_uring-blocked", blocked
        return
    _execute(target, w, out, tools, on_monitor, latency_log)


IO_URING_PROBE_S = 60.0
IO_URING_WHY = (
    "a container's seccomp profile that blocks io_uring (Docker 25 and later and containerd 2.0 do by default: "
    "moby pull request 46762, containerd pull request 9320) or a host's kernel.io_uring_disabled: use ioengine "
    "libaio, tuning seccomp-unconfined, or a profile that allows io_uring_setup, io_uring_enter and io_uring_register"
)


def io_uring_blocked(target: Target, w: FileWorkload) -> str | None:
    """Where the workload asks for io_uring: why this target refuses it, or None. One 4 KiB probe per
    target, before its first such trial; the answer stays in the target's info, so each trial records it."""
    if not registry.of(w).uses_io_uring(w):
        return None
    if target.path.startswith("nbd://"):
        return None  # fio's nbd engine, not io_uring, reaches an export
    if "io_uring" not in target.info:
        done = target.run(fio.io_uring_probe_argv(target.path, target.path_is_device), IO_URING_PROBE_S)
        said = fio.io_uring_refused(done.stdout + done.stderr) if done.rc != 0 else None
        target.info["io_uring"] = "allowed" if said is None else f"refused: {said}"
    answer = target.facts.io_uring or ""
    if not answer.startswith("refused"):
        return None
    return f"io_uring probe before the trial: {answer.removeprefix('refused: ')}; the usual cause is {IO_URING_WHY}"


def _execute(
    target: Target, w: FileWorkload, out: Outcome, tools: Path, on_monitor: OnPoint = None, latency_log: bool = False
) -> None:
    lat_log = lat_log_prefix(w, target) if latency_log else None
    out.argv = workload_argv(w, target, tools, lat_log)
    if w.kind == "fio" and w.job_file:  # what the workload gave its jobs, and which of them kept their own
        given = jobfile.options(jobfile.of_workload(w), target.path, target.path_is_device)
        out.info = replace(out.info, job_options=given)
    devices = devices_beneath(watched(target.device))
    cgroup = {k: Path(v) for k, v in target.facts.cgroup.items()} or None
    kind = registry.of(w)
    quiet = kind.quiet  # a report written to a file at the target and read once done (IOzone's table)
    report = quiet.file(target.path) if quiet else ""
    run_argv = quiet.argv(out.argv, report) if quiet else out.argv
    # The device's bytes from the end of fio's ramp, as fio counts its own (a job file's ramp is its own).
    ramp = kind.ramp_s(w)
    with Monitor(devices, cgroup=cgroup, count_from=ramp, on_point=on_monitor) as mon:
        done = target.run(run_argv, _time_limit(w))
    if quiet and done.rc == 0:
        done = target.run(quiet.read_argv(report), READ_OUTPUT_S)
    out.stdout, out.stderr = done.stdout, done.stderr
    out.monitor = [MonitorPoint(p.t, p.series, p.value, p.unit) for p in mon.points]
    if done.rc != 0:
        out.category = category(done.rc, done.stderr)
        return
    try:
        samples, tool_checks, bins = _measured(w, done.stdout, mon, target, devices)
    except registry.of(w).parse_errors as exc:
        out.category, out.stderr = "parse-error", f"{exc}\n{done.stderr}"
        return
    out.status, out.samples = "ok", samples
    if bins is not None:
        out.logs[fio.BINS_LOG] = bins
    out.checks = trial_checks(tool_checks, mon, target, devices[-1] if devices else "")
    if lat_log is not None:  # asked of fio alone (lat_log_prefix)
        read_lat_log(target, w, lat_log, out)


READ_OUTPUT_S = 120.0


def _time_limit(w: FileWorkload) -> float:
    return registry.of(w).time_limit_s(w, TRIAL_SLACK_S)


def _measured(
    w: FileWorkload, stdout: str, mon: Monitor, target: Target, devices: list[str]
) -> tuple[list[Sample], list[Check], str | None]:
    """The tool's samples, what the tool's own output lets us judge (whether the device saw the bytes fio
    says it moved; whether IOzone's clock could time its tests), and fio's completion histograms as the
    trial keeps them (``fio.bins_text``; None for IOzone): what the run reads of each tool's output beside
    its samples (the monitor's, the target's), by the workload's kind."""
    return MEASURED[w.kind](w, stdout, mon, target, devices)


def _fio_measured(
    w: FioWorkload, stdout: str, mon: Monitor, target: Target, devices: list[str]
) -> tuple[list[Sample], list[Check], str | None]:
    result = fio.parse(stdout)
    bins = fio.bins_text(fio.completion_bins(result))
    read = jobfile.of_workload(w) if w.job_file else None
    # A user's job file as fio read it (every job's options written out), for its stonewalls and groups.
    source = jobfile.rewrite(read, target.path, False) if read else job_source(w)
    phases = fio.group_phases(source) if source is not None else None  # which groups ran in turn
    fake = jobfile.without_device_io(read) if read else []
    if fake:
        why = f"ioengine={', '.join(fake)} moves no data through the device: nothing to account"
        return fio.samples(result, phases), [Check("device-accounting", "skip", why)], bins
    return fio.samples(result, phases), [_accounting(result, mon, target, devices)], bins


def _iozone_measured(
    w: FileWorkload, stdout: str, mon: Monitor, target: Target, devices: list[str]
) -> tuple[list[Sample], list[Check], str | None]:
    result = iozone.parse(stdout)
    skip = Check("device-accounting", "skip", "IOzone reports a rate per test, not the bytes each moved")
    fast = [f"{p.size_kb}k/{p.record_kb}k {d}" for p, d in iozone.at_the_clock(result)]
    total = sum(len(p.kbps) for p in result.points)
    return iozone.samples(result), [skip, clock_bound(fast, total, result.resolution_s)], None


Measured = Callable[[Any, str, Monitor, Target, list[str]], tuple[list[Sample], list[Check], str | None]]
# The run's own reading of each file workload's output (its checks read the monitor and the target, which
# workloads/ cannot import); by the workload's kind, as database.py's RUNNERS.
MEASURED: dict[str, Measured] = {"fio": _fio_measured, "iozone": _iozone_measured}


# 128 + SIGKILL: the kernel's OOM killer, or a timeout's kill, ended the tool.
KILLED_RC = 137


def category(rc: int | None, stderr: str) -> str:
    if rc is None:
        return "timeout"
    engine = failure_category(rc, stderr)
    if engine is not None:
        return engine  # e.g. engine-error: the container or its daemon is gone, the stack must be rebuilt
    if rc == KILLED_RC:
        return "killed"
    return "tool-error"


def trial_checks(tool_checks: list[Check], mon: Monitor, target: Target, lowest: str) -> list[Check]:
    facts = target.facts
    asked, enforced = facts.limits, facts.limits_enforced
    unseen = facts.unseen  # a machine other than this host ran the trial
    checks = [*tool_checks, bottleneck_check(mon, lowest, FIO_REMEDY, {"": asked or {}}, unseen)]
    checks.append(contended_check(mon, unseen))
    checks.append(volatile_check(target.path, facts.pid, target.path_is_device, target.mount_table))
    checks += emulated(facts.accel)
    if asked and enforced is None and facts.limits_set is not None:
        checks.append(set_not_enforced(asked, facts.limits_set))
    elif asked:
        checks.append(Check("limit-applied", *verdict(asked, enforced or {})))
    return checks


def set_not_enforced(asked: dict[str, object], limits_set: dict[str, object]) -> Check:
    """Limits a daemon on another machine set (a Docker host's): what it says it set, which this host cannot
    verify in that machine's kernel; flagged where even the daemon's account differs from the spec."""
    wrong = mismatches(asked, limits_set)
    if wrong:
        return Check("limit-applied", "flag", "the daemon set: " + "; ".join(wrong))
    said = ", ".join(f"{k}={limits_set.get(k)}" for k in asked)
    why = "its kernel's cgroup is not read from here: unverified"
    return Check("limit-applied", "skip", f"the daemon set {said}; {why}")


def _accounting(result: fio.FioResult, mon: Monitor, target: Target, devices: list[str]) -> Check:
    if target.facts.placement == "tmpfs":
        return Check("device-accounting", "skip", "tmpfs: the data lives in memory, no device to account")
    blind = accounting_blind(devices, target.device.kind == "loop", set(mon.totals))
    if blind is not None:
        return Check("device-accounting", "skip", blind)
    lowest = devices[-1]
    moved = mon.totals[lowest]
    read = sum(d.io_bytes for j in result.jobs for k, d in j.directions.items() if k == "read")
    written = sum(d.io_bytes for j in result.jobs for k, d in j.directions.items() if k == "write")
    return device_accounting(lowest, read, written, moved.read_bytes, moved.write_bytes)


def record(trial: Trial, started: float, out: Outcome) -> TrialRecord:
    return TrialRecord(
        cell_id=trial.cell.id,
        repetition=trial.repetition,
        status=out.status,
        category=None if out.status == "ok" else (out.category or "unknown"),
        started_at=started,
        ended_at=time.time(),
        argv=out.argv,
        raw_output=out.stdout,
        stderr=out.stderr,
        info=out.info,
        samples=out.samples,
        checks=list(out.checks),
        monitor=out.monitor,
        logs=out.logs,
    )


class Single:
    """One file workload at one stack's placement: the kind of every stack without servers or clients."""

    name = "single"

    def accepts(self, stack: StackSpec) -> bool:
        return True

    def prepare(self, placed: Target, workloads: list[Workload], ctx: BuildContext) -> dict[str, Any]:
        return precondition(placed, workloads)

    def run(
        self, placed: Target, trial: Trial, prepared: dict[str, Any], ctx: BuildContext, latency_log: bool
    ) -> TrialRecord:
        return run_trial(placed, trial, prepared, ctx.cache_dir, ctx.on_monitor, latency_log)


KIND = Single()
