"""Kernel modules a transport needs, loaded on first use (a module that is there but not loaded is
common on distribution kernels); one that cannot load is a prerequisite the rules should have seen."""

from __future__ import annotations

from pathlib import Path

from layerbench.errors import PrerequisiteError
from layerbench.proc import Runner


def load(modules: tuple[str, ...], runner: Runner) -> None:
    for module in modules:
        if Path("/sys/module", module.replace("-", "_")).exists():
            continue
        done = runner(["modprobe", module], timeout=60)
        if done.rc != 0:
            raise PrerequisiteError(f"modprobe {module} failed: {done.stderr.strip() or done.rc}")
