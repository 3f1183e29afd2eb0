"""A user's fio job file, read by fio itself: its jobs, their files, the engine, and what layerbench refuses.

Job files copied from benchmark suites and fio's documentation use all of fio's language: inline
comments (``numjobs=4 ; four threads``), variables and arithmetic (``size=5*1024*1024*$mb_memory/8``),
``include`` lines, units such as ``128z``. A second parser here would disagree with fio, so fio reads
them (fio 3.33, each seen on the development host):

- ``fio --showcmd FILE`` (like ``--parse-only``) checks every option as a run would and stops before
  loading any engine, opening any log or running any program; its message is the refusal of a file it
  cannot read. It prints the file as command-line options, with includes read, comments dropped,
  variables and arithmetic evaluated. It prints a later ``[global]`` section's options (cumulatively)
  without a ``--name=`` before them, so they would read as the previous job's; each job is therefore
  given to it as its own section, the ``[global]`` lines in force before it copied in (fio copies them
  the same way: a job starts as a copy of the global options). Section headers are found here: fio
  allows them in the top file only ("No new sections in included files").
- ``fio --enghelp=NAME`` says whether an engine loads on this host ("engine http not loadable").

The workload's ``size:``, ``runtime_s:``, ``numjobs:``, ``iodepth:`` and ``bs:``, where the spec gives them, are
every job's defaults as fio's command-line options are (``fio --size=64m job.fio``: a job's own value wins);
``env:`` gives the ``${NAME}`` variables fio puts in as it reads, and ``${LAYERBENCH_TARGET}`` is the placement.

``refusal`` says why a job file cannot run on a stack; ``footprint`` what its files take;
``rewrite`` the file fio runs, every job's options written out, pointed at the placement.
"""

from __future__ import annotations

import ast
import functools
import operator
import os
import re
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from layerbench import proc
from layerbench.errors import ToolError
from layerbench.records.info import GivenOption
from layerbench.spec.file_workloads import TARGET_VARIABLE, FioWorkload
from layerbench.spec.own_files import lines, with_includes

PARSE_TIMEOUT_S = 30.0
_MESSAGE_MAX = 300

# Engines whose jobs touch no file (fio's FIO_DISKLESSIO without a storage target): they cost no space.
NO_FILES = frozenset({"null", "cpp_null", "cpuio", "net", "netsplice", "page_fault"})
# Engines that do I/O on files or the device at the placement.
ON_PLACEMENT = frozenset(
    {
        "sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap", "splice",
        "falloc", "ftruncate", "e4defrag", "filecreate", "filestat", "filedelete", "dircreate", "dirstat",
        "dirdelete",
    }
)  # fmt: skip
# Engines whose files are created but never written (FIO_FAKEIO): no space beyond the inodes.
EMPTY_FILES = frozenset({"filecreate", "filestat", "filedelete", "dircreate", "dirstat", "dirdelete", "ftruncate"})
# Engines that reach storage elsewhere (another machine, a cluster), not the placement.
REMOTE = frozenset(
    {"nbd", "rbd", "rados", "http", "nfs", "gfapi", "gfapi_async", "libiscsi", "libhdfs", "dfs", "libblkio"}
    | {"ime_psync", "ime_psyncv", "ime_aio"}
)
# Engines that need hardware or a device kind no layerbench placement is: why.
HARDWARE = {
    "rdma": "an RDMA device (none in /sys/class/infiniband)",
    "libpmem": "a DAX filesystem on persistent memory (layerbench mounts none)",
    "dev-dax": "a /dev/dax device (persistent memory)",
    "pmemblk": "a persistent-memory pool (layerbench creates none)",
    "libzbc": "a zoned block device (layerbench builds none)",
    "sg": "a SCSI generic device (/dev/sg*), which no placement is",
    "bsg": "a SCSI block-generic device, which no placement is",
    "io_uring_cmd": "an NVMe character device (/dev/ng*), which no placement is",
    "xnvme": "an NVMe device driven from user space, which no placement is",
    "mtd": "a memory technology device (/dev/mtd*)",
    "libcufile": "a CUDA GPU",
    "libhipfile": "a ROCm GPU",
}
# Options that name a path fio reads or writes; each must stay inside the placement.
PATHS = ("filename", "directory", "opendir", "filename_format", "read_iolog", "write_iolog", "replay_redirect")
LOGS = ("write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log")
# Options that run a program (as root: layerbench runs fio as root).
PROGRAMS = ("exec_prerun", "exec_postrun")
OPT_IN_OUTSIDE = "set allow_outside_placement: true in the workload to let it"
OPT_IN_PROGRAMS = "set allow_programs: true in the workload to let it"
# What fio reads ${LAYERBENCH_TARGET} as: the placement is not known when the file is read (once per workload,
# for every stack), so a mark stands for it, inside the placement for the checks, replaced by ``rewrite``.
TARGET_MARK = "/@layerbench-target@"


@dataclass(frozen=True)
class Job:
    """One job of a job file: its section's name and its options, in order, as fio resolved them."""

    section: str
    options: tuple[tuple[str, str | None], ...]  # (option, value); None for a flag such as `stonewall`

    def get(self, option: str) -> str | None:
        """The option's last value (fio keeps the last), "" for a flag, None if unset."""
        found = [v for k, v in self.options if k == option]
        return None if not found else (found[-1] if found[-1] is not None else "")

    @property
    def engine(self) -> str:
        return (self.get("ioengine") or "psync").strip()  # fio 3.33's default on Linux


@dataclass(frozen=True)
class JobFile:
    """A job file as fio read it, or fio's message when it could not."""

    path: str
    jobs: tuple[Job, ...] = ()
    error: str | None = None
    given: tuple[GivenOption, ...] = ()  # the workload's options (``with_given``): whom each reached


def showcmd_argv(job_path: str, fio: str = "fio") -> list[str]:
    """fio's reading of a job file as command-line options; checks them as --parse-only does."""
    return [fio, "--showcmd", job_path]


def enghelp_argv(engine: str, fio: str = "fio") -> list[str]:
    """Whether fio can load ``engine`` here: its options, or "engine X not loadable"."""
    return [fio, f"--enghelp={engine}"]


def of_workload(w: FioWorkload) -> JobFile:
    """The workload's job file as fio reads it, with the workload's opt-ins, variables and given options."""
    assert w.job_file is not None
    return with_given(read(w.job_file, w.allow_outside_placement, w.allow_programs, env=w.env), w.given())


def given_of(w: object) -> tuple[GivenOption, ...]:
    """A job file's options its workload gives, and whom each reaches; none for any other workload."""
    if not isinstance(w, FioWorkload) or not w.job_file or not w.given():
        return ()
    return of_workload(w).given


def with_given(jf: JobFile, given: Mapping[str, str]) -> JobFile:
    """The options the workload gives, as fio's command line gives them before a job file: each job's
    defaults, which its own value (from its section, a [global] or an include) overrides."""
    if jf.error or not given:
        return jf
    jobs = tuple(
        Job(j.section, tuple((k, v) for k, v in given.items() if j.get(k) is None) + j.options) for j in jf.jobs
    )
    said = tuple(
        GivenOption(
            option=k,
            value=v,
            applied=tuple(j.section for j in jf.jobs if j.get(k) is None),
            overridden=tuple(j.section for j in jf.jobs if j.get(k) is not None),
        )
        for k, v in given.items()
    )
    return replace(jf, jobs=jobs, given=said)


def options(jf: JobFile, path: str, raw: bool) -> tuple[GivenOption, ...]:
    """What the workload gave a trial's jobs: its options, then the placement (which every job's own
    ``directory=`` gives way to; on a raw device its ``filename=`` too)."""
    files = tuple(j.section for j in jf.jobs if j.engine not in NO_FILES)
    return (*jf.given, GivenOption("filename" if raw else "directory", path, files))


def read(
    path: str | Path,
    outside: bool = False,
    programs: bool = False,
    fio: str = "fio",
    env: Mapping[str, str] | None = None,
) -> JobFile:
    """fio's reading of the job file at ``path`` (cached while the file is unchanged), ``${NAME}`` from
    ``env`` (the workload's), else from layerbench's own environment; a name in neither is refused.

    Two things fio would do as it reads, as root, are refused before it reads: unless ``outside`` (the
    spec's allow_outside_placement), an include of a file outside the job file's directory (fio's "Bad
    option <...>" echoes that file's lines); unless ``programs`` (allow_programs), an engine named by a
    path, as ``external:``, or through a variable (fio dlopen()s an engine to read its options, so a
    shared object's constructors would run)."""
    p = Path(path).resolve()
    try:
        st = p.stat()
    except OSError as err:
        return JobFile(str(path), error=f"cannot read the job file: {err.strerror}")
    files = with_includes(p)
    unread = next(((name, why) for name, where in files[1:] for why in [_unreadable(where)] if why), None)
    if unread:  # fio says "unable to open" and reads on without it: the options in it would be lost unsaid
        return JobFile(str(path), error=f"include {unread[0]}: cannot read it: {unread[1]}")
    if not outside:
        away = next((name for name, where in files if not where.is_relative_to(p.parent)), None)
        if away:
            why = f"include {away} reads a file outside the job file's directory; {OPT_IN_OUTSIDE}"
            return JobFile(str(path), error=why)
    if not programs:
        loads = next((e for _, where in files for e in _engines_named(where) if not re.fullmatch(r"[\w-]+", e)), None)
        if loads is not None:
            why = f"ioengine={loads} loads a program (a shared object) as root; {OPT_IN_PROGRAMS}"
            return JobFile(str(path), error=why)
    environment = {**os.environ, **(env or {}), TARGET_VARIABLE: TARGET_MARK}
    # fio puts the environment's ${VARS} in as it reads: a changed environment is another reading.
    jf = _read(str(p), st.st_mtime_ns, st.st_size, fio, frozenset(environment.items()))
    missing = sorted({name for _, where in files for name in _variables(where)} - set(environment))
    if missing:  # fio reads an unset one as "" and often goes on (filename=${DIR}/f is /f): never let it
        said = f"fio refuses it: {jf.error.removeprefix('fio refuses it: ')}" if jf.error else "fio reads it as empty"
        why = f"${{{missing[0]}}} is not given: set env: {{{missing[0]}: ...}} in the workload ({said})"
        return JobFile(str(path), error=why)
    return jf


@functools.lru_cache(maxsize=256)
def _read(path: str, _mtime: int, _size: int, fio: str, env: frozenset[tuple[str, str]]) -> JobFile:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as err:
        return JobFile(path, error=f"cannot read the job file: {err.strerror}")
    stray, sections = _sections(text)
    if stray is not None:
        return JobFile(path, error=f"fio refuses it: option <{stray}> outside of [] job section")
    if not sections:
        return JobFile(path, error="it defines no job")
    marker = f"lb-{os.getpid()}-{time.monotonic_ns()}-"
    with tempfile.TemporaryDirectory(prefix="lb-jobfile-") as tmp:
        flat = Path(tmp, "jobs.fio")
        flat.write_text("".join(f"[{marker}{i}]\n" + "\n".join(lines) + "\n" for i, (_, lines) in enumerate(sections)))
        try:  # in the job file's directory: fio looks for a relative include there first
            shown = proc.run(
                showcmd_argv(str(flat), fio), timeout=PARSE_TIMEOUT_S, cwd=str(Path(path).parent), env=dict(env)
            )
        except ToolError as err:
            return JobFile(path, error=f"fio could not read it: {one_line(err.stderr)}")
    names = {f"{marker}{i}": name for i, (name, _) in enumerate(sections)}
    if shown.rc != 0:
        message = re.sub(re.escape(marker) + r"\d+", lambda m: names.get(m.group(0), m.group(0)), shown.stderr)
        return JobFile(path, error=f"fio refuses it: {one_line(message.replace(str(flat), path))}")
    jobs = _jobs(shown.stdout, marker)
    if len(jobs) != len(sections):
        return JobFile(path, error=f"fio read {len(jobs)} jobs where the file has {len(sections)} sections")
    return JobFile(path, tuple(Job(name, jobs[i]) for i, (name, _) in enumerate(sections)))


def _engines_named(file: Path) -> list[str]:
    """The ioengine values a file sets, as written (a comment cut off)."""
    out = []
    for line in lines(file):
        key, eq, value = line.partition("=")
        if eq and key.strip().lower() == "ioengine":
            out.append(re.split(r"\s[;#]|^[;#]", value.strip())[0].strip())
    return out


def _unreadable(file: Path) -> str | None:
    try:
        with file.open("rb"):
            return None
    except OSError as err:
        return f"{err.strerror} ({file})"


def _variables(file: Path) -> set[str]:
    """The ``${NAME}`` variables a file's lines use (its comments aside)."""
    return {name for line in lines(file) if line[:1] not in (";", "#") for name in re.findall(r"\$\{(\w+)\}", line)}


def _sections(text: str) -> tuple[str | None, list[tuple[str, list[str]]]]:
    """An option before any section (fio refuses it), and each job section's name and lines, the global
    lines in force before it first (as fio copies them)."""
    globals_: list[str] = []
    out: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        header = re.fullmatch(r"\[([^\n]+)\]", line)
        if header:
            name = header.group(1)
            if name.startswith("global"):  # fio: !strncmp(name, "global", 6)
                current = globals_
            else:
                out.append((name, list(globals_)))
                current = out[-1][1]
        elif current is None:
            return line, []
        else:
            current.append(line)
    return None, out


def _jobs(showcmd: str, marker: str) -> list[tuple[tuple[str, str | None], ...]]:
    """``fio --name=<marker>0 --bs=4k --stonewall --name=<marker>1 ...`` → each job's options (a job's own
    ``name=`` option is one of them)."""
    body = showcmd.strip()
    body = body[len("fio") :] if body.startswith("fio") else body
    jobs: list[list[tuple[str, str | None]]] = []
    for token in re.split(r"(?:^|\s)--(?=[A-Za-z0-9_]+(?:=|\s|$))", body):
        token = token.strip()
        if not token:
            continue
        key, eq, value = token.partition("=")
        if key == "name" and re.match(re.escape(marker) + r"\d+(?:\s|$)", value):
            jobs.append([])
        elif jobs:
            jobs[-1].append((key, value if eq else None))
    return [tuple(j) for j in jobs]


def one_line(text: str) -> str:
    """fio's message in one line: its lines joined, the end cut if long."""
    said = [ln.strip() for ln in text.splitlines() if ln.strip()]
    joined = " | ".join(said) or "(no message)"
    return joined if len(joined) <= _MESSAGE_MAX else joined[: _MESSAGE_MAX - 3] + "..."


# --- what a job file may do -------------------------------------------------------------------


def refusal(jf: JobFile, raw: bool, outside: bool = False, programs: bool = False, fio: str = "fio") -> str | None:
    """Why this job file cannot run at a placement (``raw``: a block device), or None.

    ``outside``: the spec lets it name paths and devices outside the placement; ``programs``: the spec
    lets it run programs (exec_prerun, exec_postrun, ioengine=exec or an external engine)."""
    if jf.error:
        return jf.error
    for job in jf.jobs:
        reason = _job_refusal(job, raw, outside, programs, fio) or (None if raw else _unsized(job, jf))
        if reason:
            return f"[{job.section}]: {reason}"
    return None


def _unsized(job: Job, jf: JobFile) -> str | None:
    """A job on a filesystem needs a size in bytes, its own or that of a job laying out the same file
    (a device has one of its own; ``size=20%`` is a share of one)."""
    if job.engine not in ON_PLACEMENT or job.engine in EMPTY_FILES or _flag(job.get("fill_device")):
        return None
    name = job.get("filename")
    if any(_sized(other) for other in jf.jobs if other is job or (name and other.get("filename") == name)):
        return None
    given = job.get("size")
    what = f"size={given} is a share of a device or an existing file" if given else "it gives no size"
    return f"{what}; on a filesystem placement fio needs size= or filesize= in bytes: set size: in the workload"


def _sized(job: Job) -> bool:
    size, filesize = job.get("size"), job.get("filesize")
    return bool((size and not size.strip().endswith("%")) or filesize)


def _flag(value: str | None) -> bool:
    return value is not None and value.strip() not in ("0", "false")


def _job_refusal(job: Job, raw: bool, outside: bool, programs: bool, fio: str) -> str | None:
    engine = job.engine
    runs = [k for k in PROGRAMS if job.get(k)]
    loads = engine == "exec" or engine.startswith("external")
    if (runs or loads) and not programs:
        what = f"{runs[0]}={job.get(runs[0])}" if runs else f"ioengine={engine}"
        return f"{what} runs a program as root; {OPT_IN_PROGRAMS}"
    if loads:
        return None  # the user vouches for the program; where it does I/O is its own business
    if engine in REMOTE:
        return f"ioengine={engine} reaches storage elsewhere, not the placement under test"
    if engine in HARDWARE and not (engine == "rdma" and _has_rdma()):
        return f"ioengine={engine} needs {HARDWARE[engine]}"
    missing = _unavailable(engine, fio)  # this fio's build lacks it (dircreate came after 3.33)
    if missing:
        return missing
    if engine not in NO_FILES | ON_PLACEMENT | {"rdma"}:
        return f"ioengine={engine}: layerbench does not know where this engine does its I/O"
    if (job.get("zonemode") or "none").strip() == "zbd":
        return "zonemode=zbd needs a zoned block device (layerbench builds none)"
    if engine in NO_FILES | {"rdma"}:
        return None
    for option in ("size", "filesize"):
        value = job.get(option)
        if value and not value.strip().endswith("%") and fio_bytes(value, _zone(job)) is None:
            hint = "give zonesize, or a size in bytes" if value.strip().lower().endswith("z") else "give bytes"
            return f"{option}={value}: layerbench cannot tell how much space that takes ({hint})"
    if not outside:
        reason = _outside(job, raw)
        if reason:
            return reason
    if raw and engine in EMPTY_FILES | {"e4defrag", "falloc"}:
        return f"ioengine={engine} works on files: give the stack a filesystem"
    return None


def _has_rdma() -> bool:
    try:
        return any(Path("/sys/class/infiniband").iterdir())
    except OSError:
        return False


@functools.lru_cache(maxsize=64)
def _unavailable(engine: str, fio: str) -> str | None:
    """fio's own words when it cannot load ``engine`` here ("engine dircreate not loadable"), else None."""
    if not re.fullmatch(r"[\w-]+", engine):  # fio would dlopen() a path
        return f"ioengine={engine} is not an engine's name"
    try:
        shown = proc.run(enghelp_argv(engine, fio), timeout=PARSE_TIMEOUT_S)
    except ToolError as err:
        return f"ioengine={engine}: {one_line(err.stderr)}"
    said = shown.stderr + shown.stdout
    if "not loadable" in said or "not found" in said:  # its exit code is 1 for "has no options" too
        return f"ioengine={engine}: {one_line(said)}"
    return None


def _outside(job: Job, raw: bool) -> str | None:
    for option in PATHS + LOGS:
        value = job.get(option)
        if not value:
            continue
        if option in ("directory", "opendir") or (option == "filename" and raw):
            continue  # replaced by the placement's
        for part in _paths(option, value.replace(TARGET_MARK, ".")):  # ${LAYERBENCH_TARGET} is inside
            if part.startswith("/") or ".." in part.split("/"):
                return f"{option}={value} names a path outside the placement; {OPT_IN_OUTSIDE}"
    return None


def _paths(option: str, value: str) -> list[str]:
    # filename separates files with ':' ('\:' is a literal colon); logs may be "prefix" or "1"/"0".
    if option == "filename":
        return [p.replace("\\:", ":") for p in re.split(r"(?<!\\):", value)]
    if option in LOGS and value.strip() in ("0", "1", ""):
        return []
    return [value.strip()]


def without_device_io(jf: JobFile) -> list[str]:
    """The engines of its jobs that report I/O no device sees (null, cpuio, net, file operations...)."""
    return sorted({j.engine for j in jf.jobs if j.engine in NO_FILES | EMPTY_FILES | {"rdma"}})


# --- what its files take --------------------------------------------------------------------------


def footprint(jf: JobFile) -> dict[str, int]:
    """Each job's files, as fio lays them out: ``size`` per job (else ``nrfiles`` x ``filesize``), times
    ``numjobs`` unless a ``filename`` names files the clones share; engines without files take nothing."""
    out: dict[str, int] = {}
    for number, job in enumerate(jf.jobs):
        if job.engine in NO_FILES | EMPTY_FILES or job.engine in REMOTE:
            continue
        one = job_bytes(job)
        name = job.get("filename")
        if name:
            key = f"file {name.replace(TARGET_MARK, '${' + TARGET_VARIABLE + '}')}"
            out[key] = max(out.get(key, 0), one)
        else:
            key = f"[{job.section}]#{number}"
            out[key] = one * _count(job.get("numjobs"), 1)
    return out


def duration_s(jf: JobFile) -> float | None:
    """At most how long its jobs run: each one's ``runtime`` and ``ramp_time`` as if all ran in turn (a bound
    for a trial's timeout); None where a job has no runtime (it runs until its I/O is done)."""
    total = 0.0
    for job in jf.jobs:
        runtime = fio_seconds(job.get("runtime") or "")
        if runtime is None:
            return None
        total += runtime + (fio_seconds(job.get("ramp_time") or "0") or 0.0)
    return total


_TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def fio_seconds(value: str) -> float | None:
    """A time as fio reads it (seconds unless a unit says otherwise: ``90``, ``500ms``, ``2m``), or None."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(us|ms|s|m|h|d)?", value.strip().lower())
    return float(match.group(1)) * _TIME_UNITS[match.group(2) or "s"] if match else None


def job_bytes(job: Job) -> int:
    """One clone's bytes: ``size``, else ``nrfiles`` x ``filesize`` (a range counts its top)."""
    zone = _zone(job)
    size = job.get("size")
    if size and not size.strip().endswith("%"):
        got = fio_bytes(size, zone)
        if got is not None:
            return got
    each = fio_bytes(job.get("filesize") or "0", zone) or 0
    return each * _count(job.get("nrfiles"), 1)


def _zone(job: Job) -> int:
    return fio_bytes(job.get("zonesize") or "0", 0) or 0


_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50, "e": 2**60}


def fio_bytes(value: str, zone: int) -> int | None:
    """A size as fio writes it (``4k``, ``1.5GiB``, ``128z`` with ``zonesize``, ``4k-64k`` up to its top,
    ``4k:64k``); None where it is not one this reads."""
    value = value.strip()
    if value.startswith("("):  # fio evaluates a parenthesised expression as it parses the job
        return _arithmetic(value)
    top = re.split(r"[-:,]", value)[-1].strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgtpe]?)(?:i?b)?|(\d+)\s*z", top, flags=re.IGNORECASE)
    if not match:
        return None
    if match.group(3) is not None:
        return int(match.group(3)) * zone if zone else None
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def _arithmetic(text: str) -> int | None:
    """A parenthesised expression of plain numbers (``(2*1024*1024)``), as fio's evaluator reads it."""
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return None
    value = _evaluate(tree.body)
    return int(value) if value is not None and 0 <= value < 2**63 else None


_OPERATORS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _evaluate(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value) if abs(node.value) < 2**64 else None
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if left is None or right is None or (isinstance(node.op, ast.Div) and right == 0):
            return None
        result = _OPERATORS[type(node.op)](left, right)
        return result if abs(result) < 2**64 else None
    return None


def clones(job: Job) -> int:
    """How many jobs fio runs of it (its ``numjobs``)."""
    return _count(job.get("numjobs"), 1)


def _count(value: str | None, default: int) -> int:
    try:
        return max(1, int(str(value).strip(), 0)) if value is not None else default
    except ValueError:
        return default


# --- the file fio runs --------------------------------------------------------------------------


def rewrite(jf: JobFile, path: str, raw: bool, outside: bool = False) -> str:
    """The job file fio runs at the placement: every job's options as fio read them (includes and
    variables resolved), ``directory`` (or, on a raw device, ``filename``) the placement's. With
    ``outside`` the file's absolute paths stay as written; without, ``refusal`` refused them."""
    lines = ["[global]", f"{'filename' if raw else 'directory'}={path}", ""]
    for job in jf.jobs:
        lines.append(f"[{job.section}]")
        for key, value in job.options:
            moved = key in ("directory", "opendir") or (key == "filename" and raw and job.engine not in NO_FILES)
            if moved and not (outside and value and value.startswith("/")):
                continue
            lines.append(key if value is None else f"{key}={value.replace(TARGET_MARK, path)}")
        lines.append("")
    return "\n".join(lines)
