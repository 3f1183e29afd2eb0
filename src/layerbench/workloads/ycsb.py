"""The YCSB adapter: properties and command lines in, typed results out.

layerbench runs YCSB's reference client core 0.17.0 with bindings of its own
(java/ycsb-bindings, built by java/build-ycsb.sh into ``CACHE/ycsb/lib``): PostgreSQL
over JDBC, Redis over Jedis, CQL (Cassandra) over the Java driver 4.x, and MongoDB's
protocol (FerretDB, a MongoDB image) over MongoDB's sync driver.
``properties`` spells out every property of a phase (a user's workload file,
``workload_file``, is given to the client as it is, ``-P``, and ``properties``
are then only what layerbench must set over it: ``overridden`` names them), ``argv`` makes the
command line, ``parse`` is a pure function over the client's text report,
tested on output captured from real runs (tests/data/ycsb/0.17.0/), and
``merge_hdr_logs`` merges the latency histograms of several clients.

What YCSB 0.17.0 does that shapes this module (each seen on the development host):

- Its exit code says little: a binding that fails to connect, a workload error
  or an exception in a client thread still ends with status 0, the stack trace
  printed on stdout among the measurements. ``parse`` keeps such lines
  (``YcsbResult.messages``) and refuses a report without its [OVERALL] section.
- The run phase inserts new keys from ``recordcount`` upward (``insertstart`` is
  for the load only), so ``recordcount`` must be what the server holds now:
  ``records_after`` says what that is after a phase that inserted.
- A zipfian key chooser in a mix that inserts spans ``recordcount + 2 x
  insertproportion x operationcount`` keys and draws again while it picks one
  not inserted yet; a huge ``operationcount`` makes every read draw thousands
  of times. Time-bounded phases therefore get an operation count sized to the
  data (``operation_count``).
- ``maxexecutiontime`` and ``target`` are whole numbers (Integer.parseInt).
- A failed operation is timed in its own ``<OP>-FAILED`` section; return codes
  (``Return=OK``) are counted in the operation's own section only, never in the
  ``Intended-<OP>`` sections of ``measurement.interval=both``, and
  READ-MODIFY-WRITE has none at all.
- Its HdrHistogram 2.1.4 cannot write logs on Java 11+ (javax.xml.bind is gone)
  and writes an encoding hdrh cannot read; the bindings' POM runs 2.1.12.
"""

from __future__ import annotations

import hashlib
import math
import re
import shutil
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hdrh.codec import HdrCookieException, HdrHistogramSettingsException, HdrLengthException
from hdrh.histogram import HdrHistogram
from hdrh.log import re_histogram_interval

from layerbench.errors import LayerbenchError
from layerbench.records import hdr
from layerbench.records.sample import Sample
from layerbench.spec import ycsb_file
from layerbench.spec.databases import ServerSpec, YcsbWorkload
from layerbench.workloads.kind import WorkloadType

Phase = Literal["load", "run", "warmup"]

CLIENT_CLASS = "site.ycsb.Client"
WORKLOAD_CLASS = ycsb_file.CORE_WORKLOAD
TEXT_EXPORTER = "site.ycsb.measurements.exporter.TextMeasurementsExporter"
# Our bindings (java/ycsb-bindings), by the protocol they speak (spec/databases.py's ServerSpec.protocol).
BINDINGS: dict[str, str] = {
    "postgres": "dev.layerbench.ycsb.PostgresDB",
    "redis": "dev.layerbench.ycsb.RedisDB",
    "cql": "dev.layerbench.ycsb.CassandraDB",
    "mongodb": "dev.layerbench.ycsb.MongoDB",
}
# Each binding's properties are named after it: `cassandra.host`, `postgres.port`, ...
PROPERTY_PREFIX: dict[str, str] = {"cql": "cassandra"}
PERCENTILES = ("50", "95", "99", "99.9")
OK_STATUSES = frozenset({"OK", "BATCHED_OK"})  # YCSB's Status.isOk()
INT_MAX = 2**31 - 1  # operationcount, recordcount and target are Java ints
# A zipfian chooser may span up to (1 + this) x records keys: at most ~9 draws per chosen key.
KEY_RANGE_SLACK = 8
# What hdrh raises on a log it cannot decode (binascii.Error is a ValueError; IndexError: a value out of range).
_HDR_ERRORS = (
    OSError,
    ValueError,
    IndexError,
    zlib.error,
    HdrCookieException,
    HdrLengthException,
    HdrHistogramSettingsException,
)


class YcsbParseError(LayerbenchError):
    """YCSB's report (or a histogram log) was not what we can read."""


def _mix(
    distribution: str, read: float = 0, update: float = 0, insert: float = 0, scan: float = 0, rmw: float = 0
) -> dict[str, str]:
    # Every proportion is set: CoreWorkload fills an unset one with its default (read 0.95, update 0.05).
    return {
        "readproportion": f"{read:g}",
        "updateproportion": f"{update:g}",
        "insertproportion": f"{insert:g}",
        "scanproportion": f"{scan:g}",
        "readmodifywriteproportion": f"{rmw:g}",
        "requestdistribution": distribution,
    }


# YCSB's core workloads a-f as its workload files set them, and seed 002's two mixes.
MIXES: dict[str, dict[str, str]] = {
    "a": _mix("zipfian", read=0.5, update=0.5),
    "b": _mix("zipfian", read=0.95, update=0.05),
    "c": _mix("zipfian", read=1),
    "d": _mix("latest", read=0.95, insert=0.05),
    "e": {**_mix("zipfian", scan=0.95, insert=0.05), "maxscanlength": "100", "scanlengthdistribution": "uniform"},
    "f": _mix("zipfian", read=0.5, rmw=0.5),
    # Every operation inserts a new key, so none is chosen: the distribution does not matter.
    "write-heavy": _mix("uniform", insert=1),
    "read-heavy": _mix("zipfian", read=0.95, update=0.05),
}


# --- command lines ---------------------------------------------------------------------------------


def classpath(cache_dir: str) -> str:
    """Every jar build-ycsb.sh put in the cache; java expands the ``*`` itself (no shell involved)."""
    return f"{cache_dir.rstrip('/')}/ycsb/lib/*"


REQUIRED_JARS = ("core-0.17.0.jar", "layerbench-ycsb.jar")


def missing(cache_dir: str | Path) -> str | None:
    """What stops the client from running here, or None: java on PATH and the jars build-ycsb.sh makes."""
    if shutil.which("java") is None:
        return "java is not installed (apt-get install default-jdk-headless; make setup does)"
    lib = Path(cache_dir) / "ycsb" / "lib"
    absent = [jar for jar in REQUIRED_JARS if not (lib / jar).is_file()]
    if absent:
        return f"{', '.join(absent)} not in {lib} (make setup builds them: java/build-ycsb.sh {cache_dir})"
    return None


def whole_seconds(seconds: float) -> int:
    # maxexecutiontime is parsed as an int: 1.5 s would be a NumberFormatException.
    return max(1, math.ceil(seconds))


def properties(
    w: YcsbWorkload,
    server: ServerSpec,
    records: int,
    endpoint: Mapping[str, str],
    phase: Phase,
    hdr_dir: str | None = None,
    expected_ops: int | None = None,
) -> dict[str, str]:
    """Every property of one phase against one server: of a workload file's run, what layerbench sets over
    the file (its mix, key order and the rest stay the file's).

    ``records`` is what the server holds now (the load: what it will hold); a
    run inserts new keys from there upward. ``endpoint`` names the binding's
    connection properties without their prefix ({"host": ..., "port": ...});
    keys with a dot are passed as they are. ``hdr_dir`` asks for one
    HdrHistogram log per operation in that (existing) directory.
    ``expected_ops`` (e.g. from the warmup's throughput) sizes a time-bounded
    phase's operation count when no target rate does.
    """
    props = {
        **_workload(w),
        "recordcount": str(records),
        "insertstart": "0",
        "fieldcount": str(server.fieldcount),
        "fieldlength": str(server.fieldlength),
        "threadcount": str(w.threads),
        "measurementtype": "hdrhistogram",
        "hdrhistogram.percentiles": ",".join(PERCENTILES),
        **_endpoint(prefix(server.protocol), endpoint),
    }
    if w.consistency is not None:  # the spec's rules allow it only against a CQL server
        level = w.consistency.upper()
        cql = prefix(server.protocol)
        props |= {f"{cql}.readconsistencylevel": level, f"{cql}.writeconsistencylevel": level}
    if phase == "load":
        # operationcount too: a zipfian chooser reads it at init even when loading.
        props |= {"insertcount": str(records), "operationcount": str(records)}
    else:
        seconds = w.runtime_s if phase == "run" else w.warmup_s
        props |= _time_bounded(w, mix_of(w) | props, records, seconds, expected_ops)
    if hdr_dir is not None:
        # YCSB names each log by appending "<OP>.hdr" to the path: the separator is ours to add.
        props |= {"hdrhistogram.fileoutput": "true", "hdrhistogram.output.path": hdr_dir.rstrip("/") + "/"}
    return props


def _workload(w: YcsbWorkload) -> dict[str, str]:
    """The workload's own properties on the command line: a mix's, or what a file's (-P) must not decide."""
    if w.workload_file is None:
        mix = MIXES[w.mix] | ({"requestdistribution": w.distribution} if w.distribution is not None else {})
        return {"workload": WORKLOAD_CLASS, **mix}
    file = w.file_properties
    runs, notice = ycsb_file.workload_class(file, w.workload_file)
    out = {"workload": runs} if notice is not None else {}
    if "exporter" in file:  # layerbench parses the text report only
        out["exporter"] = TEXT_EXPORTER
    return out


def mix_of(w: YcsbWorkload) -> dict[str, str]:
    """What the run's mix is: its proportions and request distribution (a file's over CoreWorkload's defaults)."""
    if w.workload_file is not None:
        return ycsb_file.effective(w.file_properties)
    return _workload(w)


def overridden(w: YcsbWorkload, props: Mapping[str, str], protocol: str, phase: Phase) -> dict[str, tuple[str, str]]:
    """Each property of a workload file that layerbench set otherwise in this phase: name → (the file's value,
    what ran; "" where the file had none), the command line's flags (-db, -t/-load) included."""
    if w.workload_file is None:
        return {}
    file = w.file_properties
    ran = {**props, "db": BINDINGS[protocol], "dotransactions": "false" if phase == "load" else "true"}
    out = {k: (file[k], v) for k, v in ran.items() if k in file and file[k] != v}
    if "workload" in props and "workload" not in file:
        out["workload"] = ("", props["workload"])
    return out


def put_workload_file(w: YcsbWorkload, directory: Path) -> list[str]:
    """The workload's file as the client reads it (``-P``), written in ``directory`` from the text the spec
    kept, so that what ran is what the cell's config says (its name says which text); none for a mix."""
    if w.workload_text is None:
        return []
    digest = hashlib.sha256(w.workload_text.encode()).hexdigest()[:16]
    path = directory / f"ycsb-workload-{digest}.properties"
    path.write_text(w.workload_text)
    return [str(path)]


def loader(workloads: Sequence[object], threads: int) -> YcsbWorkload:
    """What loads a stack for its YCSB workloads: the first workload file among them (its key order, field
    names and lengths shape the records the runs read), or CoreWorkload's defaults."""
    for w in workloads:
        if isinstance(w, YcsbWorkload) and w.workload_file is not None:
            return w.model_copy(update={"name": "load", "threads": threads})
    return YcsbWorkload(name="load", threads=threads)


def prefix(protocol: str) -> str:
    return PROPERTY_PREFIX.get(protocol, protocol)


def _endpoint(prefix: str, endpoint: Mapping[str, str]) -> dict[str, str]:
    return {(key if "." in key else f"{prefix}.{key}"): value for key, value in endpoint.items()}


def _time_bounded(
    w: YcsbWorkload, props: Mapping[str, str], records: int, seconds: float, expected_ops: int | None
) -> dict[str, str]:
    out = {
        "maxexecutiontime": str(whole_seconds(seconds)),
        "operationcount": str(operation_count(w, props, records, seconds, expected_ops)),
    }
    if w.target_ops is not None:
        # A fixed rate: latency is also measured from each operation's intended start (Intended-<OP>),
        # so a server that stalls is charged for the operations that waited (coordinated omission).
        out |= {"target": str(w.target_ops), "measurement.interval": "both"}
    return out


def operation_count(
    w: YcsbWorkload, props: Mapping[str, str], records: int, seconds: float, expected_ops: int | None = None
) -> int:
    """How many operations a time-bounded phase may do: enough that its time ends it, if YCSB allows.

    With a target rate the client never runs ahead of its schedule, so the
    rate times the time (plus one per thread) is a bound. Without one, any
    count will do unless the mix reads keys chosen by a zipfian chooser and
    also inserts: then the count sizes the chooser's key range, twice what
    ``expected_ops`` says the phase will do, and at most KEY_RANGE_SLACK x
    records of new keys. Such a phase may end before its time (its RunTime
    says so). Elsewhere ``expected_ops`` is not a bound: a warm-up slowed by
    the JVMs of several clients starting side by side did 2 operations in its
    second once, and would have cut every client's run to 4.
    """
    bound = INT_MAX if w.target_ops is None else w.target_ops * (whole_seconds(seconds) + 1) + w.threads
    insert = float(props["insertproportion"])
    if props["requestdistribution"] == "zipfian" and insert > 0 and _chooses_keys(props):
        if w.target_ops is None and expected_ops is not None:
            bound = 2 * expected_ops
        bound = min(bound, math.ceil(KEY_RANGE_SLACK * records / (2 * insert)))
    return max(1, min(bound, INT_MAX))


def _chooses_keys(props: Mapping[str, str]) -> bool:
    chosen = ("readproportion", "updateproportion", "scanproportion", "readmodifywriteproportion")
    return any(float(props[p]) > 0 for p in chosen)


# A load prepares, it is never measured: the JIT's quick tier alone halves its client's CPU (20,000 records into
# Redis on a 2-core host: 1.5 s of user time, 0.7 s), which the next stacks' builds beside it use
# (run/loop.py's preload). Runs and warm-ups keep the JVM's defaults: their client is part of what is measured.
LOAD_JIT = ("-XX:TieredStopAtLevel=1",)


def argv(
    java: str,
    cache_dir: str,
    protocol: str,
    phase: Phase,
    props: Mapping[str, str],
    property_files: Sequence[str] = (),
) -> list[str]:
    """The client's command line: each property as ``-p key=value`` (values are never split by a shell);
    ``property_files`` (``-P``) hold what the command line must not show (the server's password)."""
    tier = list(LOAD_JIT) if phase == "load" else []
    args = [java, *tier, "-cp", classpath(cache_dir), CLIENT_CLASS, "-load" if phase == "load" else "-t"]
    args += ["-db", BINDINGS[protocol]]
    for path in property_files:
        args += ["-P", path]
    for key, value in props.items():
        args += ["-p", f"{key}={value}"]
    return args


# --- the report --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class YcsbOperation:
    """One section of the report: "READ", "Intended-READ", "INSERT-FAILED", "READ-MODIFY-WRITE", ..."""

    name: str
    count: int
    avg_us: float
    min_us: float
    max_us: float
    percentiles: dict[str, float]  # "p50", "p95", "p99", "p99.9" (µs): those the client was asked for
    returns: dict[str, int]  # "OK", "ERROR", "NOT_FOUND", "BATCHED_OK", ...: empty where YCSB counts none

    @property
    def errors(self) -> int | None:
        """Operations whose status was not OK; None where YCSB counts no statuses (Intended-*, *-FAILED, RMW)."""
        if not self.returns:
            return None
        return sum(n for status, n in self.returns.items() if status not in OK_STATUSES)


@dataclass(frozen=True)
class YcsbResult:
    runtime_ms: int
    throughput: float  # ops/s: every operation of the phase over its RunTime
    operations: dict[str, YcsbOperation]
    gc_count: int | None  # the client JVM's collections (None if not reported)
    gc_time_ms: int | None
    messages: tuple[str, ...]  # stdout lines that are not measurements: exceptions, warnings

    @property
    def exceptions(self) -> tuple[str, ...]:
        """The first line of each stack trace on stdout: a client thread that failed (YCSB still exits 0)."""
        return tuple(m for m in self.messages if _EXCEPTION.match(m))


# "[READ], 99.9PercentileLatency(us), 3995"; values are Java's int, long or double (1.0E7, NaN, Infinity).
_LINE = re.compile(r"\[(?P<section>[^\]]+)\], (?P<name>[^,]+), (?P<value>\S+)")
# The JVM's own warnings on stdout (unified logging: "[0.001s][warning][perf,memops] ..." or, as one client beside
# another JVM printed, "[0.001s] Cannot use file /tmp/hsperfdata_root/16681 because it is locked by another
# process"): the client goes on, so they are messages, not a cut report.
_JVM_LOG = re.compile(r"\[\d+\.\d+s\]")
_PERCENTILE = re.compile(r"(\d+(?:\.\d+)?)(?:st|nd|rd|th)?PercentileLatency\(us\)")
_EXCEPTION = re.compile(r"[\w.$]+(?:Exception|Error)(?::|$)")
_STACK_FRAME = re.compile(r"\s+(at |\.\.\. \d+ more)")
_LATENCY_FIELDS = ("Operations", "AverageLatency(us)", "MinLatency(us)", "MaxLatency(us)")


def parse(text: str) -> YcsbResult:
    """YCSB's text report (the TextMeasurementsExporter on stdout) as typed results."""
    sections, messages = _sections(text)
    overall = sections.get("OVERALL", {})
    if "RunTime(ms)" not in overall or "Throughput(ops/sec)" not in overall:
        tail = " | ".join(text.strip().splitlines()[-2:]) or "(empty)"
        raise YcsbParseError(f"YCSB reported no [OVERALL] run time and throughput; its output ends: {tail}")
    operations = {name: _operation(name, f) for name, f in sections.items() if any(k in f for k in _LATENCY_FIELDS)}
    return YcsbResult(
        runtime_ms=_int(overall, "OVERALL", "RunTime(ms)"),
        throughput=_float(overall, "OVERALL", "Throughput(ops/sec)"),
        operations=operations,
        gc_count=_optional(sections, "TOTAL_GCs", "Count"),
        gc_time_ms=_optional(sections, "TOTAL_GC_TIME", "Time(ms)"),
        messages=tuple(messages),
    )


def _sections(text: str) -> tuple[dict[str, dict[str, str]], list[str]]:
    sections: dict[str, dict[str, str]] = {}
    messages: list[str] = []
    for line in text.splitlines():
        match = _LINE.fullmatch(line.strip())
        if match:
            sections.setdefault(match["section"], {})[match["name"]] = match["value"]
        elif _JVM_LOG.match(line):
            messages.append(line.strip())
        elif line.startswith("["):
            raise YcsbParseError(f"YCSB report line is cut or unknown: {line!r}")
        elif line.strip() and not _STACK_FRAME.match(line):
            messages.append(line.strip())
    return sections, messages


def _operation(name: str, fields: Mapping[str, str]) -> YcsbOperation:
    missing = [f for f in _LATENCY_FIELDS if f not in fields]
    if missing:
        raise YcsbParseError(f"YCSB's [{name}] section lacks {', '.join(missing)}: the report is cut short")
    percentiles = {f"p{m[1]}": _float(fields, name, k) for k in fields if (m := _PERCENTILE.fullmatch(k))}
    returns = {k.removeprefix("Return="): _int(fields, name, k) for k in fields if k.startswith("Return=")}
    return YcsbOperation(
        name=name,
        count=_int(fields, name, "Operations"),
        avg_us=_float(fields, name, "AverageLatency(us)"),
        min_us=_float(fields, name, "MinLatency(us)"),
        max_us=_float(fields, name, "MaxLatency(us)"),
        percentiles=percentiles,
        returns=returns,
    )


def _int(fields: Mapping[str, str], section: str, key: str) -> int:
    try:
        return int(fields[key])
    except ValueError as exc:
        raise YcsbParseError(f"YCSB's [{section}], {key} is not a whole number: {fields[key]!r}") from exc


def _float(fields: Mapping[str, str], section: str, key: str) -> float:
    try:
        return float(fields[key])  # Java's doubles: 1.0E7, NaN and Infinity included
    except ValueError as exc:
        raise YcsbParseError(f"YCSB's [{section}], {key} is not a number: {fields[key]!r}") from exc


def _optional(sections: Mapping[str, Mapping[str, str]], section: str, key: str) -> int | None:
    return _int(sections[section], section, key) if key in sections.get(section, {}) else None


def records_after(result: YcsbResult, records: int) -> int:
    """The record count to pass to the next phase: every insert attempted took the next key, even a failed one."""
    insert = result.operations.get("INSERT")
    return records + (sum(insert.returns.values()) if insert else 0)


def samples(result: YcsbResult, job: str) -> list[Sample]:
    """Throughput, and per operation (direction = its lower-case name) latency, count and errors."""
    out = [Sample("ops", result.throughput, "ops/s", "", job)]
    for name, op in result.operations.items():
        if name.upper().endswith("CLEANUP"):
            continue  # the binding closing its connection, not an operation of the workload
        direction = name.lower()
        out += _latency_samples(direction, job, op.avg_us, op.min_us, op.max_us, op.percentiles, op.count)
        if op.errors is not None:
            out.append(Sample("errors", float(op.errors), "ops", direction, job))
    return out


def _latency_samples(
    direction: str, job: str, avg: float, low: float, high: float, percentiles: Mapping[str, float], count: int
) -> list[Sample]:
    values = {"lat_avg_us": avg, "lat_min_us": low, "lat_max_us": high}
    values |= {f"lat_{p}_us": v for p, v in percentiles.items()}
    out = [Sample(metric, float(v), "us", direction, job) for metric, v in values.items()]
    out.append(Sample("count", float(count), "ops", direction, job))
    return out


# --- latency merged across clients --------------------------------------------------------------------


@dataclass(frozen=True)
class MergedLatency:
    """One operation's latency over every interval of every client's log (µs)."""

    count: int
    min_us: float
    max_us: float
    mean_us: float
    percentiles: dict[str, float]  # "p50", "p95", "p99", "p99.9" of the merged histogram
    clients: int  # how many logs went into it
    histogram: HdrHistogram = field(repr=False, compare=False)  # kept with the trial, merged over trials


def read_hdr_log(path: str | Path) -> HdrHistogram:
    """Every interval of one HdrHistogram log (one client, one operation) added into one histogram."""
    total = hdr.new()
    intervals = 0
    try:
        for line in Path(path).read_text().splitlines():
            # An interval: [Tag=T,]start,length,max,payload (hdrh's own pattern); comments and the legend are not.
            interval = re_histogram_interval.match(line.split(",", 1)[1] if line.startswith("Tag=") else line)
            if interval and not line.startswith("#"):
                total.add(hdr.decode(interval.group(4)))
                intervals += 1
    except _HDR_ERRORS as exc:
        raise YcsbParseError(f"{path}: not a readable HdrHistogram log: {exc!r}") from exc
    # hdrh skips lines it cannot read; YCSB writes at least one interval when it exports, so none
    # means a client that never got that far (or a file that is not a log).
    if intervals == 0:
        raise YcsbParseError(f"{path}: no histogram interval in the log: the client did not finish")
    return total


_A_YEAR_S = 365 * 24 * 3600.0
_START_TIME = re.compile(r"#\[(StartTime|BaseTime): (\d+(?:\.\d+)?) ")


def hdr_window(directory: str | Path) -> tuple[float, float]:
    """When one client measured, (start, end) in ms since the epoch, from its HdrHistogram logs (not CLEANUP's):
    each log's StartTime (written when its first operation was measured; YCSB makes it the log's base time too)
    plus its intervals' offsets; the end is the last interval's end, when the client exported its report."""
    spans = [_log_span(p) for p in sorted(Path(directory).glob("*.hdr")) if not p.stem.upper().endswith("CLEANUP")]
    if not spans:
        raise YcsbParseError(f"{directory}: no HdrHistogram log of an operation: the client did not finish")
    return min(s[0] for s in spans), max(s[1] for s in spans)


def _log_span(path: Path) -> tuple[float, float]:
    times: dict[str, float] = {}
    spans: list[tuple[float, float]] = []
    try:
        for line in path.read_text().splitlines():
            if (stamp := _START_TIME.match(line)) is not None:
                times[stamp[1]] = float(stamp[2])
                continue
            interval = re_histogram_interval.match(line.split(",", 1)[1] if line.startswith("Tag=") else line)
            if interval and not line.startswith("#"):
                spans.append((float(interval.group(1)), float(interval.group(2))))
    except (OSError, ValueError) as exc:
        raise YcsbParseError(f"{path}: not a readable HdrHistogram log: {exc!r}") from exc
    base = times.get("BaseTime", times.get("StartTime"))
    if base is None or not spans:
        raise YcsbParseError(f"{path}: no StartTime or no interval in the log: the client did not finish")
    first = min(s for s, _ in spans)
    base = 0.0 if first > _A_YEAR_S else base  # absolute timestamps (a log without a base time), as hdrh reads them
    return 1000 * (base + first), 1000 * (base + max(s + n for s, n in spans))


def merge_hdr_logs(directories: Sequence[str | Path]) -> dict[str, MergedLatency]:
    """Per operation (YCSB's name, e.g. "READ"), the histograms of several clients merged, then read.

    Each directory is one client's ``hdrhistogram.output.path``. Percentiles
    come from the merged histogram: the p99 of two clients is not the mean of
    their p99s.
    """
    logs: dict[str, list[Path]] = {}
    for directory in directories:
        for path in sorted(Path(directory).glob("*.hdr")):
            logs.setdefault(path.stem, []).append(path)
    merged = {}
    for name, paths in sorted(logs.items()):
        total = hdr.new()
        for path in paths:
            total.add(read_hdr_log(path))
        if total.get_total_count() > 0:
            merged[name] = _summary(total, len(paths))
    return merged


def _summary(h: HdrHistogram, clients: int) -> MergedLatency:
    return MergedLatency(
        count=int(h.get_total_count()),
        min_us=float(h.get_min_value()),
        max_us=float(h.get_max_value()),
        mean_us=float(h.get_mean_value()),
        percentiles={f"p{p}": float(hdr.value_at_percentile(h, float(p))) for p in PERCENTILES},
        clients=clients,
        histogram=h,
    )


def merged_samples(merged: Mapping[str, MergedLatency], job: str) -> list[Sample]:
    """The merged latency with the names ``samples`` uses (lat_*_us and count per lower-case operation)."""
    out: list[Sample] = []
    for name, m in merged.items():
        if name.upper().endswith("CLEANUP"):
            continue
        out += _latency_samples(name.lower(), job, m.mean_us, m.min_us, m.max_us, m.percentiles, m.count)
    return out


# The workload type: a database client, whose headline is its operations per second over all instances; a
# profile follows its JVM (java).
WORKLOAD = WorkloadType(kind="ycsb", comms=("java",), headline=lambda w: "ops", parse_errors=(YcsbParseError,))
