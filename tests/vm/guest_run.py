"""Run in the test VM by tests/vm/test_modern_host.py: one `layerbench run` of every kernel path this host
lacks, SIGKILLed once at each path whose cleanup is the kernel's (a devicemapper thin pool, an NVMe/TCP
connection), cleaned up and resumed each time, then shown. What it saw goes to the share as JSON, for
the host's tests to judge: here nothing is asserted, so one failure never hides the next path's result.

Why one run: under emulation every `layerbench` process spent about 40 s importing its libraries (7-15 s
since 2026-11-28) and every daemon minutes starting, so a test per path (each its own runs) took 3 minutes a
path.

Usage: python tests/vm/guest_run.py SPEC.json SHARE_DIR
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.integration.leftovers import leftovers

# Each kill waits until the ledger holds these kinds: the run has built that path and is using it.
KILL_AT = {"devicemapper": {"thinpool", "container"}, "nvme-tcp": {"nvmet", "nvme-connection"}}
STEP_LIMIT_S = 900.0  # one run, resume or cleanup under emulation; the host bounds the whole guest too
BASE = Path("/var/tmp/lb-modern")
DIRS = {"--db": BASE / "r.db", "--work-dir": BASE / "work", "--state-dir": BASE / "state"}


def layerbench(*args: str) -> list[str]:
    dirs = {"cleanup": ("--state-dir",), "show": ("--db",)}.get(args[0], tuple(DIRS))
    return [sys.executable, "-m", "layerbench.cli", *args, *[x for d in dirs for x in (d, str(DIRS[d]))]]


def live_kinds() -> set[str]:
    ledger = DIRS["--state-dir"] / "ledger.db"
    try:
        with sqlite3.connect(ledger) as db:
            return {k for (k,) in db.execute("SELECT kind FROM resources WHERE removed_at IS NULL")}
    except sqlite3.OperationalError:  # not created yet, or its schema not yet committed
        return set()


def start(*args: str) -> subprocess.Popen[bytes]:
    """To a file, not a pipe: nobody reads a pipe while the run is watched, and a full one would stall it."""
    with (BASE / "output.log").open("ab") as out:
        return subprocess.Popen(layerbench(*args), stdout=out, stderr=subprocess.STDOUT)


def finished(proc: subprocess.Popen[bytes]) -> dict:
    try:
        proc.wait(timeout=STEP_LIMIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return {"rc": proc.returncode, "output": (BASE / "output.log").read_text(errors="replace")[-6000:]}


def kill_when_reached(proc: subprocess.Popen[bytes], pending: dict[str, set[str]]) -> dict | None:
    """SIGKILL ``proc`` once the ledger holds one pending path's kinds; None if the process ended first."""
    deadline = time.monotonic() + STEP_LIMIT_S
    while proc.poll() is None and time.monotonic() < deadline:
        live = live_kinds()
        reached = next((name for name, kinds in pending.items() if kinds <= live), None)
        if reached:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            del pending[reached]
            return {"path": reached, "live": sorted(live_kinds()), "left": leftovers(DIRS["--work-dir"])}
        time.sleep(0.2)
    return None


def cleanup() -> dict:
    done = subprocess.run(layerbench("cleanup"), capture_output=True, text=True, timeout=STEP_LIMIT_S, check=False)
    return {"rc": done.returncode, "output": (done.stdout + done.stderr)[-2000:], "live": sorted(live_kinds())}


def resources(began_wall: float) -> list[list]:
    """Every resource the ledger recorded: kind, what, and when it was made and removed (s from the start):
    where the guest's minutes go, step by step."""
    ledger = DIRS["--state-dir"] / "ledger.db"
    if not ledger.exists():
        return []
    with sqlite3.connect(ledger) as db:
        rows = db.execute("SELECT kind, ident, created_at, removed_at FROM resources ORDER BY created_at").fetchall()
    since = lambda t: None if t is None else round(t - began_wall, 1)  # noqa: E731
    return [[kind, ident[-40:], since(made), since(gone)] for kind, ident, made, gone in rows]


def trials() -> list[dict]:
    if not DIRS["--db"].exists():
        return []
    with sqlite3.connect(DIRS["--db"]) as db:
        rows = db.execute(
            "SELECT t.id, c.stack_label, t.status, t.stderr, t.info_json, t.ended_at FROM trials t "
            "JOIN cells c ON c.run_id = t.run_id AND c.cell_id = t.cell_id"
        ).fetchall()
        out = []
        for tid, label, status, stderr, info, ended in rows:
            checks = db.execute("SELECT name, status, detail FROM checks WHERE trial_id=?", (tid,)).fetchall()
            checks_by_name = {name: [st, detail] for name, st, detail in checks}
            out.append({"label": label, "status": status, "stderr": stderr[-2000:], "checks": checks_by_name})
            out[-1]["info"] = json.loads(info)
            out[-1]["ended_at"] = ended
        return out


def main(spec: Path, share: Path) -> None:
    BASE.mkdir(parents=True, exist_ok=True)
    BASE.chmod(0o711)  # below /var/tmp, as the default work dir is
    began, began_wall = time.monotonic(), time.time()
    timeline: list[tuple[str, float]] = []  # each step's end, in seconds from the start: the tier's time, split

    def done(step: str) -> None:
        timeline.append((step, round(time.monotonic() - began, 1)))

    pending = dict(KILL_AT)
    kills = []
    proc = start("run", str(spec))
    while pending:
        killed = kill_when_reached(proc, pending)
        if killed is None:
            break
        done(f"killed at {killed['path']}")
        killed["cleanup"] = cleanup()
        done("cleanup")
        killed["left_after_cleanup"] = leftovers(DIRS["--work-dir"])
        kills.append(killed)
        proc = start("resume", "latest")
    result = {"last": finished(proc), "kills": kills, "never_reached": sorted(pending)}
    done("run finished")
    shown = subprocess.run(
        layerbench("show", "latest", "--json"), capture_output=True, text=True, check=False, timeout=STEP_LIMIT_S
    )
    done("shown")
    result["show"] = json.loads(shown.stdout) if shown.returncode == 0 else {"error": shown.stderr[-2000:]}
    result["trials"] = trials()
    result["live_after"] = sorted(live_kinds())
    result["left_after"] = leftovers(DIRS["--work-dir"])
    result["timeline"] = timeline
    result["resources"] = resources(began_wall)
    result["began_wall"] = began_wall
    (share / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
