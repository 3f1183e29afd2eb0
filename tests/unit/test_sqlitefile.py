"""A results database or ledger is never visible without its tables."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from layerbench.core import sqlitefile
from layerbench.stack.ledger import Ledger
from layerbench.store.db import Store


def tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def test_file_appears_with_its_schema_already_inside(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    seen: list[set[str]] = []

    def init(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE t (a)")
        seen.append({p.name for p in tmp_path.iterdir()})  # mid-creation: the real name is not there yet

    sqlitefile.ensure(path, init)
    assert "x.db" not in seen[0]
    assert tables(path) == {"t"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.db"]  # no temporary left behind


def test_an_existing_file_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    sqlitefile.ensure(path, lambda c: c.execute("CREATE TABLE first (a)"))
    sqlitefile.ensure(path, lambda c: c.execute("CREATE TABLE second (a)"))
    assert tables(path) == {"first"}


def test_racing_creators_leave_one_whole_store(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            Store.open(path).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "an opener still waits after 60 s (a lock never released?)"
    assert not errors
    assert {"runs", "trials", "samples"} <= tables(path)


def test_ledger_file_has_its_table(tmp_path: Path) -> None:
    Ledger(tmp_path / "state" / "ledger.db", "r").close()
    assert "resources" in tables(tmp_path / "state" / "ledger.db")
