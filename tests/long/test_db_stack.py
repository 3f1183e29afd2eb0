"""Databases through the whole pipeline, as a user runs them: real PostgreSQL and Redis, natively
and in private Docker daemons, real YCSB and pgbench clients; then nothing of it may be left."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from layerbench import proc
from layerbench.run.loop import execute, register_cells
from layerbench.run.session import budget_for, running
from layerbench.spec import load
from layerbench.spec.matrix import expand
from layerbench.stack.capabilities import DEFAULT_CACHE, probe
from layerbench.stack.environment import describe_host
from layerbench.store.db import Store
from layerbench.workloads.servers import SERVERS, postgres
from tests import support
from tests.integration.leftovers import assert_nothing_left, bridges, server_dirs

pytestmark = [
    pytest.mark.requires_root,
    pytest.mark.requires_docker,
    pytest.mark.requires_db,
    pytest.mark.slow,
]

PG = {"kind": "postgres", "records": 2000}
REDIS = {"kind": "redis", "records": 2000}
SPEC = {
    "name": "db-it",
    "device": {"kind": "zram", "size": "1GiB"},
    "resources": {"memory": "1GiB"},
    "stacks": [
        {"filesystem": "ext4", "engine": "native", "placement": "host-dir", "server": [PG, REDIS]},
        {"filesystem": "ext4", "engine": "docker:overlay2", "placement": ["volume", "writable-layer"],
         "server": [PG, REDIS]},
        {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "bind", "server": PG, "instances": 2,
         "profile": "MEM", "tuning": "host-network"},
        {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume", "server": REDIS,
         "tuning": ["cpuset", "seccomp-unconfined"]},
        {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume", "server": REDIS, "profile": "BW"},
    ],
    "workloads": [
        {"kind": "ycsb", "name": "A", "mix": "a", "threads": 2, "runtime_s": 2, "warmup_s": 1},
        {"kind": "pgbench", "name": "S", "mode": "select-only", "clients": 2, "runtime_s": 2, "warmup_s": 1},
    ],
    "baseline": {"filesystem": "ext4", "engine": "native", "placement": "host-dir", "same": ["server"]},
}  # fmt: skip


@pytest.fixture
def dirs() -> Iterator[dict[str, Path]]:
    with server_dirs("lb-db-test-") as made:
        yield made


def test_databases_natively_and_in_containers_then_nothing_left(dirs: dict[str, Path]) -> None:
    before = bridges()
    dirs["spec"].write_text(yaml.safe_dump(SPEC))
    done = support.run(["run", str(dirs["spec"])], dirs)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = json.loads(support.run(["show", "latest", "--json"], dirs).stdout)
    cells = {c["stack_label"] + " · " + c["workload"]: c for c in shown["cells"]}
    assert len(cells) == 4 * 2 + 6  # postgres: 4 stacks x (YCSB, pgbench); redis: 6 stacks x YCSB
    assert all(c["summary"]["n"] == 1 and c["summary"]["mean"] > 0 for c in cells.values())
    # Each cell against its baseline (`same: [server]`): native on ext4, the same server, the same workload;
    # one trial each, so the ratio (the geometric mean of the rounds' ratios) is the two means'.
    for label, cell in cells.items():
        stack, workload = label.split(" · ")
        server = "postgres" if "/postgres(" in stack else "redis"
        base = cells[f"zram/ext4/native/host-dir/{server}(2000rec) · {workload}"]
        assert cell["is_baseline"] == (cell is base), label
        if cell is base:
            continue  # a baseline is not compared with itself
        expected = cell["summary"]["mean"] / base["summary"]["mean"]
        assert cell["ratio"]["ratio"] == pytest.approx(expected, rel=1e-9), label
    with sqlite3.connect(dirs["db"]) as db:
        trials = db.execute("SELECT started_at, info_json FROM trials").fetchall()
    # Every stack was built and loaded before the first trial (pipeline.preload: each load beside the next
    # stacks' builds), so no load ran beside a measurement.
    loads = [json.loads(info)["precondition"] for _, info in trials]
    assert len({(p["started_at"], p["ended_at"]) for p in loads}) == 10  # one load per stack, kept for its trials
    assert max(p["ended_at"] for p in loads) < min(started for started, _ in trials)
    with sqlite3.connect(dirs["db"]) as db:
        jobs = db.execute(
            "SELECT c.label, s.job FROM samples s JOIN trials t ON t.id = s.trial_id JOIN cells c"
            " ON c.cell_id = t.cell_id WHERE s.metric = 'ops'"
        ).fetchall()
        merged = db.execute("SELECT count(*) FROM samples WHERE job = 'all' AND metric = 'lat_p99_us'").fetchone()[0]
        limits = db.execute("SELECT detail FROM checks WHERE name = 'limit-applied'").fetchall()
    two = {job for label, job in jobs if "x2[MEM]<host-network>" in label}
    assert two == {"i0", "i1"}  # one client per instance, each measured
    assert merged >= 14  # every trial's clients merged into one latency distribution
    # 512 MiB each for the two MEM instances (2 workloads), the cpuset pin, and BW's share of the device's
    # measured bandwidth (the budget divides by the most instances, 2): all read back from the cgroup
    assert len(limits) == 2 * 2 + 2 and all(": read back from the cgroup: " in d for (d,) in limits)
    with sqlite3.connect(dirs["db"]) as db:
        (info,) = db.execute(
            "SELECT t.info_json FROM trials t JOIN cells c ON c.cell_id = t.cell_id WHERE c.label LIKE '%[BW]%'"
        ).fetchone()
    budget = json.loads(info)["server"]["budget"]
    bw = json.loads(info)["endpoints"][0]["limits"]
    assert budget["read_bps"] > 0 and bw["read_bps"] == budget["read_bps"] // 2
    assert_nothing_left(dirs, before)


def test_a_server_that_does_not_start_fails_its_trials_with_its_log(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = dataclasses.replace(SERVERS["postgres"], argv=lambda c: [*postgres.argv(c), "-c", "no_such_setting=1"])
    monkeypatch.setitem(SERVERS, "postgres", broken)
    spec = {**SPEC, "stacks": [SPEC["stacks"][0]], "workloads": SPEC["workloads"][:1]}
    exp = load.validate(spec)
    matrix = expand(exp, probe(proc.run))
    store = Store.open(dirs["db"])
    host = describe_host(proc.run)
    run_id = store.new_run(exp.name, exp.model_dump_json(), exp.digest(), host)
    register_cells(store, run_id, matrix)
    with running(store, run_id, dirs["work"], dirs["state"], budget_for(exp, matrix, host), DEFAULT_CACHE) as (
        ctx,
        _,
    ):
        tally = execute(exp, matrix, store, run_id, ctx)
    assert (tally.ok, tally.failed) == (1, 1)  # Redis ran; PostgreSQL did not start, and the run went on
    (failed,) = [t for t in store.trials(run_id) if t.status == "failed"]
    assert failed.category == "server-error"
    assert 'unrecognized configuration parameter "no_such_setting"' in failed.stderr  # the server's own log
    assert_nothing_left(dirs, set())
