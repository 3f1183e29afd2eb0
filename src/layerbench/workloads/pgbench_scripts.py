"""A user's own pgbench scripts: pgbench's reading of them before anything runs, and its report per script.

What pgbench 15 does that shapes this module (each seen on the development host):

- It reads every ``--file`` while it reads its options, before it connects: a script that does not
  parse ("bad.sql:1: syntax error in command "set"", "\\if without matching \\endif") ends it there,
  with exit status 1. It has no option that stops after reading its scripts, but an initialization-only
  option in a benchmark (``--unlogged-tables`` without ``-i``) is refused right after them, still before
  any connection ("some of the specified options cannot be used in benchmarking mode"): that refusal,
  alone, means the scripts were read. SQL itself is the server's to judge: a statement the server
  refuses fails the trial, with pgbench's stderr.
- With several scripts it reports each one after the summary (``SQL script N: PATH``, its weight, its
  transactions with their tps, failures, latency average and stddev); with ``--report-per-command``
  each script's statements' average latency and failures. With one script there is no such block, only
  its statements: the summary is the script's.
- Its per-transaction log numbers the scripts from 0, in the order of the ``--file`` options.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from layerbench import proc
from layerbench.errors import LayerbenchError, ToolError
from layerbench.spec.databases import PgbenchWorkload
from layerbench.spec.models import StackSpec

CHECK_TIMEOUT_S = 30.0
# pgbench's refusal of an initialization option in a benchmark: it comes once every script was read.
READ_ALL = "some of the specified options cannot be used in benchmarking mode"
# A socket directory that cannot exist: were a later pgbench to read on and connect, it would reach nothing.
NOWHERE = "/nonexistent/layerbench-reads-scripts-only"
_MESSAGE_MAX = 600
_CARET = re.compile(r"\^ error found here")


class ScriptsParseError(LayerbenchError):
    """pgbench's report of a script was not what we can read."""


@dataclass(frozen=True)
class Statement:
    """One command of a script as ``--report-per-command`` reports it."""

    latency_ms: float  # its average
    failures: int
    command: str  # the first line of its text, as pgbench prints it


@dataclass(frozen=True)
class ScriptResult:
    """One script of a run: what pgbench reported of it (with one script: the run's own summary)."""

    number: int  # 1, 2, ... in the order of the --file options (the log's script number + 1)
    path: str
    weight: int
    processed: int
    tps: float
    failed: int
    latency_avg_ms: float
    latency_stddev_ms: float | None  # pgbench prints it per script; for one script only under --rate
    statements: tuple[Statement, ...]


# --- before anything runs ---------------------------------------------------------------------------


def check_argv(scripts: Sequence[tuple[str, int]], pgbench: str = "pgbench") -> list[str]:
    """pgbench reading these scripts (path, weight) and stopping before it connects (the module's docstring)."""
    files = [f"--file={os.path.abspath(path)}@{weight}" for path, weight in scripts]
    return [pgbench, *files, "--unlogged-tables", f"--host={NOWHERE}"]


def reads(stack: StackSpec, w: PgbenchWorkload) -> str | None:
    """Why pgbench cannot run the workload's scripts (its own words), or None (also without pgbench here:
    the client's own rule refuses the cell then)."""
    if not w.scripts:
        return None
    return _refusal(tuple(_identity(s.path, s.weight) for s in w.scripts))


def _identity(path: str, weight: int) -> tuple[str, int, int, int]:
    """A script as read now: a changed file is read again (mtime and size), an unchanged one once."""
    p = os.path.abspath(path)
    try:
        st = os.stat(p)
    except OSError:
        return (p, weight, -1, -1)  # gone since the spec was read: pgbench says so
    return (p, weight, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _refusal(scripts: tuple[tuple[str, int, int, int], ...]) -> str | None:
    try:
        done = proc.run(check_argv([(p, weight) for p, weight, _, _ in scripts]), timeout=CHECK_TIMEOUT_S)
    except ToolError as exc:
        if exc.rc == 127:
            return None  # no pgbench on this host: PgbenchWorkload.client_missing says so
        raise
    return refusal(done.rc, done.stderr)


def refusal(rc: int, stderr: str) -> str | None:
    """pgbench's verdict on the scripts from its exit status and stderr under ``check_argv``: None when it
    read them all, else what it said (a pure function, tested on pgbench's captured words)."""
    lines = [line.removeprefix("pgbench: error: ").strip() for line in stderr.strip().splitlines()]
    said = [line for line in lines if line != READ_ALL]
    if rc == 1 and len(said) < len(lines) and not said:
        return None
    # Its caret under the command it could not parse points nowhere on one line: the command itself stays.
    text = " | ".join(line for line in said if not _CARET.fullmatch(line)) or f"pgbench exited {rc}, saying nothing"
    if len(text) > _MESSAGE_MAX:
        text = text[:_MESSAGE_MAX] + "..."
    return f"pgbench cannot read the scripts: {text}"


# --- its report ----------------------------------------------------------------------------------------

_NUMBER = r"(\d+(?:\.\d+)?)"
_HEADER = re.compile(r"SQL script (\d+): (.+)")
_LINES: dict[str, re.Pattern[str]] = {
    "weight": re.compile(r"- weight: (\d+) \(targets .*\)"),
    "transactions": re.compile(rf"- (\d+) transactions \(.* of total, tps = {_NUMBER}\)"),
    "failed": re.compile(r"- number of failed transactions: (\d+) \(.*\)"),
    "latency_avg_ms": re.compile(rf"- latency average = {_NUMBER} ms.*"),
    "latency_stddev_ms": re.compile(rf"- latency stddev = {_NUMBER} ms"),
}
_STATEMENTS = re.compile(r"(?:- )?statement latencies in milliseconds.*:")
# Average latency, failures, (retries, under --max-tries), the command.
_STATEMENT = re.compile(rf"{_NUMBER}\s+(\d+)\s+(?:\d+\s+)?(\S.*)")


def split(text: str) -> tuple[str, str]:
    """pgbench's stdout as (its summary, its per-script report): the report starts at the first script's
    block or, with one script, at its statements."""
    lines = text.splitlines(keepends=True)
    for n, line in enumerate(lines):
        if _HEADER.fullmatch(line.strip()) or _STATEMENTS.fullmatch(line.strip()):
            return "".join(lines[:n]), "".join(lines[n:])
    return text, ""


def parse_blocks(report: str) -> list[ScriptResult]:
    """Each ``SQL script N`` block of the per-script report (none with one script)."""
    blocks: list[list[str]] = []
    for line in report.splitlines():
        if _HEADER.fullmatch(line.strip()):
            blocks.append([])
        if blocks:
            blocks[-1].append(line.strip())
    return [_block(b) for b in blocks]


def _block(lines: list[str]) -> ScriptResult:
    header = _HEADER.fullmatch(lines[0])
    assert header is not None  # each block starts at its header
    found: dict[str, re.Match[str]] = {}
    for line in lines[1:]:
        for key, pattern in _LINES.items():
            match = pattern.fullmatch(line)
            if match and key not in found:
                found[key] = match
    missing = [k for k in ("weight", "transactions", "failed", "latency_avg_ms") if k not in found]
    if missing:
        raise ScriptsParseError(f"pgbench's report of script {header[1]} ({header[2]}) lacks {', '.join(missing)}")
    stddev = found.get("latency_stddev_ms")
    return ScriptResult(
        number=int(header[1]),
        path=header[2],
        weight=int(found["weight"][1]),
        processed=int(found["transactions"][1]),
        tps=float(found["transactions"][2]),
        failed=int(found["failed"][1]),
        latency_avg_ms=float(found["latency_avg_ms"][1]),
        latency_stddev_ms=None if stddev is None else float(stddev[1]),
        statements=statements(lines),
    )


def statements(lines: list[str]) -> tuple[Statement, ...]:
    """The statements after the first "statement latencies" line of ``lines``, up to the next block."""
    out: list[Statement] = []
    started = False
    for line in (raw.strip() for raw in lines):
        if _STATEMENTS.fullmatch(line):
            if started:
                break
            started = True
            continue
        match = _STATEMENT.fullmatch(line) if started else None
        if match:
            out.append(Statement(float(match[1]), int(match[2]), match[3]))
        elif started and _HEADER.fullmatch(line):
            break
    return tuple(out)


def named(results: list[ScriptResult], names: list[str]) -> dict[str, ScriptResult]:
    """The scripts' results by the workload's names for them, in the order of its ``scripts`` (pgbench's)."""
    if len(results) != len(names):
        raise ScriptsParseError(f"pgbench reported {len(results)} scripts; the workload has {len(names)}")
    return dict(zip(names, results, strict=True))
