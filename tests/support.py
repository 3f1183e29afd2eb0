"""How the tests call layerbench as a user does: `python -m layerbench.cli`, with private directories."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
