"""The suite's deadlines: a tier's SIGTERM writes every thread's stack and still tears down; a wait names
what it waited for when it gives up."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deadlines import wait_for

REPO = Path(__file__).resolve().parents[2]
HANGING = """\
import threading, time
import pytest

@pytest.fixture
def held(tmp_path_factory):
    yield
    open({torn!r}, "w").write("torn down")

def test_hangs(held):
    threading.Thread(target=time.sleep, args=(60,), name="bystander", daemon=True).start()
    open({started!r}, "w").write("started")
    time.sleep(60)
"""


def test_sigterm_dumps_every_thread_and_tears_down(tmp_path: Path) -> None:
    started, torn = tmp_path / "started", tmp_path / "torn"
    test_file = tmp_path / "test_hang.py"
    test_file.write_text(HANGING.format(started=str(started), torn=str(torn)))
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.deadlines", str(test_file)]
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(started.exists, "the hanging test to start", 60.0, alive=lambda: proc.poll() is None)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert "ran past its budget" in out + err
    # faulthandler's dump: the main thread's stack at the sleep, and the other thread's.
    assert re.search(r"^Current thread 0x", err, re.M) and re.search(r"^Thread 0x", err, re.M), err
    assert "test_hang.py" in err, err
    assert torn.read_text() == "torn down"


def test_wait_for_returns_the_state_once_reached() -> None:
    calls = iter([None, False, [], "found"])
    assert wait_for(lambda: next(calls), "a state", 10.0) == []  # an empty list is a state, not a miss


def test_wait_for_gives_up_naming_what_it_waited_for() -> None:
    with pytest.raises(AssertionError, match=r"gave up waiting for the moon after 0 s"):
        wait_for(lambda: None, "the moon", 0.0)
    with pytest.raises(AssertionError, match=r"the moon: the process it depended on ended"):
        wait_for(lambda: None, "the moon", 60.0, alive=lambda: False)
