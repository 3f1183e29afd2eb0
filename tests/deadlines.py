"""Deadlines for the whole suite: no test and no tier can hang without saying where.

Every test has pytest-timeout's limit (``timeout`` in pyproject.toml; a test that needs longer says why
in its own ``@pytest.mark.timeout``). A tier has a budget of its own (the Makefile runs pytest under
coreutils ``timeout``); past it, coreutils ``timeout`` sends SIGTERM, and this plugin writes every thread's stack
and interrupts the session, so an overrun says where it was and still tears down what it started.

Loaded with ``-p tests.deadlines`` (pyproject.toml), before any test module is imported.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
POLL_S = 0.2
# The terminal's stderr, kept before pytest's capture redirects fd 2 (a -p plugin is imported first): a
# dump written there is seen even if the interrupted session never gets to print what it captured.
STDERR_FD = os.dup(2)


def pytest_configure() -> None:
    signal.signal(signal.SIGTERM, _overrun)


def _overrun(signum: int, _frame: object) -> None:
    """SIGTERM (the tier's budget ran out): every thread's stack, then an interrupt, so that pytest
    still runs the fixtures' teardowns (daemons, mounts, guests) before it exits."""
    faulthandler.dump_traceback(file=STDERR_FD, all_threads=True)
    raise KeyboardInterrupt(f"signal {signum}: this tier ran past its budget (every thread's stack is above)")


def wait_for(found: Callable[[], T | None], what: str, limit_s: float, alive: Callable[[], bool] | None = None) -> T:
    """Poll ``found`` until it returns something other than None or False, at most ``limit_s`` seconds.

    ``alive`` (e.g. ``lambda: proc.poll() is None``) ends the wait early when what was to produce the
    state is gone. Either way the failure names what was waited for."""
    deadline = time.monotonic() + limit_s
    while True:
        value = found()
        if value is not None and value is not False:
            return value
        if alive is not None and not alive():
            raise AssertionError(f"gave up waiting for {what}: the process it depended on ended")
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what} after {limit_s:.0f} s")
        time.sleep(POLL_S)
