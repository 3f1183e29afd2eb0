"""The YCSB and pgbench adapters against a private PostgreSQL and a private Redis.

The servers are started as layerbench starts them natively (stack/fleet.py),
on a temporary directory instead of a filesystem under test, and stopped when
the module's tests are done. Each requires the run's password: the clients are
given it, and a client without it is refused.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from layerbench import proc
from layerbench.spec.databases import PgbenchWorkload, ServerSpec, YcsbWorkload
from layerbench.spec.models import StackSpec
from layerbench.stack.capabilities import DEFAULT_CACHE
from layerbench.stack.fleet import Endpoint, fleet
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext, Device, Mount
from layerbench.workloads import pgbench, ycsb
from layerbench.workloads.servers import SERVERS
from layerbench.workloads.servers.postgres import bindir as postgres_bindir
from tests import sockets
from tests.ycsb_support import every_operation

pytestmark = pytest.mark.requires_db

CACHE = DEFAULT_CACHE  # where `make setup` builds the YCSB jars
PASSWORD = secrets.token_urlsafe(24)  # the run's password, as BuildContext makes one


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Endpoint]]:
    """One PostgreSQL and one Redis, natively, below /var/tmp (their user must pass; pytest's tmp is 0700)."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="lb-clients-"))
    base.chmod(0o711)
    work, ledger = base / "work", Ledger(base / "ledger.db", "clients")
    (work / "mnt").mkdir(parents=True, mode=0o700)
    ctx = BuildContext(work, ledger, "clients", proc.run, password=PASSWORD)
    mount = Mount(Device("/dev/null", "none", 0), "dir", work / "mnt")
    try:
        with ExitStack() as started:
            found = {}
            for kind in ("postgres", "redis"):
                fields = {"device": {"kind": "loop"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
                stack = StackSpec.model_validate({**fields, "server": kind})
                found[kind] = started.enter_context(fleet(stack, mount, None, ctx)).endpoints[0]
            yield found
        assert ledger.live() == []  # both stopped and their directories gone
    finally:
        ledger.close()
        shutil.rmtree(base)


# YCSB's time limit counts from the client threads' start, their connection included: with 1 s, a run of
# the write-heavy mix beside a CPU-bound loop did no operation at all (2026-11-29).
RUN_S = 3


@pytest.fixture(scope="module")
def postgres(servers: dict[str, Endpoint]) -> Endpoint:
    return servers["postgres"]


@pytest.fixture(scope="module")
def redis(servers: dict[str, Endpoint]) -> Endpoint:
    return servers["redis"]


@pytest.fixture(scope="module")
def java() -> str:
    return shutil.which("java") or "java"


def _ycsb(java: str, kind: str, phase: ycsb.Phase, props: dict[str, str]) -> ycsb.YcsbResult:
    done = proc.run(ycsb.argv(java, str(CACHE), kind, phase, props), timeout=120).check()
    result = ycsb.parse(done.stdout)
    assert result.exceptions == (), done.stderr[-2000:]  # YCSB exits 0 even when a client thread failed
    return result


def test_ycsb_loads_runs_and_inserts_new_keys_in_postgres(java: str, postgres: Endpoint, tmp_path: Path) -> None:
    server = ServerSpec(kind="postgres", records=300, fieldcount=5, fieldlength=20)
    endpoint = {"host": "127.0.0.1", "port": str(postgres.port), "password": PASSWORD}
    # Four threads create the table at once (one DB object per thread): no error may come of it.
    load = YcsbWorkload(name="load", threads=4)
    insert = _ycsb(java, "postgres", "load", ycsb.properties(load, server, 300, endpoint, "load")).operations["INSERT"]
    assert (insert.count, insert.errors) == (300, 0)

    run = YcsbWorkload(name="a", mix="a", threads=2, runtime_s=RUN_S)
    result = _ycsb(java, "postgres", "run", ycsb.properties(run, server, 300, endpoint, "run", hdr_dir=str(tmp_path)))
    assert result.runtime_ms >= 1000 and result.throughput > 0
    read = result.operations["READ"]
    assert read.count > 0 and read.errors == 0 and result.operations["UPDATE"].errors == 0
    merged = ycsb.merge_hdr_logs([tmp_path])["READ"]  # the log holds what the client printed
    assert (merged.count, merged.percentiles) == (read.count, read.percentiles)

    # Inserts of a run start at the record count it is given: twice in a row, never a duplicate key.
    heavy = YcsbWorkload(name="wh", mix="write-heavy", threads=2, runtime_s=RUN_S)
    records = 300
    for _ in range(2):
        result = _ycsb(java, "postgres", "run", ycsb.properties(heavy, server, records, endpoint, "run"))
        assert result.operations["INSERT"].count > 0 and result.operations["INSERT"].errors == 0
        records = ycsb.records_after(result, records)
    assert {"ops", "lat_p99_us", "errors"} <= {s.metric for s in ycsb.samples(result, "wh")}


def test_ycsb_loads_and_scans_redis(java: str, redis: Endpoint) -> None:
    server = ServerSpec(kind="redis", records=300, fieldcount=5, fieldlength=20)
    endpoint = {"host": "127.0.0.1", "port": str(redis.port), "password": PASSWORD}
    load = YcsbWorkload(name="load", threads=2)
    insert = _ycsb(java, "redis", "load", ycsb.properties(load, server, 300, endpoint, "load")).operations["INSERT"]
    assert (insert.count, insert.errors) == (300, 0)
    e = YcsbWorkload(name="e", mix="e", threads=2)  # bounded by count: every_operation
    result = _ycsb(java, "redis", "run", every_operation(ycsb.properties(e, server, 300, endpoint, "run")))
    scan = result.operations["SCAN"]
    assert scan.count > 0 and scan.errors == 0 and result.operations["INSERT"].errors == 0


def test_pgbench_initialises_runs_and_logs_every_transaction(postgres: Endpoint, tmp_path: Path) -> None:
    binary = str(postgres_bindir() / "pgbench")
    env = {**os.environ, "PGPASSWORD": PASSWORD}
    init = pgbench.init_argv("127.0.0.1", postgres.port, 1, "postgres", pgbench=binary)
    refused = proc.run(init, timeout=60, env={k: v for k, v in env.items() if not k.startswith("PG")})
    assert refused.rc != 0 and "password" in refused.stderr  # no password: no way in
    proc.run(init, timeout=120, env=env).check()
    w = PgbenchWorkload(name="t", clients=2, runtime_s=1)
    prefix = str(tmp_path / "tx")
    argv = pgbench.argv(w, "127.0.0.1", postgres.port, "postgres", prefix, 1, pgbench=binary)
    done = proc.run(argv, timeout=60, env=env)
    result = pgbench.parse(done.check().stdout)
    assert (result.transaction_type, result.clients, result.failed) == ("TPC-B (sort of)", 2, 0)
    assert result.processed > 0 and result.tps > 0
    latencies = pgbench.latencies_from_logs(pgbench.log_files(prefix))
    assert latencies.size == result.processed and latencies.min() > 0
    got = {s.metric: s.value for s in pgbench.samples(result, latencies, "t")}
    assert got["lat_p50_us"] <= got["lat_p99_us"] <= got["lat_max_us"]


@pytest.mark.parametrize("kind", ["postgres", "redis"])
def test_a_server_listens_on_loopback_only_and_wants_the_run_s_password(
    servers: dict[str, Endpoint], kind: str
) -> None:
    e = servers[kind]
    assert sockets.listening(e.handle.pid) == [sockets.Listening("127.0.0.1", e.port)]
    assert not sockets.lets_in_without_password(kind, e.host, e.port)
    assert SERVERS[kind].ready(e.host, e.port, proc.run, PASSWORD)  # and with it, in
