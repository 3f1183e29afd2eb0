"""A process started under a ledger row's mark is found and ended by the mark alone: a run killed
after recording the row but before recording the PID leaves nothing running (real processes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from layerbench.proc import spawn
from layerbench.stack import handle
from tests.deadlines import wait_for

# A parent that forks a child, as fio forks its jobs: both carry the mark, both must go.
FORKING = "import os, time\nif os.fork() == 0:\n    time.sleep(600)\nelse:\n    time.sleep(600)\n"


def _alive(pid: int) -> bool:
    return handle.start_time(pid) is not None


def _command(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:  # gone
        return None


def test_kill_marked_ends_the_marked_process_and_its_children_and_nothing_else(tmp_path: Path) -> None:
    mark, other = handle.new_mark(), handle.new_mark()
    marked = spawn([sys.executable, "-c", FORKING], tmp_path / "m.log", env=handle.marked_env(mark))
    bystander = spawn([sys.executable, "-c", FORKING], tmp_path / "o.log", env=handle.marked_env(other))
    try:
        children = _children_when_forked(marked.pid)
        handle.kill_marked(mark)
        marked.wait(30)
        # A killed child stays in /proc until whoever inherited it reaps it: wait for that, not for luck.
        gone = lambda: (not any(_alive(c) for c in children)) or None  # noqa: E731
        assert not _alive(marked.pid) and wait_for(gone, f"the children {children} of a killed parent to go", 60.0)
        assert _alive(bystander.pid)
    finally:
        handle.kill_if_same(bystander.pid, handle.start_time(bystander.pid))
        bystander.wait(30)
        handle.kill_marked(mark)


def test_an_unknown_mark_kills_nothing(tmp_path: Path) -> None:
    process = spawn(["sleep", "600"], tmp_path / "s.log", env=handle.marked_env(handle.new_mark()))
    try:
        handle.kill_marked(handle.new_mark())
        assert process.poll() is None
    finally:
        process.kill()
        process.wait(30)


def _children_when_forked(pid: int) -> list[int]:
    """Waits on state: the parent's child listed in /proc (pgrep -P reads the same)."""

    def children() -> list[int] | None:
        found = subprocess.run(
            ["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False, timeout=60
        ).stdout
        return [int(p) for p in found.split()] or None

    return wait_for(children, f"process {pid} to fork", 60.0, alive=lambda: _alive(pid))


# A caller that starts a helper with die_with_parent, says its PID, then waits to be killed.
PARENT = (
    "import sys, time\nfrom pathlib import Path\nfrom layerbench.proc import spawn\n"
    "p = spawn(['sleep', '600'], Path(sys.argv[1]), die_with_parent=True)\nprint(p.pid, flush=True)\ntime.sleep(600)\n"
)


def test_a_helper_started_to_die_with_its_parent_ends_when_the_parent_is_killed(tmp_path: Path) -> None:
    """As the KVM probe's qemu must when a command's timeout kills doctor mid-probe."""
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tmp_path / "h.log")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        helper = int(parent.stdout.readline())
        started = handle.start_time(helper)
        assert started is not None
        # setpriv arms the signal between fork and exec: a parent killed before then leaves the helper be.
        wait_for(lambda: _command(helper) == "sleep", f"helper {helper} to exec sleep", 60.0)
    finally:
        parent.kill()
        parent.wait(30)
    try:
        wait_for(lambda: not _alive(helper), f"helper {helper} to end with its parent", 60.0)
    finally:
        handle.kill_if_same(helper, started)  # only if the test failed: never leave it running
