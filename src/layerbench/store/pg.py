"""The results store in a shared PostgreSQL database (``--db postgresql://...``), through psycopg 3.

The store's queries are SQLite's spelling (store/db.py); this backend runs them here: ``?`` becomes psycopg's
``%s``, a new trial's id comes back by ``RETURNING``, rows are appended with ``COPY``, a read sees one
snapshot (REPEATABLE READ), and the connection is in autocommit so that nothing is held open between the
store's own transactions. psycopg's errors become StoreErrors that say what to do: a wrong password, a role
that may only read, a server that is not there.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.copy import QueuedLibpqWriter
from psycopg_pool import ConnectionPool

from layerbench.errors import StoreError
from layerbench.store import pg_schema
from layerbench.store.db import Rows, Store

CONNECT_TIMEOUT_S = 10
ROLES_DOC = "docs/how-to/team-results.md"


def location(url: str) -> str:
    """The URL as messages show it: user, host, port and database, never the password."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise StoreError(f"--db {url.split('@')[-1]!r} is not a PostgreSQL URL: {exc}") from None
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host') or 'localhost'}{port}/{parts.get('dbname') or ''}"


def cache_dir(where: str) -> Path:
    """This user's cache of the database's runs (store/cache.py): runs are only ever added to, never changed."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "layerbench" / "postgresql" / hashlib.sha256(where.encode()).hexdigest()[:16]


@contextmanager
def translated_errors(where: str) -> Iterator[None]:
    """psycopg's errors as StoreErrors naming the database and what to do."""
    try:
        yield
    except pg_errors.InsufficientPrivilege as exc:
        raise StoreError(
            f"{where}: this role may not do that: {_first_line(exc)}",
            hint=f"write with a role granted layerbench_writer (see {ROLES_DOC}); browsing needs only the reader",
        ) from None
    except psycopg.OperationalError as exc:
        raise StoreError(f"{where}: {_first_line(exc)}", hint="is the server up, and the URL right?") from None
    except psycopg.Error as exc:
        raise StoreError(f"{where}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    """The server's own words (after libpq's "FATAL:"), on one line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text.rsplit("FATAL:", 1)[-1].strip()


def connect(url: str) -> psycopg.Connection[Any]:
    where = location(url)
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, application_name="layerbench")
    except psycopg.OperationalError as exc:
        text = _first_line(exc)
        if "password authentication failed" in text or "no password supplied" in text:
            hint = "check the user and password (in the URL, PGPASSWORD or ~/.pgpass)"
        else:
            hint = "is the server up and reachable, and the URL right (postgresql://user:password@host:port/db)?"
        raise StoreError(f"cannot connect to {where}: {text}", hint=hint) from None


def open_store(url: str, create: bool = True) -> Store:
    """The store in the database at ``url``; its schema created (``create``) or upgraded first."""
    conn = connect(url)
    where = location(url)
    try:
        _fast_compression(conn)
        with translated_errors(where):
            if not create and pg_schema.version(conn, where) == 0:
                raise StoreError(f"no layerbench results in {where}", hint="publish a run there first, or pass --db")
            pg_schema.migrate(conn, where)
    except BaseException:
        conn.close()
        raise
    return store_on(conn, url)


def store_on(conn: psycopg.Connection[Any], url: str) -> Store:
    """The store over a connection already open on ``url`` (a pool's: serve/source.py), its schema checked."""
    where = location(url)
    return Store(conn, None, PgBackend(conn, where), where, cache_dir(where))


def pool(url: str, size: int = 4) -> ConnectionPool:
    """Connections kept open for a server's requests: a connection is 5-20 ms of a page otherwise (TLS and
    authentication included). Opened here, so that a wrong URL fails at start, with its reason."""
    made = ConnectionPool(
        url,
        min_size=1,
        max_size=size,
        kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S, "application_name": "layerbench serve"},
        open=False,
    )
    with translated_errors(location(url)):
        made.open(wait=True, timeout=CONNECT_TIMEOUT_S)
    return made


def _fast_compression(conn: psycopg.Connection[Any]) -> None:
    """Raw outputs compressed with LZ4 where the server has it: pglz, the default, took most of a big publish's
    time (84,000 fio outputs, 1.8 GB). A server built without it keeps pglz."""
    with suppress(pg_errors.InvalidParameterValue, pg_errors.UndefinedObject):  # no LZ4 here, or before 14
        conn.execute("SET default_toast_compression = 'lz4'")


def q(sql: str) -> str:
    """A query in SQLite's spelling with psycopg's placeholders (none of the store's queries quotes a '?')."""
    return sql.replace("%", "%%").replace("?", "%s")


class PgBackend:
    def __init__(self, conn: psycopg.Connection[Any], where: str) -> None:
        self.conn = conn
        self.where = where
        self._columns: dict[str, tuple[list[str], list[str]]] = {}

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        # Results in binary: a float is 8 bytes, not a text parsed (a million samples read in 7.5 s, not 9.2).
        with translated_errors(self.where):
            return self.conn.execute(q(sql), params, binary=True)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with translated_errors(self.where), self.conn.cursor() as cur:
            cur.executemany(q(sql), rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with translated_errors(self.where), self.conn.transaction():
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            yield  # inside the caller's transaction already: it is the snapshot
            return
        with self.transaction():
            self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        return int(self.execute(sql + " RETURNING id", params).fetchone()[0])

    def bulk(self, table: str, rows: Iterable[Sequence[Any]]) -> int:
        """COPY in PostgreSQL's binary format: a float is eight bytes sent, not a text printed and parsed (a
        million monitor points: 1.4 s, 2.5 s as text). Sent by a thread of psycopg's own while this one reads
        and formats the next rows: a big run's trials took 9.0 s sent in turn, 6.7 s so."""
        names, types = self.columns(table)
        count, sql = 0, f"COPY {table} ({', '.join(names)}) FROM STDIN (FORMAT BINARY)"
        with (
            translated_errors(self.where),
            self.conn.cursor() as cur,
            cur.copy(sql, writer=QueuedLibpqWriter(cur)) as copy,
        ):
            copy.set_types(types)
            for count, row in enumerate(rows, 1):  # noqa: B007 (the count is the last row's number)
                copy.write_row(row)
        return count

    def columns(self, table: str) -> tuple[list[str], list[str]]:
        """The table's columns as the store writes them (all but the ``rowid`` it numbers its rows by), and
        their types."""
        if table not in self._columns:
            found = self.execute(
                "SELECT column_name, udt_name FROM information_schema.columns WHERE table_schema = current_schema()"
                " AND table_name = ? AND column_name <> 'rowid' ORDER BY ordinal_position",
                (table,),
            ).fetchall()
            self._columns[table] = ([n for n, _ in found], [t for _, t in found])
        return self._columns[table]

    def kinds_table(self, table: str, names: tuple[str, ...]) -> str:
        fields = ", ".join(names)
        self.execute(f"DROP TABLE IF EXISTS pg_temp.{table}_kinds")
        self.execute(
            f"CREATE TEMP TABLE {table}_kinds (rowid BIGINT GENERATED BY DEFAULT AS IDENTITY,"
            f" {', '.join(f'{n} TEXT' for n in names)}, PRIMARY KEY ({fields})) ON COMMIT DROP"
        )
        return f"pg_temp.{table}_kinds"

    def close(self) -> None:
        self.conn.close()
