"""The guest's end of the command channel: runs in a VM, executes the host's requests, one at a time.

The host copies this file into the 9p share it gives the guest and the guest's boot unit starts it
with the guest's own python3 (standard library only: it must run on any guest). The share holds:

- ``req/<n>.json``: a request the host wrote (``{"argv": [...], "timeout": seconds}``), renamed into
  place whole, so a request is never read half-written;
- ``res/<n>.json``: the answer (``{"rc": int or null, "stdout": ..., "stderr": ...}``), written the
  same way; ``rc`` null means the command ran past its timeout and its process group was killed;
- ``ready``: written once the agent listens (with the guest's kernel and core count);
- ``stop``: the host's word to end; the boot unit then powers the guest off.

Argument lists only: a request is exec'd as it is, never through a shell.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

POLL_S = 0.05


def write_whole(path: Path, data: dict[str, object]) -> None:
    """Write JSON under a temporary name, then rename: the reader sees all of it or nothing."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def execute(request: dict[str, object]) -> dict[str, object]:
    argv = [str(a) for a in request["argv"]]  # type: ignore[union-attr]
    timeout = float(request.get("timeout") or 600.0)  # type: ignore[arg-type]
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        return {"rc": 127, "stdout": "", "stderr": f"{argv[0]}: {exc}"}
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return {"rc": None, "stdout": out, "stderr": f"timed out after {timeout:.0f}s in the guest\n{err}"}
    return {"rc": proc.returncode, "stdout": out, "stderr": err}


def serve(share: Path) -> None:
    requests, answers = share / "req", share / "res"
    requests.mkdir(exist_ok=True)
    answers.mkdir(exist_ok=True)
    write_whole(share / "ready", {"kernel": platform.release(), "cpus": os.cpu_count()})
    while not (share / "stop").exists():
        pending = sorted(p for p in requests.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
        for req in pending:
            answer = execute(json.loads(req.read_text()))
            write_whole(answers / req.name, answer)
            req.unlink()
        if not pending:
            time.sleep(POLL_S)


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
