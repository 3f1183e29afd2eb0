"""How the tests call layerbench as a user does: `python -m layerbench.cli`, with private directories."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

# Which options each command takes (the others would be refused as unknown).
DIR_OPTIONS = {"run": ("db", "work", "state"), "resume": ("db", "work", "state"), "cleanup": ("state",)}
FLAG = {"db": "--db", "work": "--work-dir", "state": "--state-dir"}


def argv(args: list[str], dirs: dict[str, Path]) -> list[str]:
    names = DIR_OPTIONS.get(args[0], ("db",))
    return [sys.executable, "-m", "layerbench.cli", *args, *[x for n in names for x in (FLAG[n], str(dirs[n]))]]


def run(args: list[str], dirs: dict[str, Path], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv(args, dirs), capture_output=True, text=True, timeout=timeout, check=False)


def start(args: list[str], dirs: dict[str, Path]) -> subprocess.Popen[str]:
    return subprocess.Popen(argv(args, dirs), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def refused(spec: dict[str, Any]) -> str | None:
    """Why this host refuses any of ``spec``'s cells, as `layerbench run` would say it; None if it refuses none.

    A test of a stack this host cannot build skips with that reason (and runs where it can: the test VM)."""
    from layerbench import proc
    from layerbench.spec.load import validate
    from layerbench.spec.matrix import expand
    from layerbench.stack.capabilities import probe

    reasons = sorted({r.reason for r in expand(validate(spec), probe(proc.run)).refused})
    return "; ".join(reasons) or None
