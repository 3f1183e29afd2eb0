"""The perf adapter: command lines in, folded stacks and counters out. Nothing here starts a process.

What perf 6.1 does that shapes this module (each seen on the development host, a 2-core VM;
tests/data/perf/README.md has the captures):

- ``perf record -a``: a container's workload is exec'd through its daemon, not as our child, so
  only a system-wide profile sees it. ``-e cpu-clock``: VMs rarely expose hardware events.
- ``perf script`` prints one sample as a header line (the process's comm first, then pid/tid
  and whatever else was asked for), its call chain leaf first (one frame a line, indented:
  ``address symbol[+0xoffset] (dso)``), and a blank line. The default format adds the CPU,
  a timestamp, the event and ``+0x`` offsets; ``script_argv`` asks for neither.
- Frame-pointer unwinding through binaries built without frame pointers (fio, libc) goes on
  past the last real frame with garbage addresses: up to 127 ``[unknown] ([unknown])`` frames.
- A comm may contain spaces (``prctl(PR_SET_NAME)`` allows any 15 bytes), so the header is
  split from the right, where perf's own fields are.
- ``perf stat -x,`` writes CSV (value, unit, event, run time, share of time counted, metric,
  metric unit) after ``#`` comment lines; a counter it could not read has ``<not counted>``
  or ``<not supported>`` as its value.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from layerbench.errors import LayerbenchError, SpecError
from layerbench.proc import Runner

KERNEL_SUFFIX = "_[k]"
# Counters read by ``stat_argv``: how often the workload's threads switched and entered the kernel.
STAT_EVENTS = ("context-switches", "raw_syscalls:sys_enter", "cpu-clock")
# Bracketed dsos that are user space; any other bracketed dso is the kernel or one of its modules.
_USER_PSEUDO_DSOS = frozenset({"[vdso]", "[vsyscall]", "[heap]", "[stack]", "[uprobes]", "[unknown]"})
_NOT_COUNTED = frozenset({"<not counted>", "<not supported>"})
# A sample's header: the comm, then the pid (or pid/tid), then perf's optional fields: CPU,
# timestamp, period, event name (and a tracepoint's payload after it). The comm is matched
# lazily and the rest anchored, so a comm with spaces (even one ending in digits) backtracks
# into place. Run once per sample, never per frame.
_HEADER = re.compile(
    r"^(?P<comm>\S.*?)\s+\d+(?:/\d+)?"
    r"(?:\s+\[\d+\])?"
    r"(?:\s+\d+\.\d+:)?"
    r"(?:\s+\d+)?"
    r"(?:\s+\S+:.*)?\s*$"
)


class PerfError(LayerbenchError):
    """perf's output is not what this adapter can read (truncated, another format, not perf's)."""


def record_argv(output: Path, frequency: int = 99) -> list[str]:
    """Sample every CPU's call stacks at ``frequency`` Hz until the command is interrupted.

    99 Hz rather than 100 so sampling does not beat in step with the kernel's timer tick.
    """
    if frequency < 1:
        raise SpecError(f"perf sampling frequency must be at least 1 Hz, not {frequency}")
    return ["perf", "record", "-e", "cpu-clock", "-F", str(frequency), "-a", "-g", "-o", str(output)]


def stat_argv(output: Path) -> list[str]:
    """Count context switches, system calls and CPU time on every CPU, as CSV, until SIGINT."""
    return ["perf", "stat", "-a", "-x", ",", "-e", ",".join(STAT_EVENTS), "-o", str(output)]


def script_argv(data: Path) -> list[str]:
    """Print ``perf record``'s samples with only what ``fold`` reads: no timestamps, no offsets."""
    return ["perf", "script", "-F", "comm,pid,tid,period,ip,sym,dso", "-i", str(data)]


def switches_argv(output: Path) -> list[str]:
    """Record every context switch on every CPU (no call chains: one line each), until SIGINT.

    What a CPU profile cannot see: time the workload was ready to run but another process had
    its CPU (preempted), and who that was.
    """
    return ["perf", "record", "-e", "sched:sched_switch", "-a", "-o", str(output)]


def switches_script_argv(data: Path) -> list[str]:
    return ["perf", "script", "-F", "comm,tid,time,trace", "-i", str(data)]


@dataclass(frozen=True)
class Preempted:
    """How often and how long the workload's threads were taken off a CPU while still runnable."""

    count: int
    seconds: float
    by: dict[str, float]  # the process that took the CPU → seconds the workload waited for it


# One sched_switch line: "comm tid time: prev_comm=A prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=B
# next_pid=2 next_prio=120"; comms may hold spaces, so each is matched up to the field that follows it.
_SWITCH = re.compile(
    r"\s(?P<time>\d+\.\d+): prev_comm=(?P<prev>.*?) prev_pid=(?P<prev_pid>\d+) .*?prev_state=(?P<state>\S+)"
    r" ==> next_comm=(?P<next>.*?) next_pid=(?P<next_pid>\d+)"
)


def preempted(script_text: str, comms: Iterable[str]) -> Preempted:
    """From ``switches_script_argv``'s output: the time threads named ``comms`` waited, runnable, from
    being switched out (``prev_state=R``: preempted, not sleeping) until they ran again."""
    wanted = {c[:15] for c in comms}
    out_at: dict[str, tuple[float, str]] = {}  # pid → (when it was switched out, who took its CPU)
    by: dict[str, float] = {}
    count = 0
    for match in _SWITCH.finditer(script_text):
        t = float(match["time"])
        back = out_at.pop(match["next_pid"], None)
        if back is not None:
            by[back[1]] = by.get(back[1], 0.0) + t - back[0]
        if match["prev"] in wanted and match["state"].startswith("R"):
            out_at[match["prev_pid"]] = (t, _clean(match["next"]))
            count += 1
    return Preempted(count, sum(by.values()), by)


def fold(script_text: str) -> dict[str, int]:
    """``perf script`` output (either format above) → folded stacks: ``comm;root;...;leaf`` → samples.

    Samples are counted, not their periods summed: with ``cpu-clock`` at a fixed frequency every
    sample carries the same period (10101010 ns at 99 Hz), so counts are proportional to CPU time.
    Kernel frames end in ``_[k]``; unresolvable frames are dropped; idle (comm ``swapper``) is kept.
    """
    return _fold_lines(script_text.splitlines())


def _fold_lines(lines: Iterable[str]) -> dict[str, int]:
    stacks: dict[str, int] = {}
    names: dict[str, str | None] = {}  # a frame line's text after its address → its frame name
    comm: str | None = None
    frames: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            if comm is not None:
                _add(stacks, comm, frames)
            comm, frames = None, []
        elif line[0] in " \t":
            if comm is None:
                raise PerfError(f"perf script line {number}: a stack frame outside any sample: {line.strip()!r}")
            text = line.lstrip().partition(" ")[2]
            if text not in names:
                names[text] = _frame_name(text)
            name = names[text]
            if name is not None:
                frames.append(name)
        elif not line.startswith("#"):
            if comm is not None:  # a sample without a blank line after it: perf never does this, but be exact
                _add(stacks, comm, frames)
            comm, frames = _comm(line, number), []
    if comm is not None:
        _add(stacks, comm, frames)
    return stacks


def _add(stacks: dict[str, int], comm: str, frames: list[str]) -> None:
    # perf prints the leaf first; folded stacks read from the root.
    key = ";".join([comm, *reversed(frames)])
    stacks[key] = stacks.get(key, 0) + 1


def _comm(header: str, number: int) -> str:
    match = _HEADER.match(header)
    if match is None:
        raise PerfError(
            f"perf script line {number} is neither a sample's header nor a stack frame: {header.strip()!r}",
            hint="fold reads perf script's default format or `perf script -F comm,pid,tid,period,ip,sym,dso`",
        )
    return _clean(match.group("comm"))


def _frame_name(text: str) -> str | None:
    """``symbol[+0xoffset] (dso)`` → the frame's name, or None for a frame nothing is known of."""
    # The dso is the last parenthesised field and is a path or a bracketed name; searching for
    # " (/" or " ([" skips parentheses inside C++ symbols and a deleted file's "(deleted)".
    cut = max(text.rfind(" (/"), text.rfind(" (["))
    if cut < 0 or not text.endswith(")"):  # printed without its dso (-F ...,sym without dso)
        bare = _clean(_strip_offset(text))
        return None if bare in ("", "[unknown]") else bare
    symbol, dso = _strip_offset(text[:cut]), text[cut + 2 : -1]
    if dso.endswith(" (deleted)"):
        dso = dso[: -len(" (deleted)")]
    kernel = dso.startswith("[") and dso not in _USER_PSEUDO_DSOS and not dso.startswith(("[anon", "[JIT"))
    if symbol == "[unknown]":
        if dso == "[unknown]":
            return None  # a garbage return address from unwinding without frame pointers
        symbol = f"[{dso.strip('[]').rsplit('/', 1)[-1]}]"  # somewhere in that binary: still worth showing
    name = _clean(symbol)
    return name + KERNEL_SUFFIX if kernel else name


def _strip_offset(symbol: str) -> str:
    at = symbol.rfind("+0x")
    if at > 0 and all(c in "0123456789abcdefABCDEF" for c in symbol[at + 3 :]):
        return symbol[:at]
    return symbol


def _clean(name: str) -> str:
    # ';' separates frames in the folded format; ' ' is fine, since the count follows the last space.
    return name.strip().replace(";", ":")


def parse_stat(text: str) -> dict[str, float]:
    """``perf stat -x,`` output → {event: value}; a counter perf could not read is left out."""
    counters: dict[str, float] = {}
    rows = 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        rows += 1
        fields = line.split(",")
        if len(fields) < 3 or not fields[2]:
            raise PerfError(f"perf stat line {number} has no event field: {line!r}")
        value, event = fields[0], fields[2]
        if value in _NOT_COUNTED:
            continue
        if event in counters:
            raise PerfError(f"perf stat line {number}: {event} is counted twice")
        counters[event] = _number(value, number)
    if rows == 0:
        raise PerfError("perf stat wrote no counters", hint="perf stat writes them when it is interrupted (SIGINT)")
    return counters


def _number(value: str, number: int) -> float:
    try:
        return float(value)
    except ValueError:
        raise PerfError(f"perf stat line {number}: {value!r} is not a counter value") from None


def missing(runner: Runner) -> str | None:
    """Why perf cannot record the whole machine here, found by trying it for an instant; None if it can."""
    if shutil.which("perf") is None:
        return "perf is not installed (apt-get install linux-perf; make setup does)"
    with tempfile.TemporaryDirectory(prefix="layerbench-perf-") as tmp:
        done = runner([*record_argv(Path(tmp) / "probe.data", 99), "--", "true"], timeout=60)
    if done.rc == 0:
        return None
    said = (done.stderr.strip().splitlines() or ["no output"])[0]
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid")
    level = paranoid.read_text().strip() if paranoid.exists() else "?"
    return f"perf cannot record system-wide here (kernel.perf_event_paranoid={level}): {said}"
