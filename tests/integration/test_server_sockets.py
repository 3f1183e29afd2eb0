"""Where database servers listen in a private Docker daemon, while they serve: on their container's
bridge address (the default network) or on loopback (tuning host-network), never on every interface,
and never letting a client in without the run's password. (Natively: tests/integration/test_db_clients.py
and tests/long/test_cassandra_client.py; Swarm and Kubernetes: tests/k8s.)

One private dockerd on a loop-mounted xfs for the module; each server started as a run starts it
(stack/fleet.py), its sockets read from its own network namespace's tables (tests/sockets.py).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from layerbench import proc
from layerbench.spec.models import EngineSpec, StackSpec
from layerbench.stack.engines import ENGINES
from layerbench.stack.fleet import fleet
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext
from layerbench.workloads.servers import SERVERS
from tests import sockets
from tests.integration.test_docker_stack import XFS, loop_fs

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_docker, pytest.mark.requires_db]


@pytest.fixture(scope="module")
def docker() -> Iterator[tuple[Any, Any, BuildContext]]:
    """A private dockerd (overlay2 on xfs) and the context its servers are started in."""
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="lb-sockets-") as tmp:
        base = Path(tmp)
        base.chmod(0o711)
        work = base / "work"
        work.mkdir(mode=0o700)
        ledger = Ledger(base / "ledger.db", "sockets")
        ctx = BuildContext(work, ledger, "sockets", proc.run)
        try:
            spec = EngineSpec(kind="docker", driver="overlay2")
            with loop_fs(base, "xfs", XFS) as mount, ENGINES["docker"].start(mount, spec, ctx) as engine:
                yield mount, engine, ctx
            assert ledger.live() == []
        finally:
            ledger.close()


@pytest.mark.parametrize("tuning", ["default", "host-network"])
@pytest.mark.parametrize("kind", ["postgres", "redis"])
def test_a_server_in_a_container_listens_where_its_client_is_and_wants_the_password(
    docker: tuple[Any, Any, BuildContext], kind: str, tuning: str
) -> None:
    mount, engine, ctx = docker
    spec = {"device": {"kind": "loop"}, "filesystem": "xfs", "engine": "docker:overlay2", "placement": "volume",
            "tuning": tuning}  # fmt: skip
    stack = StackSpec.model_validate({**spec, "server": {"kind": kind, "memory": "256MiB"}})
    with fleet(stack, mount, engine, ctx) as f:
        (e,) = f.endpoints
        found = sockets.listening(e.handle.pid)
        assert found == [sockets.Listening(e.host, e.port)]  # its client's address, and no other
        assert (e.host == "127.0.0.1") == (tuning == "host-network") and found[0].private
        assert sockets.exposed(kind, e.handle.pid, e.host, e.port) == []
        assert not sockets.lets_in_without_password(kind, e.host, e.port)
        assert SERVERS[kind].ready(e.host, e.port, proc.run, ctx.password)
