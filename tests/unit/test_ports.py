"""Ports for servers and a guest's forwards: outside the kernel's ephemeral range, distinct, free."""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from layerbench.stack import ports


def test_the_ephemeral_range_is_read_from_the_kernel_or_linux_s_default(tmp_path: Path) -> None:
    (tmp_path / "range").write_text("40000\t50000\n")
    assert ports.ephemeral_range(tmp_path / "range") == (40000, 50000)
    assert ports.ephemeral_range(tmp_path / "absent") == (32768, 60999)


def test_candidates_leave_out_the_ephemeral_range_the_node_ports_and_the_low_ports() -> None:
    pool = ports.candidates(32768, 60999)
    assert (min(pool), max(pool)) == (ports.FLOOR, ports.CEILING)
    assert 29999 in pool and 61000 in pool
    assert not [p for p in pool if 30000 <= p <= 60999]  # the range, and Kubernetes' NodePorts below it
    assert len(ports.candidates(40000, 50000)) == (29999 - 10000 + 1) + (39999 - 32768 + 1) + (65535 - 50001 + 1)
    assert ports.candidates(1024, 65535) == []  # a host that gave every port to the range


def test_ports_are_distinct_free_and_outside_this_host_s_ephemeral_range() -> None:
    low, high = ports.ephemeral_range()
    found = ports.free_ports(8)
    assert len(set(found)) == 8
    assert not [p for p in found if low <= p <= high]
    for port in found:  # each can be bound now, as qemu or a server will
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", port))


class _Taken(random.Random):
    """Offers the taken port first, then the rest of the pool in order."""

    def __init__(self, taken: int) -> None:
        super().__init__()
        self.taken = taken

    def sample(self, population: Sequence[Any], k: int, **_: Any) -> list[Any]:  # type: ignore[override]
        return [self.taken, *(p for p in population if p != self.taken)][:k]


def test_a_port_someone_listens_on_is_passed_over() -> None:
    with _listening_outside_the_range() as taken:
        found = ports.free_ports(2, _Taken(taken))
    assert taken not in found and len(set(found)) == 2


@contextmanager
def _listening_outside_the_range() -> Iterator[int]:
    """A port of the pool another socket listens on, as a server started elsewhere would."""
    for port in ports.candidates(*ports.ephemeral_range()):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            s.listen()
            yield port
            return
    pytest.fail("no port of the pool is free")


def test_a_host_with_no_room_outside_the_range_gets_the_kernel_s_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (1024, 65535))
    found = ports.free_ports(3)
    assert len(set(found)) == 3
