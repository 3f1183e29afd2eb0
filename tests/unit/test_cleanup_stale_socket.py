"""A dead run's daemon may leave its socket file behind; cleanup must not trip on it."""

from __future__ import annotations

import socket
from pathlib import Path

from layerbench.proc import run
from layerbench.stack.cleanup import reclaim
from layerbench.stack.ledger import Ledger


def _stale_socket(path: Path) -> socket.socket:
    # Bound but never listening: connecting is refused, as with a killed dockerd's socket.
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    return sock


def test_containers_and_volumes_of_a_dead_daemon_are_gone_with_it(tmp_path: Path) -> None:
    path, state = tmp_path / "docker.sock", tmp_path / "state"
    dead = Ledger(state / "ledger.db", "dead-run")  # no lock file: its run is not alive
    dead.record("container", "lb-dead", socket=str(path))
    dead.record("volume", "lb-vol", socket=str(path))
    with _stale_socket(path):
        assert path.is_socket()  # the remover sees a socket, not a missing file
        actions = reclaim(Ledger(state / "ledger.db", "cleanup"), state, run)
    # Each marked removed, none with an error: the refused connection means the daemon took them with it.
    assert sorted((a.resource.kind, a.done, a.error) for a in actions) == [
        ("container", True, None),
        ("volume", True, None),
    ]
    assert dead.live() == []
