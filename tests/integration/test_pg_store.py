"""The shared PostgreSQL store, against a private PostgreSQL server (tests/pg_service.py): a run published
from a real run's SQLite file reads back the same, publishing is whole or nothing, stored once, safe to
repeat and to run ten at once; a newer schema, a wrong password and a role that may only read are refused
with one clear line (exit 6), never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import psycopg
import pytest

from layerbench.errors import StoreError
from layerbench.records.checks import Check
from layerbench.records.info import TrialInfo
from layerbench.records.sample import Sample
from layerbench.records.trial import MonitorPoint, ProfileRecord, TrialRecord
from layerbench.store.db import CellRow, Store
from layerbench.store.open import open_store
from layerbench.store.schema import VERSION
from tests.pg_service import PgService

pytestmark = [pytest.mark.requires_postgres]

ROOT = Path(__file__).resolve().parents[2]
# A real run's database (tests/data/plan/README.md says how it was made): 4 trials, 182 samples, 608 monitor
# points, checks and fio's logs.
REAL_RUN = ROOT / "tests" / "data" / "plan" / "check.db"
RUN_ID = "20261127-130059-c2b9"
DEADLINE_S = 60.0


def layerbench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "layerbench.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader of a PostgreSQL store keeps its cache under XDG_CACHE_HOME: this test's own, not the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def local(tmp_path: Path) -> Path:
    """A private copy of the real run's database (readers may write its cache beside it)."""
    copy = tmp_path / "local.db"
    shutil.copyfile(REAL_RUN, copy)
    return copy


def count(url: str, sql: str) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute(sql).fetchone()[0])


def published(url: str, local: Path, run: str = RUN_ID) -> dict[str, Any]:
    done = layerbench("publish", run, "--db", str(local), "--to", url, "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_a_published_run_shows_the_same_as_its_local_file(pg_url: str, local: Path, tmp_path: Path) -> None:
    published(pg_url, copy_as(local, tmp_path / "other.db", "20261127-130059-ffff"), "20261127-130059-ffff")
    answer = published(pg_url, local)  # its trials renumbered: 5 to 8 there
    assert answer["stored"] is True and answer["trials"] == 4 and answer["samples"] == 182
    there = layerbench("show", RUN_ID, "--json", "--latency", "--db", pg_url)
    here = layerbench("show", RUN_ID, "--json", "--latency", "--db", str(local))
    assert there.returncode == 0 and here.returncode == 0, there.stderr + here.stderr
    assert json.loads(there.stdout) == json.loads(here.stdout)
    # Provenance came along: the host, its kernel, layerbench's and every tool's version, the spec and its hash.
    with psycopg.connect(pg_url) as conn:
        sql = "SELECT host_json, spec_json, spec_digest FROM runs WHERE id = %s"
        host, spec, digest = conn.execute(sql, (RUN_ID,)).fetchone()
    local_row = sqlite3.connect(local).execute("SELECT host_json, spec_json, spec_digest FROM runs").fetchone()
    assert (host, spec, digest) == local_row
    assert {"kernel", "layerbench", "tools"} <= set(json.loads(host)) and json.loads(host)["tools"]["fio"]


def test_the_store_url_is_the_default_of_every_db_option(pg_url: str, local: Path) -> None:
    published(pg_url, local)
    shown = layerbench("show", "latest", "--json", env={"LAYERBENCH_DB": pg_url})
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["run"]["id"] == RUN_ID


def test_publishing_twice_stores_once(pg_url: str, local: Path) -> None:
    published(pg_url, local)
    again = published(pg_url, local)
    assert again["stored"] is False
    assert count(pg_url, "SELECT count(*) FROM runs") == 1
    assert count(pg_url, "SELECT count(*) FROM trials") == 4
    assert count(pg_url, "SELECT count(*) FROM samples") == 182
    said = layerbench("publish", RUN_ID, "--db", str(local), "--to", pg_url)
    assert said.returncode == 0 and "already" in said.stdout


def test_trials_get_the_targets_own_ids(pg_url: str, local: Path, tmp_path: Path) -> None:
    """Two hosts' runs both number their trials from 1: published together, every sample keeps its own trial."""
    other = copy_as(local, tmp_path / "other.db", "20261127-130059-ffff")
    published(pg_url, local)
    published(pg_url, other, "20261127-130059-ffff")
    assert count(pg_url, "SELECT count(DISTINCT id) FROM trials") == 8
    assert count(pg_url, "SELECT count(*) FROM samples s JOIN trials t ON t.id = s.trial_id") == 364
    per_run = (
        "SELECT count(*) FROM samples s JOIN trials t ON t.id = s.trial_id WHERE t.run_id = '20261127-130059-ffff'"
    )
    assert count(pg_url, per_run) == 182


def copy_as(source: Path, target: Path, run_id: str) -> Path:
    """The run of ``source`` under another id, in a file of its own: another host's run."""
    shutil.copyfile(source, target)
    with sqlite3.connect(target) as conn:
        for table in ("runs", "cells", "refused", "trials"):
            column = "id" if table == "runs" else "run_id"
            conn.execute(f"UPDATE {table} SET {column} = ?", (run_id,))
    return target


def test_ten_publishers_at_once_lose_nothing(pg_url: str, local: Path, tmp_path: Path) -> None:
    """Ten hosts' runs published at once into a new database: all ten also create its schema at once (one
    migrates under the advisory lock, the others find it done: to_regclass, answering from each session's
    catalog cache, once made one of them create the tables again)."""
    ids = [f"20261127-130059-{i:04x}" for i in range(10)]
    files = [copy_as(local, tmp_path / f"host{i}.db", run_id) for i, run_id in enumerate(ids)]
    code = (
        "import sys; from layerbench.store.open import open_store; from layerbench.store.publish import publish;"
        " print(publish(open_store(sys.argv[1], create=False), 'latest', open_store(sys.argv[2])).stored)"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(f), pg_url], stdout=subprocess.PIPE, text=True) for f in files
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * 10
    assert all(o.strip() == "True" for o in outs)
    assert count(pg_url, "SELECT count(*) FROM runs") == 10
    assert count(pg_url, "SELECT count(DISTINCT id) FROM trials") == 40
    assert count(pg_url, "SELECT count(*) FROM samples") == 1820
    assert count(pg_url, "SELECT count(*) FROM monitor") == 6080


def test_a_publish_killed_midway_leaves_nothing_and_is_repeated(pg_url: str, local: Path) -> None:
    """The publisher is held at its monitor points' COPY (its run, cells, trials and samples already sent, in
    its transaction) by a lock this test holds, killed there by its PID, then run again."""
    code = (
        "import sys; from layerbench.store.open import open_store; from layerbench.store.publish import publish;"
        " publish(open_store(sys.argv[1], create=False), 'latest', open_store(sys.argv[2]))"
    )
    open_store(pg_url).close()  # the schema first, so that the lock below has its table
    with psycopg.connect(pg_url) as holder:
        holder.execute("LOCK TABLE monitor IN ACCESS EXCLUSIVE MODE")
        publisher = subprocess.Popen([sys.executable, "-c", code, str(local), pg_url])
        try:
            wait_for(pg_url, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                     " AND query LIKE 'COPY monitor%'")  # fmt: skip
            os.kill(publisher.pid, signal.SIGKILL)
            publisher.wait(DEADLINE_S)
        finally:
            if publisher.poll() is None:
                publisher.kill()
                publisher.wait()
        holder.rollback()  # the lock released: the killed publisher's backend finds its client gone
    wait_for(pg_url, "SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'layerbench'")
    assert count(pg_url, "SELECT count(*) FROM runs") == 0
    assert count(pg_url, "SELECT count(*) FROM samples") == 0
    assert published(pg_url, local)["stored"] is True
    assert count(pg_url, "SELECT count(*) FROM samples") == 182
    assert count(pg_url, "SELECT count(*) FROM monitor") == 608


def wait_for(url: str, sql: str) -> None:
    """Until ``sql`` answers a true count, or fail at the deadline."""
    deadline = time.monotonic() + DEADLINE_S
    with psycopg.connect(url, autocommit=True) as conn:
        while not conn.execute(sql).fetchone()[0]:
            assert time.monotonic() < deadline, f"still not so after {DEADLINE_S} s: {sql}"
            time.sleep(0.02)


def test_a_newer_schema_is_refused(pg_url: str, local: Path) -> None:
    published(pg_url, local)
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE layerbench_schema SET version = %s", (VERSION + 1,))
    with pytest.raises(StoreError, match="newer than this layerbench knows"):
        open_store(pg_url)
    shown = layerbench("show", "--db", pg_url)
    assert shown.returncode == 6 and "newer than this layerbench knows" in shown.stderr
    assert "Traceback" not in shown.stderr


def test_a_wrong_password_is_refused(pg_service: PgService, pg_url: str) -> None:
    wrong = pg_url.replace(pg_service.password, "not-the-password")
    shown = layerbench("show", "--db", wrong)
    assert shown.returncode == 6, shown.stderr
    assert "password authentication failed" in shown.stderr and "Traceback" not in shown.stderr
    assert "not-the-password" not in shown.stderr  # the URL is named without its password


def test_a_reader_browses_and_cannot_publish_a_writer_can(pg_service: PgService, pg_url: str, local: Path) -> None:
    setup = layerbench("publish", "--setup-roles", "--to", pg_url)
    assert setup.returncode == 0, setup.stderr
    dbname = pg_url.rsplit("/", 1)[1]
    pg_service.role(f"{dbname}_ro", "read-pw", "layerbench_reader")
    pg_service.role(f"{dbname}_rw", "write-pw", "layerbench_writer")
    reader = pg_service.url(dbname, f"{dbname}_ro", "read-pw")
    writer = pg_service.url(dbname, f"{dbname}_rw", "write-pw")
    refused = layerbench("publish", RUN_ID, "--db", str(local), "--to", reader)
    assert refused.returncode == 6, refused.stderr
    assert "may not" in refused.stderr and "layerbench_writer" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert count(pg_url, "SELECT count(*) FROM runs") == 0
    assert published(writer, local)["stored"] is True
    shown = layerbench("show", RUN_ID, "--json", "--db", reader)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["run"]["id"] == RUN_ID
    again = layerbench("publish", "--setup-roles", "--to", pg_url)  # run twice: roles kept, grants repeated
    assert again.returncode == 0, again.stderr


def write_run(store: Store) -> str:
    """The same run written to any store: cells, a refusal, trials with samples, monitor points, checks, a
    log and a profile, and a failed trial."""
    run_id = store.new_run("t", '{"trials": {}}', "digest", {"hostname": "h", "kernel": "6.18"})
    store.add_cells(
        run_id, [CellRow("b", "B · RR", "B", "RR", "{}", False, "a"), CellRow("a", "A", "A", "RR", "{}", True, "a")]
    )
    store.add_refused(run_id, "C · RR", "{}", "no such engine here")
    for rep in range(3):
        for cell in ("b", "a"):
            samples = [Sample(m, 1000.0 + rep + 1 / 3, u, d, j) for m, u, d, j in KINDS]
            monitor = [MonitorPoint(1.7e9 + t / 10, s, t * 0.1, "%") for t in range(5) for s in ("cpu", "io")]
            profile = ProfileRecord("cpu", {"fio;read": 3}, {"cycles": 5.0}, "") if rep == 0 else None
            record = TrialRecord(cell, rep, "ok", None, 1.7e9 + rep, 1.7e9 + rep + 1.5, ["fio"], "{}", "",
                                 TrialInfo(extra={"k": rep}), samples, [Check("noisy", "pass", "")], monitor,
                                 profile, {"lat": f"log {rep}"})  # fmt: skip
            store.record_trial(run_id, record)
    failed = TrialRecord("a", 3, "failed", "tool-error", 1.7e9, 1.7e9, ["fio"], "", "io_u error", TrialInfo(), [])
    store.record_trial(run_id, failed)
    store.finish_run(run_id, "finished")
    return run_id


KINDS = [("iops", "IO/s", "read", "RR"), ("lat_p99", "ns", "read", "RR"), ("iops", "IO/s", "write", "job 2")]


def test_a_run_written_to_postgresql_reads_back_as_from_sqlite(pg_url: str, tmp_path: Path) -> None:
    """Every reader of the store answers the same of the same run on both backends, frames with the same dtypes
    (categorical texts, int64 ids, float64 values)."""
    stores = [Store.open(tmp_path / "r.db"), open_store(pg_url)]
    sqlite, pg = ((s, write_run(s)) for s in stores)
    (a, run_a), (b, run_b) = sqlite, pg
    frames = [(a.samples_frame(run_a), b.samples_frame(run_b)), (a.monitor_frame(run_a), b.monitor_frame(run_b))]
    for here, there in frames:
        here, there = (f.drop(columns="run_id", errors="ignore") for f in (here, there))  # the runs' own ids
        assert len(here) and list(here.dtypes) == list(there.dtypes)
        pd.testing.assert_frame_equal(here, there)
    assert b.samples_frame(run_b)["run_id"].unique().tolist() == [run_b]
    for read in ("cells", "refused", "checks", "done_trials", "trial_infos", "profiles", "check_rows"):
        assert getattr(a, read)(run_a) == getattr(b, read)(run_b), read
    assert a.trials(run_a) == b.trials(run_b)  # both databases new: their trial ids alike
    assert a.logs(run_a, "lat") == b.logs(run_b, "lat") and a.raw_outputs(run_a) == b.raw_outputs(run_b)
    assert a.run_state(run_a)[2:] == b.run_state(run_b)[2:]  # type: ignore[index]
    assert a.sample_count(run_a) == b.sample_count(run_b) == 18
    (row_a,), (row_b,) = a.runs(), b.runs()
    assert (row_a.name, row_a.status, row_a.spec, row_a.host) == (row_b.name, row_b.status, row_b.spec, row_b.host)
    assert b.resolve_run("latest") == run_b
    with pytest.raises(StoreError, match="matches no run"):
        b.resolve_run("nope")
