"""A private PostgreSQL server for the tests of the shared results store (and of anything that reads it).

``PgService.start()`` makes a cluster with initdb in a fresh directory, as the uid the workload servers use
(PostgreSQL refuses root), and starts it on a free loopback port with SCRAM password authentication only
(no trust, not even on its Unix socket); ``stop()`` shuts it down (its PID, which this module started) and
removes the directory. ``database()`` makes a fresh empty database and gives its superuser URL, so that each
test has its own; ``role()`` makes a login role with a password (for the reader and writer tests).

As a pytest fixture: ``pg_service`` (one server per test session, tests/conftest.py) and ``pg_url`` (a fresh
database of it per test).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from layerbench.stack.ports import free_port
from layerbench.workloads.servers.base import SERVER_UID
from layerbench.workloads.servers.postgres import bindir

READY_DEADLINE_S = 60.0
STOP_DEADLINE_S = 30.0
SUPERUSER = "postgres"


@dataclass
class PgService:
    root: Path
    port: int
    password: str = field(repr=False)
    durable: bool = False
    process: subprocess.Popen[bytes] | None = None

    @classmethod
    def start(cls, durable: bool = False) -> PgService:
        """``durable``: fsync and synchronous commits as a real server has them (a bench); the tests' own
        server does without (their data need not survive a crash of this machine)."""
        root = Path(tempfile.mkdtemp(prefix="layerbench-pg-"))
        service = cls(root, free_port(), secrets.token_hex(12), durable)
        try:
            service._initdb()
            service._run()
        except BaseException:
            service.stop()
            raise
        return service

    def url(self, dbname: str = "postgres", user: str = SUPERUSER, password: str | None = None) -> str:
        secret = self.password if password is None else password
        return f"postgresql://{user}:{secret}@127.0.0.1:{self.port}/{dbname}"

    def database(self) -> str:
        """A fresh empty database; its superuser URL."""
        name = "t_" + secrets.token_hex(6)
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def sql(self, url: str, *statements: str) -> None:
        """Statements run in the database at ``url`` (as given: the tests' own, with no outside input)."""
        with psycopg.connect(url, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement.encode())

    def role(self, name: str, password: str, *grants: str) -> None:
        """A login role of this server, with each of ``grants`` (role names) granted to it."""
        self.sql(
            self.url(), f"CREATE ROLE {name} LOGIN PASSWORD '{password}'", *(f"GRANT {g} TO {name}" for g in grants)
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGINT)  # fast shutdown: clients disconnected, no checkpoint wait
            try:
                self.process.wait(STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(STOP_DEADLINE_S)
        shutil.rmtree(self.root, ignore_errors=True)

    def _initdb(self) -> None:
        os.chown(self.root, SERVER_UID, SERVER_UID)
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        os.chown(pwfile, SERVER_UID, SERVER_UID)
        pwfile.chmod(0o600)
        argv = [str(bindir() / "initdb"), "-D", str(self.root / "data"), "--no-sync", "--auth=scram-sha-256"]
        argv += [f"--pwfile={pwfile}", f"--username={SUPERUSER}", "--no-locale", "-E", "UTF8"]
        subprocess.run(argv, user=SERVER_UID, group=SERVER_UID, check=True, capture_output=True, timeout=120)

    def _run(self) -> None:
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.root),
            **({} if self.durable else {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}),
            "max_connections": "60",
            "shared_buffers": "128MB",
        }
        argv = [str(bindir() / "postgres"), "-D", str(self.root / "data")]
        argv += [a for k, v in settings.items() for a in ("-c", f"{k}={v}")]
        log = (self.root / "log").open("wb")
        self.process = subprocess.Popen(argv, user=SERVER_UID, group=SERVER_UID, stdout=log, stderr=log)
        deadline = time.monotonic() + READY_DEADLINE_S
        while True:
            try:
                psycopg.connect(self.url(), connect_timeout=5).close()
                return
            except psycopg.OperationalError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"PostgreSQL did not start: {(self.root / 'log').read_text()[-2000:]}") from None
                time.sleep(0.05)


def available() -> str | None:
    """Why no server can be started here (None: it can)."""
    try:
        bindir()
    except Exception as exc:  # PrerequisiteError: PostgreSQL not installed
        return str(exc)
    if os.geteuid() != 0:
        return "needs root, to run the server as its own uid"
    return None


@pytest.fixture(scope="session")
def pg_service() -> Iterator[PgService]:
    """One private PostgreSQL server for the session's tests (mark them requires_postgres)."""
    service = PgService.start()
    try:
        yield service
    finally:
        service.stop()


@pytest.fixture
def pg_url(pg_service: PgService) -> str:
    """A fresh empty database of the session's server: its superuser URL."""
    return pg_service.database()
