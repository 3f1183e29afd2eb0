"""The YCSB and pgbench adapters against a private PostgreSQL and a private Redis started here.

Each server gets a temporary directory and a free port on 127.0.0.1, runs as
an unprivileged user when the tests run as root (PostgreSQL refuses root), and
is stopped by its PID when the module's tests are done. Skips, with the
reason, where java, the YCSB jars (java/build-ycsb.sh), PostgreSQL or
redis-server is missing.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from layerbench import proc
from layerbench.spec.databases import PgbenchWorkload, ServerSpec, YcsbWorkload
from layerbench.workloads import pgbench, ycsb

pytestmark = pytest.mark.requires_db

CACHE = Path("/var/cache/layerbench")  # layerbench's default cache, where `make` builds the YCSB jars


@dataclass(frozen=True)
class Server:
    port: int
    bin_dir: Path | None = None  # PostgreSQL's programs (initdb, pgbench, ...)


def _postgres_bin() -> Path | None:
    """The newest /usr/lib/postgresql/<version>/bin (Debian's layout), else wherever initdb is on PATH."""
    versions = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb") if p.parent.parent.name.isdigit()]
    if versions:
        return max(versions, key=lambda b: int(b.parent.name))
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_user() -> tuple[int, int] | None:
    """(uid, gid) to run a server as: ourselves unless root, then the "postgres" user."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("running as root and there is no 'postgres' user to run PostgreSQL as")
    return entry.pw_uid, entry.pw_gid


def _wait_until(ready: Callable[[], bool], server: subprocess.Popen[bytes], log: Path, what: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"{what} exited {server.returncode}: {log.read_text()[-2000:]}")
        if ready():
            return
        time.sleep(0.2)
    pytest.fail(f"{what} not ready after 30 s: {log.read_text()[-2000:]}")


def _stop(server: subprocess.Popen[bytes], stop_signal: int) -> None:
    """By its PID: the server's own clean-shutdown signal, then SIGKILL if it does not go."""
    if server.poll() is None:
        server.send_signal(stop_signal)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture(scope="module")
def postgres() -> Iterator[Server]:
    bin_dir = _postgres_bin()
    if bin_dir is None:
        pytest.skip("needs PostgreSQL's initdb and postgres (apt-get install postgresql)")
    ids = _server_user()
    home = Path(tempfile.mkdtemp(prefix="layerbench-pg-"))
    try:
        if ids is not None:
            os.chown(home, *ids)
        uid = None if ids is None else ids[0]
        initdb = [bin_dir / "initdb", "-D", home / "data", "-U", "postgres", "--auth=trust", "--no-sync"]
        init = proc.spawn(initdb, home / "initdb.log", user=uid)  # a short process, but it must run as uid too
        if init.wait(timeout=120) != 0:
            pytest.fail(f"initdb failed: {(home / 'initdb.log').read_text()[-2000:]}")
        port = _free_port()
        settings = ["listen_addresses=127.0.0.1", "shared_buffers=32MB", "fsync=off"]
        args = [bin_dir / "postgres", "-D", home / "data", "-p", port, "-k", home]
        server = proc.spawn([*args, *(a for s in settings for a in ("-c", s))], home / "server.log", user=uid)
        try:
            ready = [bin_dir / "pg_isready", "-q", "-h", "127.0.0.1", "-p", str(port)]
            _wait_until(lambda: proc.run(ready, timeout=10).rc == 0, server, home / "server.log", "postgres")
            yield Server(port, bin_dir)
        finally:
            _stop(server, signal.SIGINT)  # PostgreSQL's fast shutdown
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture(scope="module")
def redis() -> Iterator[Server]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("needs redis-server (apt-get install redis-server)")
    home = Path(tempfile.mkdtemp(prefix="layerbench-redis-"))
    try:
        port = _free_port()
        args = [binary, "--port", port, "--bind", "127.0.0.1", "--dir", home, "--save", "", "--appendonly", "no"]
        server = proc.spawn([*args, "--daemonize", "no"], home / "server.log")
        try:
            _wait_until(lambda: _answers_ping(port), server, home / "server.log", "redis-server")
            yield Server(port)
        finally:
            _stop(server, signal.SIGTERM)  # Redis's clean shutdown
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def java() -> str:
    found = shutil.which("java")
    if found is None:
        pytest.skip("needs java (apt-get install openjdk-17-jre-headless)")
    if not (CACHE / "ycsb" / "lib" / "layerbench-ycsb.jar").exists():
        pytest.skip(f"needs the YCSB jars: java/build-ycsb.sh {CACHE}")
    return found


def _ycsb(java: str, kind: str, phase: ycsb.Phase, props: dict[str, str]) -> ycsb.YcsbResult:
    done = proc.run(ycsb.argv(java, str(CACHE), kind, phase, props), timeout=120).check()
    result = ycsb.parse(done.stdout)
    assert result.exceptions == (), done.stderr[-2000:]  # YCSB exits 0 even when a client thread failed
    return result


def test_ycsb_loads_runs_and_inserts_new_keys_in_postgres(java: str, postgres: Server, tmp_path: Path) -> None:
    server = ServerSpec(kind="postgres", records=300, fieldcount=5, fieldlength=20)
    endpoint = {"host": "127.0.0.1", "port": str(postgres.port)}
    # Four threads create the table at once (one DB object per thread): no error may come of it.
    load = YcsbWorkload(name="load", threads=4)
    insert = _ycsb(java, "postgres", "load", ycsb.properties(load, server, 300, endpoint, "load")).operations["INSERT"]
    assert (insert.count, insert.errors) == (300, 0)

    run = YcsbWorkload(name="a", mix="a", threads=2, runtime_s=1)
    result = _ycsb(java, "postgres", "run", ycsb.properties(run, server, 300, endpoint, "run", hdr_dir=str(tmp_path)))
    assert result.runtime_ms >= 1000 and result.throughput > 0
    read = result.operations["READ"]
    assert read.count > 0 and read.errors == 0 and result.operations["UPDATE"].errors == 0
    merged = ycsb.merge_hdr_logs([tmp_path])["READ"]  # the log holds what the client printed
    assert (merged.count, merged.percentiles) == (read.count, read.percentiles)

    # Inserts of a run start at the record count it is given: twice in a row, never a duplicate key.
    heavy = YcsbWorkload(name="wh", mix="write-heavy", threads=2, runtime_s=1)
    records = 300
    for _ in range(2):
        result = _ycsb(java, "postgres", "run", ycsb.properties(heavy, server, records, endpoint, "run"))
        assert result.operations["INSERT"].count > 0 and result.operations["INSERT"].errors == 0
        records = ycsb.records_after(result, records)
    assert {"ops", "lat_p99_us", "errors"} <= {s.metric for s in ycsb.samples(result, "wh")}


def test_ycsb_loads_and_scans_redis(java: str, redis: Server) -> None:
    server = ServerSpec(kind="redis", records=300, fieldcount=5, fieldlength=20)
    endpoint = {"host": "127.0.0.1", "port": str(redis.port)}
    load = YcsbWorkload(name="load", threads=2)
    insert = _ycsb(java, "redis", "load", ycsb.properties(load, server, 300, endpoint, "load")).operations["INSERT"]
    assert (insert.count, insert.errors) == (300, 0)
    e = YcsbWorkload(name="e", mix="e", threads=2, runtime_s=1)
    result = _ycsb(java, "redis", "run", ycsb.properties(e, server, 300, endpoint, "run"))
    scan = result.operations["SCAN"]
    assert scan.count > 0 and scan.errors == 0 and result.operations["INSERT"].errors == 0


def test_pgbench_initialises_runs_and_logs_every_transaction(postgres: Server, tmp_path: Path) -> None:
    assert postgres.bin_dir is not None
    binary = str(postgres.bin_dir / "pgbench")
    proc.run(pgbench.init_argv("127.0.0.1", postgres.port, 1, "postgres", pgbench=binary), timeout=120).check()
    w = PgbenchWorkload(name="t", clients=2, runtime_s=1)
    prefix = str(tmp_path / "tx")
    done = proc.run(pgbench.argv(w, "127.0.0.1", postgres.port, "postgres", prefix, 1, pgbench=binary), timeout=60)
    result = pgbench.parse(done.check().stdout)
    assert (result.transaction_type, result.clients, result.failed) == ("TPC-B (sort of)", 2, 0)
    assert result.processed > 0 and result.tps > 0
    latencies = pgbench.latencies_from_logs(pgbench.log_files(prefix))
    assert latencies.size == result.processed and latencies.min() > 0
    got = {s.metric: s.value for s in pgbench.samples(result, latencies, "t")}
    assert got["lat_p50_us"] <= got["lat_p99_us"] <= got["lat_max_us"]
