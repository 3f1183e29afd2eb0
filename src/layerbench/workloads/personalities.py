"""Filebench-style personalities, built from fio's file-level engines and job sections.

Each personality is the operation mix of one of Filebench's published
workloads (fileserver, varmail, videoserver, webproxy, webserver): one fio job
section per operation, run concurrently. The mix is fixed by construction:
each section performs a set number of operations (``nrfiles`` x ``loops``),
so its share of all operations is that of the Filebench flow, whatever the
device's speed. Named "-like": they mirror Filebench's definitions, they are
not Filebench.

Where they differ from Filebench, on purpose: each operation works on its own
files (Filebench threads share one fileset, so a delete can race a read);
file sizes are fixed (Filebench draws them from a gamma distribution around
the mean); sizes and counts are scaled down (``scale``) to fit a small host;
a thread's open and close are part of fio's per-file cost, not counted as
operations of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from layerbench.spec.sizes import parse_size

KiB = 1024


@dataclass(frozen=True)
class Op:
    """One operation stream: ``per_loop`` of these in each Filebench flow iteration."""

    name: str
    kind: str  # create | delete | stat | write | append | read
    per_loop: int
    file_size: int
    io_size: int
    fsync: bool = False


@dataclass(frozen=True)
class Personality:
    name: str
    mirrors: str  # the Filebench parameters this follows
    loops: int  # flow iterations at scale 1
    ops: tuple[Op, ...]


PERSONALITIES: dict[str, Personality] = {
    "fileserver-like": Personality(
        "fileserver-like",
        "fileserver.f: filesize 128k, iosize 1m, meanappendsize 16k; per loop create+write whole file, "
        "append, read whole file, delete, stat (one each)",
        400,
        (
            Op("create", "create", 1, 128 * KiB, 128 * KiB),
            Op("write-whole", "write", 1, 128 * KiB, 128 * KiB),
            Op("append", "append", 1, 16 * KiB, 16 * KiB),
            Op("read-whole", "read", 1, 128 * KiB, 128 * KiB),
            Op("delete", "delete", 1, 128 * KiB, 128 * KiB),
            Op("stat", "stat", 1, 128 * KiB, 128 * KiB),
        ),
    ),
    "varmail-like": Personality(
        "varmail-like",
        "varmail.f: filesize 16k, meanappendsize 16k; per loop delete, create, append+fsync twice, "
        "read whole file twice",
        400,
        (
            Op("delete", "delete", 1, 16 * KiB, 16 * KiB),
            Op("create", "create", 1, 16 * KiB, 16 * KiB),
            Op("append-fsync", "append", 2, 16 * KiB, 16 * KiB, fsync=True),
            Op("read-whole", "read", 2, 16 * KiB, 16 * KiB),
        ),
    ),
    "webproxy-like": Personality(
        "webproxy-like",
        "webproxy.f: filesize 16k, meanappendsize 16k; per loop delete, create, append, read whole file five times",
        400,
        (
            Op("delete", "delete", 1, 16 * KiB, 16 * KiB),
            Op("create", "create", 1, 16 * KiB, 16 * KiB),
            Op("append", "append", 1, 16 * KiB, 16 * KiB),
            Op("read-whole", "read", 5, 16 * KiB, 16 * KiB),
        ),
    ),
    "webserver-like": Personality(
        "webserver-like",
        "webserver.f: filesize 16k, meanappendsize 16k; per loop read whole file ten times, append to the log once",
        400,
        (
            Op("read-whole", "read", 10, 16 * KiB, 16 * KiB),
            Op("append-log", "append", 1, 16 * KiB, 16 * KiB),
        ),
    ),
    "videoserver-like": Personality(
        "videoserver-like",
        "videoserver.f: large video files, iosize 256k; many readers stream whole videos while one writer adds "
        "new ones (48 readers : 1 writer, here 8 : 1 by operations)",
        64,
        (
            Op("stream-read", "read", 8, 8 * 1024 * KiB, 256 * KiB),
            Op("new-video", "write", 1, 8 * 1024 * KiB, 256 * KiB),
        ),
    ),
}


def job_file(name: str, scale: float = 1.0, direct: bool = False) -> str:
    """The fio job file of a personality; the caller points it at the placement."""
    p = PERSONALITIES[name]
    loops = max(1, round(p.loops * scale))
    sections = [f"[global]\ndirect={int(direct)}\nioengine=psync\nrefill_buffers=1\n"]
    sections += [_section(p.name, op, loops) for op in p.ops]
    return "\n".join(sections)


def expected_mix(name: str) -> dict[str, float]:
    """Each operation's share of all operations, as Filebench's flow defines it."""
    ops = PERSONALITIES[name].ops
    total = sum(o.per_loop for o in ops)
    return {o.name: o.per_loop / total for o in ops}


def _section(personality: str, op: Op, loops: int) -> str:
    """``loops`` files (or ``loops * per_loop`` transfers) for this operation, each op once per file pass."""
    # Files named by personality and operation: personalities never read each other's files.
    lines = [f"[{op.name}]", f"filename_format={personality}.{op.name}.$filenum", f"filesize={op.file_size}"]
    if op.kind in ("create", "write", "append"):
        lines.append("unlink=1")  # the next trial creates, writes and appends to fresh files too
    if op.kind in ("create", "delete", "stat"):
        # One file operation per file: fio's block size is the file, so each file is one op.
        lines += [f"ioengine=file{op.kind}", f"bs={op.file_size}", f"nrfiles={loops * op.per_loop}"]
    else:
        per_file = op.file_size // op.io_size
        files = loops if per_file <= op.per_loop else -(-loops * op.per_loop // per_file)
        repeat = max(1, op.per_loop // per_file) if per_file <= op.per_loop else 1
        if op.kind == "append":  # fio appends once per file and pass; a second pass appends nothing
            files, repeat = loops * op.per_loop, 1
        lines += [f"rw={'read' if op.kind == 'read' else 'write'}", f"bs={op.io_size}", f"nrfiles={files}"]
        lines += [f"loops={repeat}"] if repeat > 1 else []
        if per_file > op.per_loop:  # large files: count transfers, not files
            lines += [f"number_ios={loops * op.per_loop}"]
        if op.kind == "append":
            lines.append("file_append=1")
        if op.fsync:
            lines.append("fsync=1")
    return "\n".join(lines) + "\n"


def markdown() -> str:
    """docs/personalities.md: `python -m layerbench.workloads.personalities > docs/personalities.md`."""
    out = [
        "# Filebench-like personalities\n",
        "Generated by `python -m layerbench.workloads.personalities`; a test checks that this page matches the code.\n",
        (__doc__ or "").strip() + "\n",
        "A personality's headline number is **ops/s**: every operation of every section over the longest "
        "section's runtime (Filebench's own figure); each section's ops/s and latency percentiles are kept "
        "per job.\n",
    ]
    for name, p in PERSONALITIES.items():
        mix = expected_mix(name)
        out += [
            f"## {name}\n",
            f"Mirrors: {p.mirrors}.\n",
            "| operation | kind | per flow loop | share of all ops | file size | I/O size | fsync |",
            "|---|---|---:|---:|---:|---:|---|",
        ]
        out += [
            f"| {o.name} | {o.kind} | {o.per_loop} | {mix[o.name]:.1%} | {o.file_size // KiB} KiB "
            f"| {o.io_size // KiB} KiB | {'yes' if o.fsync else ''} |"
            for o in p.ops
        ]
        out += [
            f"\nAt `scale: 1` it runs {p.loops} flow loops. Its fio job file at `scale: 0.25`:\n",
            "```ini\n" + job_file(name, 0.25).strip() + "\n```\n",
        ]
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown(), end="")


def job_file_bytes(text: str) -> dict[str, int]:
    """A personality's files (its job file is our own plain fio), as fio lays them out: ``size`` per job
    (else ``nrfiles`` x ``filesize``), times ``numjobs`` unless a ``filename`` names one file the clones share.
    A user's job file is read by fio instead (``jobfile``)."""
    out: dict[str, int] = {}
    defaults: dict[str, str] = {}
    for name, options in _sections(text):
        if name == "global":
            defaults.update(options)
            continue
        o = {**defaults, **options}
        one = _job_bytes(o)
        if "filename" in o:
            out[f"file {o['filename']}"] = max(out.get(f"file {o['filename']}", 0), one)
        else:
            out[f"[{name}]"] = out.get(f"[{name}]", 0) + one * int(o.get("numjobs", "1"))
    return out


def _job_bytes(o: dict[str, str]) -> int:
    if "size" in o and not o["size"].endswith("%"):
        return parse_size(o["size"])
    # A range "4k-64k" lays files out up to its top.
    each = parse_size(o.get("filesize", "0").split("-")[-1].split(":")[-1])
    return each * int(o.get("nrfiles", "1"))


def _sections(text: str) -> list[tuple[str, dict[str, str]]]:
    sections: list[tuple[str, dict[str, str]]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            sections.append((stripped[1:-1].strip(), {}))
        elif stripped and stripped[0] not in ";#" and sections:
            key, _, value = (part.strip() for part in stripped.partition("="))
            sections[-1][1][key.lower()] = value
    return sections
