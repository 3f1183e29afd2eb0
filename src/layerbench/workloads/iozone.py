"""The IOzone adapter: command lines in, typed results out.

layerbench runs IOzone's automatic mode (seed 004): every file size by every
record size, doubling from the smallest to the largest, one surface per
operation. The binary comes from Debian's non-free (Ubuntu's multiverse)
package iozone3, fetched by tools/fetch-iozone.sh into ``CACHE/iozone``.
``argv`` builds the argument list; ``parse`` is a pure function over IOzone's
table on stdout, tested on output captured from real runs
(tests/data/iozone/<version>/).

What IOzone 3.489 does that shapes this module (each seen on the development host):

- Auto mode skips records under 64 kB for files of 32 MB and more, but only
  when neither -y nor -q is given; we always give both, and -z as well, so the
  whole grid is measured whatever a later version decides ("Cross over of
  record size disabled." in the banner says -z took).
- Read and random tests read the file the write test (-i 0) leaves behind;
  without it IOzone stops with "Can not open temporary file ... for read". So
  -i 0 is always run, and write and rewrite are reported with any test.
- The table is right-aligned under a two-line header ("random" above "read"),
  a column IOzone did not run is blank, and a value ends at its header word's
  last character or one after it (the header is printed with other widths than
  the numbers): cells are matched to columns by where they end. Fields have no
  separator: a value as wide as its field (a 9-digit kB/s, seen on zram) runs
  into the one before it, and is cut apart where other rows show the fields end.
- A test faster than the clock's resolution (1 µs) reads as size/resolution:
  64000000 kB/s for a 64 kB file. Such a cell says "faster than IOzone can
  time", not a speed.
- A failure (a directory that does not exist; O_DIRECT where the filesystem
  refuses it, e.g. ramfs; tmpfs accepts it since Linux 6.6) prints a row with
  only its size and record, then "Can not open temp file: PATH" on stdout and
  the errno text ("open: Invalid argument") on stderr, and exits non-zero. The
  file may be left behind (O_CREAT took before O_DIRECT was refused).
- -I does not reach the stdio tests (fwrite, fread: fopen, buffered): they are
  not among layerbench's tests, but a hand-run ``iozone -a -I`` shows them at
  page-cache speed.
- -R repeats the table as per-test "Excel" blocks after it; nothing new, not used.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from layerbench.errors import LayerbenchError, SpecError
from layerbench.proc import Runner
from layerbench.records.sample import Sample, point_job
from layerbench.spec.models import IozoneWorkload
from layerbench.workloads.kind import Place, QuietOutput, WorkloadType

TESTS = {"write": 0, "read": 1, "random": 2}  # IOzone's -i numbers
TMP_NAME = "lb-iozone.tmp"
# IOzone's column names (upper header word + lower one) → layerbench's direction names.
DIRECTIONS = {
    "write": "write",
    "rewrite": "rewrite",
    "read": "read",
    "reread": "reread",
    "random read": "randread",
    "random write": "randwrite",
    "bkwd read": "bkwdread",
    "record rewrite": "recrewrite",
    "stride read": "strideread",
    "fwrite": "fwrite",
    "frewrite": "frewrite",
    "fread": "fread",
    "freread": "freread",
}
COMPLETE = "iozone test complete."


class IozoneParseError(LayerbenchError):
    """IOzone's output was not a table we can read (or IOzone stopped before finishing it)."""


@dataclass(frozen=True)
class IozonePoint:
    size_kb: int
    record_kb: int
    kbps: dict[str, int]  # direction → kB/s, only the cells IOzone filled


@dataclass(frozen=True)
class IozoneResult:
    version: str  # "3.489"
    command: str  # the command line IOzone echoes
    settings: tuple[str, ...]  # the banner's mode lines: "Auto Mode", "O_DIRECT feature enabled", ...
    operations: tuple[str, ...]  # directions with at least one value, in the table's order
    points: tuple[IozonePoint, ...]
    resolution_s: float | None = None  # "Time Resolution = 0.000001 seconds.": the shortest time it can tell


# --- the binary ------------------------------------------------------------------------------------


def binary(cache_dir: str | Path) -> Path:
    """Where tools/fetch-iozone.sh puts IOzone."""
    return Path(cache_dir) / "iozone" / "iozone"


def missing(cache_dir: str | Path) -> str | None:
    """What stops IOzone from running here, or None."""
    path = binary(cache_dir)
    if path.is_file() and os.access(path, os.X_OK):
        return None
    return (
        f"IOzone is not in {path} (make setup fetches it: tools/fetch-iozone.sh {cache_dir}, "
        "from Debian's non-free or Ubuntu's multiverse package iozone3)"
    )


def version(runner: Runner, iozone: str) -> str:
    """IOzone's version, e.g. "3.489", from what ``iozone -v`` prints."""
    return _version(runner([iozone, "-v"], timeout=20).check().stdout)


_VERSION = re.compile(r"Version \$Revision: ([0-9.]+) \$")


def _version(text: str) -> str:
    match = _VERSION.search(text)
    if not match:
        raise IozoneParseError(f"no 'Version $Revision: ...' in IOzone's output: {_head(text)}")
    return match.group(1)


# --- command lines -------------------------------------------------------------------------------


def tmp_file(directory: str) -> str:
    """The file IOzone creates, rewrites and removes (left behind only when IOzone fails)."""
    return f"{directory.rstrip('/')}/{TMP_NAME}"


def argv(w: IozoneWorkload, directory: str, iozone: str) -> list[str]:
    """Automatic mode over the workload's grid; the normal table on stdout, in kB/s."""
    args = [
        iozone,
        "-a",
        "-z",  # every record size for every file size (see the module's notes)
        *("-n", _kb(w.sizes[0], "sizes"), "-g", _kb(w.sizes[1], "sizes")),
        *("-y", _kb(w.records[0], "records"), "-q", _kb(w.records[1], "records")),
    ]
    for number in test_numbers(w.tests):
        args += ["-i", str(number)]
    if w.direct:
        args.append("-I")
    if w.fsync:
        args.append("-e")
    return [*args, "-f", tmp_file(directory)]


# IOzone prints each result as it measures it. Where its output is relayed (docker exec: the shim and the
# daemon wake for every write), the relay preempts the next test, and on a small host the shortest tests
# (random reads of small cached files) measured ×0.8 of native for no reason of storage's. Writing the table
# to a file at the target and reading it afterwards puts native and container runs on the same footing.
_TO_FILE = 'out=$1; shift; exec "$@" > "$out"'


def quiet_argv(argv: list[str], output: str) -> list[str]:
    """``argv`` with its standard output sent to the file ``output`` (at the target) instead of a pipe."""
    return ["sh", "-c", _TO_FILE, "sh", output, *argv]


def read_argv(output: str) -> list[str]:
    return ["cat", output]


def output_file(directory: str) -> str:
    return f"{directory.rstrip('/')}/lb-iozone.out"


def test_numbers(tests: Sequence[str]) -> list[int]:
    # -i 0 writes the file every other test reads: without it they fail.
    return sorted({TESTS["write"], *(TESTS[t] for t in tests)})


def _kb(size: int, field_name: str) -> str:
    # IOzone reads sizes in kB ("64k", "16m"); a fraction of a kB cannot be said.
    if size % 1024:
        raise SpecError(f"iozone {field_name}: {size} bytes is not a whole number of kB")
    kb = size // 1024
    return f"{kb // 1024}m" if kb % 1024 == 0 else f"{kb}k"


# --- output ----------------------------------------------------------------------------------------


def parse(text: str, stderr: str = "") -> IozoneResult:
    """IOzone's stdout as typed results; ``stderr`` only adds IOzone's errno text to an error."""
    lines = text.splitlines()
    header = _header_index(lines, stderr)
    columns = _columns(lines[header - 1], lines[header])
    points, end = _rows(lines, header + 1, columns)
    if not any(line.strip() == COMPLETE for line in lines[end:]) or not points or not all(p.kbps for p in points):
        raise IozoneParseError(f"IOzone stopped before finishing its table: {_failure(lines[header + 1 :], stderr)}")
    operations = tuple(d for _, d in columns if any(d in p.kbps for p in points))
    settings = _settings(lines)
    return IozoneResult(_version(text), _command(text), settings, operations, tuple(points), _resolution(text))


def _resolution(text: str) -> float | None:
    match = re.search(r"Time Resolution = ([0-9.eE+-]+) seconds", text)
    return float(match.group(1)) if match else None


def _header_index(lines: list[str], stderr: str) -> int:
    for i, line in enumerate(lines):
        if line.split()[:2] == ["kB", "reclen"] and i > 0:
            return i
    raise IozoneParseError(f"no table in IOzone's output: {_failure(lines, stderr)}")


def _columns(upper: str, lower: str) -> list[tuple[int, str]]:
    """(where the header word ends, direction) for each column after kB and reclen."""
    above = {m.end(): m.group() for m in re.finditer(r"\S+", upper)}
    words = list(re.finditer(r"\S+", lower))[2:]
    columns = []
    for m in words:
        name = f"{above.get(m.end(), '')} {m.group()}".strip()
        if name not in DIRECTIONS:
            raise IozoneParseError(f"IOzone's table has a column we do not know: {name!r}")
        columns.append((m.end(), DIRECTIONS[name]))
    return columns


def _rows(lines: list[str], start: int, columns: list[tuple[int, str]]) -> tuple[list[IozonePoint], int]:
    """The table's rows (two numbers, then the cells) up to the first line that is not one."""
    rows = []
    i = start
    while i < len(lines) and re.match(r"\s*\d+\s+\d+(\s|$)", lines[i]):
        rows.append(lines[i])
        i += 1
    ends = _value_ends(rows, columns)
    return [_point(line, columns, ends) for line in rows], i


def _value_ends(rows: list[str], columns: list[tuple[int, str]]) -> list[int | None]:
    """Where each column's values end, read off the cells that stand alone in their field."""
    seen: list[set[int]] = [set() for _ in columns]
    for line in rows:
        for cell in list(re.finditer(r"\S+", line))[2:]:
            for k, (end, _) in enumerate(columns):
                before = columns[k - 1][0] if k else 0
                if end <= cell.end() <= end + 1 and cell.start() >= before:
                    seen[k].add(cell.end())
    for k, ends in enumerate(seen):
        if len(ends) > 1:
            raise IozoneParseError(
                f"IOzone's {columns[k][1]} values end at columns {sorted(ends)}: a layout we do not know"
            )
    return [min(ends) if ends else None for ends in seen]


def _point(line: str, columns: list[tuple[int, str]], ends: list[int | None]) -> IozonePoint:
    size, record, *cells = list(re.finditer(r"\S+", line))
    kbps: dict[str, int] = {}
    for cell in cells:
        if not cell.group().isdigit():
            raise IozoneParseError(f"IOzone's value {cell.group()!r} is not a number: {line.strip()!r}")
        kbps.update(_split(cell, ends, columns, line))
    return IozonePoint(int(size.group()), int(record.group()), kbps)


def _split(cell: re.Match[str], ends: list[int | None], columns: list[tuple[int, str]], line: str) -> dict[str, int]:
    # IOzone prints each value right-aligned in a fixed field with no separator, so a value that fills
    # its whole field (9 digits: a 128 kB file read in the clock's one microsecond) runs into the one
    # before it. The fields' ends, seen in other rows, cut such a word back into its values.
    k = next((k for k, end in enumerate(ends) if end == cell.end()), None)
    if k is None:
        raise IozoneParseError(f"IOzone's value {cell.group()!r} is under no column: {line.strip()!r}")
    values: dict[str, int] = {}
    start, stop = cell.start(), cell.end()
    while k > 0 and start < (ends[k - 1] or columns[k - 1][0]):
        previous = ends[k - 1]
        if previous is None:
            raise IozoneParseError(
                f"IOzone's values {cell.group()!r} run together where no row shows the fields: {line.strip()!r}"
            )
        values[columns[k][1]] = int(line[previous:stop])
        stop, k = previous, k - 1
    values[columns[k][1]] = int(line[start:stop])
    return dict(reversed(values.items()))  # in the table's order


def _command(text: str) -> str:
    match = re.search(r"Command line used: (.*)", text)
    if not match:
        raise IozoneParseError("IOzone's output lacks its 'Command line used:' line")
    return match.group(1).strip()


def _settings(lines: list[str]) -> tuple[str, ...]:
    """The banner's lines between "Run began" and "Command line used": the modes IOzone says it took."""
    start = next((i for i, line in enumerate(lines) if "Run began:" in line), None)
    if start is None:
        return ()
    block = []
    for line in lines[start + 1 :]:
        if "Command line used:" in line:
            break
        if line.strip():
            block.append(line.strip())
    return tuple(block)


def _failure(lines: Sequence[str], stderr: str) -> str:
    """IOzone's own words: the lines after its table that are no row, and its stderr."""
    said = [ln.strip() for ln in lines if ln.strip() and not re.match(r"\s*\d+\s+\d+", ln)]
    said += [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    return " | ".join(said[-4:]) or "(no message)"


def _head(text: str) -> str:
    return " | ".join(text.strip().splitlines()[:2]) or "(empty)"


# --- samples -------------------------------------------------------------------------------------------


def samples(result: IozoneResult) -> list[Sample]:
    """The trial's headline (geometric mean of every cell), then each cell's bandwidth in B/s."""
    out = [Sample("iozone_geomean", geomean(result), "B/s", "", "")]
    for p in result.points:
        job = point_job(p.size_kb, p.record_kb)
        out += [Sample("bw", kbps * 1024.0, "B/s", direction, job) for direction, kbps in p.kbps.items()]
    return out


def at_the_clock(result: IozoneResult) -> list[tuple[IozonePoint, str]]:
    """The cells whose test took no more than the clock's resolution: IOzone then divides the file's size by
    the resolution itself (64000000 kB/s for 64 kB at 1 µs), a ceiling rather than a speed."""
    if not result.resolution_s:
        return []
    ceiling = 1 / result.resolution_s
    return [(p, d) for p in result.points for d, kbps in p.kbps.items() if kbps >= p.size_kb * ceiling * 0.999]


def geomean(result: IozoneResult) -> float:
    """The geometric mean of every point and operation, in B/s: one number per trial, as IOzone's surfaces
    span orders of magnitude (a cached reread beside a 4k write) and an arithmetic mean would be the rereads'."""
    values = [kbps * 1024.0 for p in result.points for kbps in p.kbps.values()]
    if not values:
        return float("nan")
    if min(values) <= 0:
        return 0.0  # a zero in a product is a zero; log() would raise
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


# --- the workload type ----------------------------------------------------------------------------------

# Automatic mode has no runtime of its own: it ends when its last size and record are done.
LIMIT_S = 3 * 3600.0


def _argv(w: IozoneWorkload, place: Place, tools: Path, lat_log: str | None) -> list[str]:
    """At the place, IOzone from the tools' cache, where set-up put it (no latency log: fio's alone)."""
    return argv(w, place.path, str(binary(tools)))


def _writes(w: IozoneWorkload, operation: str) -> bool | None:
    """By the finding's operation ("randwrite"); the whole surface's headline cannot tell."""
    return "write" in operation if operation else None


WORKLOAD = WorkloadType(
    kind="iozone",
    comms=("iozone",),
    headline=lambda w: "iozone_geomean",  # a whole surface: its geometric mean over every point and operation
    data_bytes=lambda w: w.sizes[1],
    parse_errors=(IozoneParseError,),
    files=lambda w: {TMP_NAME: w.sizes[1]},  # one file at a time, the largest last
    surface=True,
    writes=_writes,
    argv=_argv,  # IOzone writes its own file before reading it: no precondition
    time_limit_s=lambda w, slack: LIMIT_S,
    quiet=QuietOutput(output_file, quiet_argv, read_argv),
)
