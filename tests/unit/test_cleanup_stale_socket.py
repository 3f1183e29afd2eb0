"""A dead run's daemon may leave its socket file behind; cleanup must not trip on it."""

from __future__ import annotations

import socket
from pathlib import Path

from layerbench.proc import run
from layerbench.stack.cleanup import REMOVERS
from layerbench.stack.ledger import Resource


def _stale_socket(path: Path) -> socket.socket:
    # Bound but never listening: connecting is refused, as with a killed dockerd's socket.
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    return sock


def _resource(kind: str, ident: str, sock: Path) -> Resource:
    return Resource(id=1, run_id="r", pid=0, kind=kind, ident=ident, detail={"socket": str(sock)})


def test_containers_and_volumes_of_a_dead_daemon_are_gone_with_it(tmp_path: Path) -> None:
    path = tmp_path / "docker.sock"
    with _stale_socket(path):
        REMOVERS["container"](_resource("container", "lb-dead", path), run)
        REMOVERS["volume"](_resource("volume", "lb-vol", path), run)
