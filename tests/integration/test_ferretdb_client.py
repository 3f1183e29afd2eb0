"""layerbench's MongoDB binding for YCSB against a private FerretDB, started as layerbench starts it natively.

One server for the module, on a temporary directory instead of a filesystem under test, stopped
when the module's tests are done. What YCSB reports is checked against what the server holds,
counted over MongoDB's wire protocol by layerbench's own probe code.
"""

from __future__ import annotations

import re
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
from layerbench.workloads.servers import mongo_wire
from tests.ycsb_support import every_operation

pytestmark = pytest.mark.requires_ferretdb

CACHE = DEFAULT_CACHE  # where `make ferretdb` builds FerretDB and `make setup` the YCSB jars
FIELDS = {"fieldcount": 5, "fieldlength": 20}
RECORDS = 500


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Endpoint, float]]:
    """One FerretDB natively below /var/tmp (its user must pass; pytest's tmp is 0700), and its start time."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="lb-mongo-"))
    base.chmod(0o711)
    work, ledger = base / "work", Ledger(base / "ledger.db", "mongo")
    (work / "mnt").mkdir(parents=True, mode=0o700)
    ctx = BuildContext(work, ledger, "mongo", proc.run, cache_dir=CACHE)
    mount = Mount(Device("/dev/null", "none", 0), "dir", work / "mnt")
    fields = {"device": {"kind": "loop"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
    stack = StackSpec.model_validate({**fields, "server": "ferretdb"})
    try:
        started = time.monotonic()
        with fleet(stack, mount, None, ctx) as f:
            yield f.endpoints[0], time.monotonic() - started
            stopping = time.monotonic()
        print(f"ferretdb stopped in {time.monotonic() - stopping:.1f} s")  # shown with pytest -s
        assert ledger.live() == []  # stopped and its directory gone
    finally:
        ledger.close()
        shutil.rmtree(base)


@pytest.fixture(scope="module")
def java() -> str:
    return shutil.which("java") or "java"


def _ycsb(java: str, phase: ycsb.Phase, props: dict[str, str]) -> ycsb.YcsbResult:
    done = proc.run(ycsb.argv(java, str(CACHE), "mongodb", phase, props), timeout=180).check()
    result = ycsb.parse(done.stdout)
    assert result.exceptions == (), done.stderr[-2000:]  # YCSB exits 0 even when a client thread failed
    assert "layerbench-ycsb mongodb" not in done.stderr  # the binding says so on stderr when an operation fails
    return result


def _count(e: Endpoint) -> int:
    reply = mongo_wire.command(e.host, e.port, {"count": "usertable", "$db": "ycsb"})
    assert mongo_wire.ok(reply), reply
    return int(reply["n"])  # type: ignore[call-overload]


def _status_bytes(e: Endpoint, field: str) -> int:
    """A memory figure of the server's process from /proc/<pid>/status (VmRSS: now, VmHWM: its peak)."""
    return int(Path(f"/proc/{e.handle.pid}/status").read_text().split(f"{field}:")[1].split()[0]) * 1024


def test_a_server_answers_mongodb_s_protocol_from_its_data_dir(server: tuple[Endpoint, float]) -> None:
    endpoint, seconds = server
    assert mongo_wire.ready(endpoint.host, endpoint.port, proc.run)
    assert endpoint.memory == 256 * 2**20  # the default: FerretDB itself takes no memory setting
    resident = _status_bytes(endpoint, "VmRSS")
    print(f"ferretdb started in {seconds:.2f} s, {resident / 2**20:.0f} MiB resident")  # shown with pytest -s


def test_load_then_a_and_e_read_update_insert_and_scan_what_the_server_holds(
    java: str, server: tuple[Endpoint, float], tmp_path: Path
) -> None:
    e = server[0]
    endpoint = {"host": e.host, "port": str(e.port)}
    spec = ServerSpec(kind="ferretdb", records=RECORDS, **FIELDS)  # type: ignore[arg-type]
    load = YcsbWorkload(name="load", threads=4)  # batched inserts from four threads at once
    insert = _ycsb(java, "load", ycsb.properties(load, spec, RECORDS, endpoint, "load")).operations["INSERT"]
    assert (insert.count, insert.errors) == (RECORDS, 0)
    assert _count(e) == RECORDS

    (record,) = mongo_wire.command(
        e.host, e.port, {"find": "usertable", "limit": 1, "singleBatch": True, "$db": "ycsb"}
    )["cursor"]["firstBatch"]  # type: ignore[index]
    assert sorted(k for k in record if k != "_id") == [f"field{i}" for i in range(5)]
    assert all(len(v) == 20 for k, v in record.items() if k != "_id")  # binary, 20 bytes each

    records = RECORDS
    for mix, expected in (("a", {"READ", "UPDATE"}), ("e", {"SCAN", "INSERT"})):
        w = YcsbWorkload(name=mix, mix=mix, threads=4)  # type: ignore[arg-type]  # bounded by count: every_operation
        (tmp_path / mix).mkdir()
        props = ycsb.properties(w, spec, records, endpoint, "run", hdr_dir=str(tmp_path / mix))
        result = _ycsb(java, "run", every_operation(props))
        assert result.throughput > 0 and expected <= set(result.operations)
        for name in expected:
            op = result.operations[name]
            assert op.count > 0 and op.errors == 0 and op.returns == {"OK": op.count}, (mix, op)
        print(f"ferretdb mix {mix}: {result.throughput:.0f} ops/s")  # shown with pytest -s
        records = ycsb.records_after(result, records)
        assert _count(e) == records  # every insert YCSB counted is in the collection
        assert set(ycsb.merge_hdr_logs([tmp_path / mix])) >= set(result.operations) - {"CLEANUP"}
    assert records > RECORDS  # e inserted


def test_delete_and_a_missing_key_through_ycsb_s_command_line(java: str, server: tuple[Endpoint, float]) -> None:
    # CoreWorkload never deletes: YCSB's own shell drives the binding's insert, read, delete and scan.
    e = server[0]
    argv = [java, "-cp", ycsb.classpath(str(CACHE)), "site.ycsb.CommandLine", "-db", ycsb.BINDINGS["mongodb"]]
    argv += ["-p", f"mongodb.host={e.host}", "-p", f"mongodb.port={e.port}", "-p", "table=shell"]
    script = "insert lbkey field0=a field1=b\nread lbkey\nupdate lbkey field0=c\nread lbkey field0\n"
    script += "delete lbkey\nread lbkey\nupdate lbkey field0=d\ndelete lbkey\nscan lbkey 1\nquit\n"
    done = proc.run(argv, input=script, timeout=120).check()
    codes = re.findall(r"(?:Result|Return code|Return result): (\w+)", done.stdout)  # each command says it its way
    assert codes == ["OK", "OK", "OK", "OK", "OK", "NOT_FOUND", "NOT_FOUND", "NOT_FOUND", "OK"], done.stdout
    assert "field0=a" in done.stdout and "field1=b" in done.stdout and "field0=c" in done.stdout


def test_a_closed_port_and_an_unknown_write_concern_fail_the_client_with_the_reason(
    java: str, server: tuple[Endpoint, float]
) -> None:
    spec = ServerSpec(kind="ferretdb", records=10, **FIELDS)  # type: ignore[arg-type]
    w = YcsbWorkload(name="a", mix="a", threads=2, runtime_s=1)
    e = server[0]
    bad_concern = {"host": e.host, "port": str(e.port), "writeconcern": "some"}
    closed = {"host": "127.0.0.1", "port": "1", "mongodb.timeout.ms": "2000"}  # the driver waits this long for a server
    for endpoint, reason in (
        (bad_concern, "mongodb.writeconcern: some is not a write concern"),
        (closed, "MongoDB at 127.0.0.1:1: MongoTimeoutException"),
    ):
        props = ycsb.properties(w, spec, 10, endpoint, "run")
        done = proc.run(ycsb.argv(java, str(CACHE), "mongodb", "run", props), timeout=120)
        result = ycsb.parse(done.stdout)
        # An exception in the report is what fails the trial (database_trial): no operation was measured.
        assert result.operations == {} and len(result.exceptions) == 2  # one per client thread
        assert all(reason in x for x in result.exceptions), result.exceptions
    assert "Connection refused" in done.stdout  # the driver's cause, kept in the message


def test_the_server_stayed_within_the_memory_it_is_sized_to(server: tuple[Endpoint, float]) -> None:
    """Last in the module: the peak resident size over the server's whole life so far (after the loads,
    the mixes and the shell's commands above, when they ran), not a snapshot that a garbage collection
    or a slow host moves. Measured: 20-21 MiB resident at start, a peak of 37-47 MiB after the module
    (four runs, two of them beside two CPU-bound loops); the budget is the endpoint's memory (256 MiB,
    the default), 5.4 times the highest peak."""
    endpoint = server[0]
    peak = _status_bytes(endpoint, "VmHWM")
    print(f"ferretdb peak resident {peak / 2**20:.0f} MiB")  # shown with pytest -s
    assert peak < endpoint.memory, (peak, endpoint.memory)
