"""A user's own workload files as part of what a cell is: the files a fio job file includes, found as fio finds
them, and a digest of the files' contents.

A cell's id is a hash of its configuration (spec/models.py, ``Cell.id``), and a run is resumed only while the
host builds the same cells (run/start.py). A workload that names a file (a job file and its includes, a pgbench
script) keeps the digest of what the file held when the spec was read: an edited file makes other cells, so a
resumed run never pools the results of two different files under one cell. YCSB's workload file needs none: its
cell keeps the file's whole text, and runs it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

DIGEST_CHARS = 16  # of sha256's hex digits: as YCSB's kept workload files are named (workloads/ycsb.py)
INCLUDE_DEPTH = 8


def lines(file: Path) -> list[str]:
    """A file's lines, stripped; none if it cannot be read (whoever reads it next says why)."""
    try:
        return [ln.strip() for ln in file.read_text(errors="replace").splitlines()]
    except OSError:
        return []


def with_includes(top: Path, depth: int = INCLUDE_DEPTH) -> list[tuple[str, Path]]:
    """The job file and every file it includes, nested ones too, found as fio finds them: (as named, path)."""
    home = top.parent
    found: list[tuple[str, Path]] = [(top.name, top)]
    todo = [top]
    while todo and depth:
        depth -= 1
        batch, todo = todo, []
        for file in batch:
            for line in lines(file):
                if not line.startswith("include"):
                    continue
                name = line[len("include") + 1 :].strip()
                # fio: relative to its working directory (here the job file's), else to the including file's
                where = ((home / name) if (home / name).exists() else (file.parent / name)).resolve()
                if all(where != seen for _, seen in found):
                    found.append((name, where))
                    todo.append(where)
    return found


def digest(files: list[Path]) -> str | None:
    """The digest of the files' contents, in order, each with its name as given; None if one cannot be read
    (the workload's own checks refuse it with the reason)."""
    sha = hashlib.sha256()
    for file in files:
        try:
            content = file.read_bytes()
        except OSError:
            return None
        sha.update(f"{file.name}\0{len(content)}\0".encode())
        sha.update(content)
    return sha.hexdigest()[:DIGEST_CHARS]


def job_file_digest(path: str) -> str | None:
    """A fio job file's digest with every file it includes: an edited include is an edited job file."""
    top = Path(path).resolve()
    return digest([where for _, where in with_includes(top)])


def file_digest(path: str) -> str | None:
    return digest([Path(path)])
