"""This host's routes, from `ip route get`: which address a peer sees this host connect from."""

from __future__ import annotations

from layerbench.errors import LayerbenchError
from layerbench.proc import Runner


def source_address(peer: str, runner: Runner) -> str:
    """This host's address as ``peer`` sees it: the source of the route to it (what a server admits)."""
    words = runner(["ip", "-o", "route", "get", peer], timeout=30).check().stdout.split()
    if "src" not in words:
        raise LayerbenchError(f"this host has no route to {peer}: {' '.join(words)}")
    return words[words.index("src") + 1]
