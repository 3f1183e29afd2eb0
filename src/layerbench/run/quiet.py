"""Waiting for the host to be quiet before a disturbed trial is measured again (run/loop.py's _undisturbed).

Between trials nothing of the cell runs, so whatever keeps the host's cores
busy then is someone else: a neighbour whose burst disturbed the last attempt.
Measuring again at once, inside the same burst, would be disturbed again.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from layerbench.run.measure.checks import contended_limit
from layerbench.run.measure.monitor import cpu_shares, parse_proc_stat

WINDOW_S = 0.5  # the host must stay below the limit over one such window
MAX_WAIT_S = 10.0  # a host that never quiets down is measured anyway: the attempt keeps its flag


def busy_cores(window_s: float = WINDOW_S, stat: Path = Path("/proc/stat")) -> float:
    """Cores the host kept busy (user, system, interrupts) over the next ``window_s`` seconds."""
    before = parse_proc_stat(stat.read_text())
    time.sleep(window_s)
    shares = cpu_shares(before, parse_proc_stat(stat.read_text()))
    return (shares["cpu.user"] + shares["cpu.system"]) / 100 * (os.cpu_count() or 1)


def wait_quiet(max_wait_s: float = MAX_WAIT_S) -> float:
    """Wait until the host's busy cores fall below the contended check's limit, at most ``max_wait_s``;
    the seconds waited."""
    limit = contended_limit(os.cpu_count() or 1)
    start = time.monotonic()
    deadline = start + max_wait_s
    while time.monotonic() < deadline and busy_cores() >= limit:
        continue
    return time.monotonic() - start
