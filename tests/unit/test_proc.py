from __future__ import annotations

from pathlib import Path

import pytest

from layerbench import proc
from layerbench.errors import ToolError


def test_arguments_never_reach_a_shell() -> None:
    hostile = "$(touch /tmp/pwned); `id`; rm -rf / | cat && echo >x"
    done = proc.run(["printf", "%s", hostile])
    assert done.rc == 0 and done.stdout == hostile


def sleeper(pidfile: Path) -> list[str]:
    """A sleep that leaves its PID behind, so a test can see it gone rather than time it."""
    return ["sh", "-c", f'echo $$ > "{pidfile}"; exec sleep 30']


def gone(pidfile: Path) -> bool:
    if not pidfile.exists():
        return True  # killed before its shell wrote the file: there was never a sleep to outlive the kill
    pid = int(pidfile.read_text())
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"  # killed, not yet reaped by whoever else might own the PID number now


def test_timeout_kills_and_says_so(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as err:
        proc.run(sleeper(tmp_path / "pid"), timeout=0.5)
    assert err.value.rc is None and "timed out" in str(err.value)
    assert gone(tmp_path / "pid")


def test_missing_tool_is_a_tool_error() -> None:
    with pytest.raises(ToolError) as err:
        proc.run(["no-such-tool-layerbench"])
    assert err.value.rc == 127


def test_run_all_runs_together_and_keeps_each_output() -> None:
    span = "date +%s.%N; sleep 0.5; date +%s.%N"
    done = proc.run_all([["sh", "-c", f"{span}; echo a"], ["sh", "-c", f"{span}; echo b >&2; exit 3"]])
    (a0, a1), (b0, b1) = ([float(t) for t in d.stdout.split()[:2]] for d in done)
    assert a0 < b1 and b0 < a1  # their lives overlap: side by side, not one after the other
    assert [(d.rc, d.stdout.split()[2:], d.stderr) for d in done] == [(0, ["a"], ""), (3, [], "b\n")]


def test_run_all_kills_every_client_when_one_times_out(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as err:
        proc.run_all([sleeper(tmp_path / "a"), sleeper(tmp_path / "b")], timeout=0.5)
    assert err.value.rc is None
    assert gone(tmp_path / "a") and gone(tmp_path / "b")
