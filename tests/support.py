"""How the tests call layerbench as a user does: `python -m layerbench.cli`, with private directories."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Which options each command takes (the others would be refused as unknown).
DIR_OPTIONS = {"run": ("db", "work", "state"), "resume": ("db", "work", "state"), "cleanup": ("state",), "doctor": ()}
FLAG = {"db": "--db", "work": "--work-dir", "state": "--state-dir"}


def argv(args: list[str], dirs: dict[str, Path]) -> list[str]:
    names = DIR_OPTIONS.get(args[0], ("db",))
    return [sys.executable, "-m", "layerbench.cli", *args, *[x for n in names for x in (FLAG[n], str(dirs[n]))]]


# How long an interrupted layerbench gets to tear down what it built before it is killed.
TEARDOWN_S = 90.0


def run(
    args: list[str], dirs: dict[str, Path], timeout: float = 600, prefix: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """Run layerbench to its end. Interrupted (a test's deadline, the tier's SIGTERM), it is asked to stop
    as a user's Ctrl-C asks, so it tears down its stack, instead of subprocess.run's SIGKILL, which would
    leave its mounts and daemons to the next test. ``prefix``: a command that execs the rest (it must keep
    the PID, so that the interrupt reaches layerbench)."""
    proc = start(args, dirs, prefix)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=TEARDOWN_S)
        finally:
            proc.kill()
            proc.wait()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_and_show(spec: Path, dirs: dict[str, Path], timeout: float) -> dict[str, Any]:
    """`layerbench run SPEC` to a clean exit, then what `show latest --json` says of it."""
    done = run(["run", str(spec)], dirs, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = run(["show", "latest", "--json"], dirs)
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


def trials_labelled(db_path: Path) -> list[tuple[int, str, str, str]]:
    """Every trial of the results database as (its id, status, stderr, its cell's label)."""
    with sqlite3.connect(db_path) as db:
        query = "SELECT t.id, t.status, t.stderr, c.label FROM trials t JOIN cells c USING (run_id, cell_id)"
        return [tuple(row) for row in db.execute(query)]  # type: ignore[misc]


def start(args: list[str], dirs: dict[str, Path], prefix: Sequence[str] = ()) -> subprocess.Popen[str]:
    command = [*prefix, *argv(args, dirs)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def refused(spec: dict[str, Any]) -> str | None:
    """Why this host refuses any of ``spec``'s cells, as `layerbench run` would say it; None if it refuses none.

    A test of a stack this host cannot build skips with that reason (and runs where it can: the test VM)."""
    from layerbench import proc
    from layerbench.spec.load import validate
    from layerbench.spec.matrix import expand
    from layerbench.stack.capabilities import probe

    reasons = sorted({r.reason for r in expand(validate(spec), probe(proc.run)).refused})
    return "; ".join(reasons) or None
