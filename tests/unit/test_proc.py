from __future__ import annotations

import time

import pytest

from layerbench import proc
from layerbench.errors import ToolError


def test_arguments_never_reach_a_shell() -> None:
    hostile = "$(touch /tmp/pwned); `id`; rm -rf / | cat && echo >x"
    done = proc.run(["printf", "%s", hostile])
    assert done.rc == 0 and done.stdout == hostile


def test_timeout_kills_and_says_so() -> None:
    t0 = time.monotonic()
    with pytest.raises(ToolError) as err:
        proc.run(["sleep", "30"], timeout=0.5)
    assert err.value.rc is None and "timed out" in str(err.value)
    assert time.monotonic() - t0 < 10


def test_missing_tool_is_a_tool_error() -> None:
    with pytest.raises(ToolError) as err:
        proc.run(["no-such-tool-layerbench"])
    assert err.value.rc == 127
