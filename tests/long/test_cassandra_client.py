"""layerbench's CQL binding for YCSB against a private Cassandra, started as layerbench starts it natively.

One server for the module (Cassandra takes 10-60 s to start), on a temporary directory instead of a
filesystem under test, stopped when the module's tests are done.
"""

from __future__ import annotations

import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from layerbench import proc
from layerbench.spec.databases import ServerSpec, YcsbWorkload
from layerbench.spec.models import StackSpec
from layerbench.stack.capabilities import DEFAULT_CACHE
from layerbench.stack.fleet import Endpoint, fleet
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext, Device, Mount
from layerbench.workloads import ycsb
from layerbench.workloads.servers import cassandra
from tests import sockets
from tests.ycsb_support import every_operation

pytestmark = pytest.mark.requires_cassandra

CACHE = DEFAULT_CACHE  # where `make setup` fetches Cassandra and builds the YCSB jars
PASSWORD = secrets.token_urlsafe(24)  # the run's password, as BuildContext makes one
FIELDS = {"fieldcount": 5, "fieldlength": 20}


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Endpoint, float]]:
    """One Cassandra natively below /var/tmp (its user must pass; pytest's tmp is 0700), and its start time."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="lb-cql-"))
    base.chmod(0o711)
    work, ledger = base / "work", Ledger(base / "ledger.db", "cql")
    (work / "mnt").mkdir(parents=True, mode=0o700)
    ctx = BuildContext(work, ledger, "cql", proc.run, cache_dir=CACHE, password=PASSWORD)
    mount = Mount(Device("/dev/null", "none", 0), "dir", work / "mnt")
    fields = {"device": {"kind": "loop"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
    stack = StackSpec.model_validate({**fields, "server": {"kind": "cassandra", "memory": "1GiB"}})
    try:
        started = time.monotonic()
        with fleet(stack, mount, None, ctx) as f:
            yield f.endpoints[0], time.monotonic() - started
        assert ledger.live() == []  # stopped and its directory gone
    finally:
        ledger.close()
        shutil.rmtree(base)


@pytest.fixture(scope="module")
def java() -> str:
    return shutil.which("java") or "java"


def _ycsb(java: str, phase: ycsb.Phase, props: dict[str, str]) -> tuple[ycsb.YcsbResult, str]:
    done = proc.run(ycsb.argv(java, str(CACHE), "cql", phase, props), timeout=180).check()
    result = ycsb.parse(done.stdout)
    assert result.exceptions == (), done.stderr[-2000:]  # YCSB exits 0 even when a client thread failed
    return result, done.stderr


def test_a_server_serves_cql_with_its_heap_and_the_memory_it_was_given(server: tuple[Endpoint, float]) -> None:
    endpoint, seconds = server
    assert cassandra.ready(endpoint.host, endpoint.port, proc.run, PASSWORD)
    assert endpoint.memory == 2**30 and cassandra.heap_bytes(endpoint.memory) == 512 * 2**20
    resident = int(Path(f"/proc/{endpoint.handle.pid}/status").read_text().split("VmRSS:")[1].split()[0]) * 1024
    print(f"cassandra started in {seconds:.1f} s, {resident / 2**20:.0f} MiB resident")  # shown with pytest -s
    assert 512 * 2**20 <= resident <= 2**30  # the pre-touched heap, and no more than it was given


def test_load_and_workloads_a_d_e_read_update_insert_and_scan(
    java: str, server: tuple[Endpoint, float], tmp_path: Path
) -> None:
    endpoint = {"host": endpoint_of(server).host, "port": str(endpoint_of(server).port), "password": PASSWORD}
    spec = ServerSpec(kind="cassandra", records=500, **FIELDS)  # type: ignore[arg-type]
    load = YcsbWorkload(name="load", threads=4)  # four threads create the keyspace and table at once
    insert = _ycsb(java, "load", ycsb.properties(load, spec, 500, endpoint, "load"))[0].operations["INSERT"]
    assert (insert.count, insert.errors) == (500, 0)

    records = 500
    for mix in ("a", "d", "e"):
        w = YcsbWorkload(name=mix, mix=mix, threads=4, consistency="quorum")  # type: ignore[arg-type]  # bounded by count: every_operation
        props = ycsb.properties(w, spec, records, endpoint, "run", hdr_dir=str(tmp_path / mix))
        (tmp_path / mix).mkdir()
        result, _ = _ycsb(java, "run", every_operation(props))
        assert result.throughput > 0
        assert all(op.errors == 0 for op in result.operations.values() if op.errors is not None)
        records = ycsb.records_after(result, records)
        names = set(result.operations)
        assert {"a": {"READ", "UPDATE"}, "d": {"READ", "INSERT"}, "e": {"SCAN", "INSERT"}}[mix] <= names
        read = result.operations.get("READ")
        if read is not None:  # every key read was loaded or inserted before: none may be missing
            assert read.returns == {"OK": read.count}
        assert set(ycsb.merge_hdr_logs([tmp_path / mix])) >= names - {"CLEANUP"}


def test_delete_and_a_missing_key_through_ycsb_s_command_line(java: str, server: tuple[Endpoint, float]) -> None:
    # CoreWorkload never deletes: YCSB's own shell drives the binding's insert, read, delete and scan.
    e = endpoint_of(server)
    argv = [java, "-cp", ycsb.classpath(str(CACHE)), "site.ycsb.CommandLine", "-db", ycsb.BINDINGS["cql"]]
    argv += ["-p", f"cassandra.host={e.host}", "-p", f"cassandra.port={e.port}", "-p", "fieldcount=2"]
    argv += ["-p", f"cassandra.password={PASSWORD}"]
    script = "insert lbkey field0=a field1=b\nread lbkey\ndelete lbkey\nread lbkey\nscan lbkey 1\nquit\n"
    done = proc.run(argv, input=script, timeout=120).check()
    codes = re.findall(r"(?:Result|Return code|Return result): (\w+)", done.stdout)  # each command says it its way
    assert codes == ["OK", "OK", "OK", "NOT_FOUND", "OK"], done.stdout
    assert "field0=a" in done.stdout and "field1=b" in done.stdout


def test_an_unknown_consistency_level_and_a_closed_port_fail_the_client_with_the_reason(
    java: str, server: tuple[Endpoint, float]
) -> None:
    spec = ServerSpec(kind="cassandra", records=10, **FIELDS)  # type: ignore[arg-type]
    w = YcsbWorkload(name="a", mix="a", threads=1, runtime_s=1)
    e = endpoint_of(server)
    bad_level = {"host": e.host, "port": str(e.port), "readconsistencylevel": "SOME", "password": PASSWORD}
    for endpoint, reason in (
        (bad_level, "SOME is not a consistency level"),
        ({"host": "127.0.0.1", "port": "1"}, "Cassandra at 127.0.0.1:1"),
        ({"host": e.host, "port": str(e.port), "password": "wrong"}, f"Cassandra at {e.host}:{e.port}"),
    ):
        done = proc.run(ycsb.argv(java, str(CACHE), "cql", "run", ycsb.properties(w, spec, 10, endpoint, "run")))
        assert reason in done.stdout + done.stderr


def endpoint_of(server: tuple[Endpoint, float]) -> Endpoint:
    return server[0]


def test_it_listens_on_loopback_only_and_wants_the_run_s_password(server: tuple[Endpoint, float]) -> None:
    e = endpoint_of(server)
    assert sockets.Listening("127.0.0.1", e.port) in sockets.listening(e.handle.pid)
    assert sockets.exposed("cassandra", e.handle.pid, e.host, e.port) == []
    assert not sockets.lets_in_without_password("cassandra", e.host, e.port)
    assert not cassandra.ready(e.host, e.port, proc.run, "not-the-password")
