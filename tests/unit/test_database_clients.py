"""Many clients per database instance (database_clients.py, docs/how-to/many-clients.md): the spec's rules, when
each client ran from the tools' own logs, and what a trial keeps, on real captures: two YCSB clients started
together against one PostgreSQL (tests/data/ycsb/0.17.0/), and two pgbench runs one after the other
(tests/data/pgbench/15/), which the clients-in-step check must flag."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from layerbench.run.kinds.database_clients import Client, clients_of, pgbench_measured, timing, ycsb_measured
from layerbench.spec import load
from layerbench.spec.clients import ClientsSpec
from layerbench.spec.databases import INSERTING_MIXES
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand
from layerbench.workloads import pgbench, ycsb

DATA = Path(__file__).parent.parent / "data"
YCSB = DATA / "ycsb" / "0.17.0"
PGBENCH = DATA / "pgbench" / "15"
YCSB_LOGS = [YCSB / "hdr-postgres-b-client1", YCSB / "hdr-postgres-b-client2"]
YCSB_REPORTS = [YCSB / "postgres-run-b-client1.txt", YCSB / "postgres-run-b-client2.txt"]
PG_RUNS = ["tpcb-like-c2-rate200", "tpcb-like-c4-rate500-repeatable-read"]
TWO = [Client(0, 0, "i0c0"), Client(0, 1, "i0c1")]

SPEC = """
name: t
device: {kind: loop, size: 2GiB}
stacks:
  - {filesystem: ext4, engine: native, placement: host-dir, server: postgres, clients: [1, 2, 4]}
workloads:
"""


def _pg_files() -> list[list[Path]]:
    return [pgbench.log_files(str(PGBENCH / f"{run}.logs" / "tx")) for run in PG_RUNS]


# --- the spec ------------------------------------------------------------------------------------------


def test_clients_on_a_database_stack_are_an_axis_and_name_the_stack(full_caps: HostCaps) -> None:
    m = expand(load.parse(SPEC + "  - {kind: ycsb, name: B, mix: b, threads: 2}\n"), full_caps)
    assert [c.stack.clients.count for c in m.cells] == [1, 2, 4] and not m.refused
    assert m.cells[2].stack.label().endswith("postgres(10000rec)/4clients")


@pytest.mark.parametrize(
    ("workload", "refused", "reason"),
    [
        ("{kind: ycsb, name: D, mix: d, threads: 2}", [2, 4], "mix d inserts"),
        ("{kind: ycsb, name: W, mix: write-heavy, threads: 2}", [2, 4], "mix write-heavy inserts"),
        ("{kind: ycsb, name: A, mix: a, threads: 100}", [4], "100 x 4 clients = 400 client connections"),
        ("{kind: pgbench, name: T, clients: 64}", [4], "64 x 4 clients = 256 client connections"),
    ],
)
def test_what_many_clients_of_a_server_cannot_do_is_refused(
    full_caps: HostCaps, workload: str, refused: list[int], reason: str
) -> None:
    m = expand(load.parse(SPEC + f"  - {workload}\n"), full_caps)
    assert sorted(r.cell.stack.clients.count for r in m.refused) == refused
    assert all(reason in r.reason for r in m.refused), [r.reason for r in m.refused]


def test_the_inserting_mixes_are_those_whose_run_phase_inserts() -> None:
    assert {m for m, p in ycsb.MIXES.items() if float(p["insertproportion"]) > 0} == INSERTING_MIXES


def test_clients_are_named_by_instance_and_place() -> None:
    assert [c.job for c in clients_of(2, None)] == ["i0", "i1"]
    assert [c.job for c in clients_of(2, ClientsSpec(count=2))] == ["i0c0", "i0c1", "i1c0", "i1c1"]
    assert [c.instance for c in clients_of(2, ClientsSpec(count=2))] == [0, 0, 1, 1]


# --- when each client ran --------------------------------------------------------------------------------


def test_a_ycsb_client_s_window_is_its_hdr_logs_start_and_last_interval() -> None:
    """Client 1's READ log: StartTime 1795430215.940, one interval at +0.026 for 2.667 s; UPDATE from .989."""
    one, two = (ycsb.hdr_window(d) for d in YCSB_LOGS)
    assert one == (1795430215966.0, 1795430218657.0)
    assert two == pytest.approx((1795430215952.0, 1795430218656.0))
    assert 2600 < one[1] - one[0] < 2800  # maxexecutiontime=3 less the JVM's start before the first operation


def test_a_pgbench_client_s_window_is_from_its_transactions_ends_and_latencies() -> None:
    first, second = (pgbench.log_window(f) for f in _pg_files())
    assert 1990 < first[1] - first[0] < 2010  # --time=2
    assert first[1] < second[0]  # run one after the other


def test_a_log_without_intervals_or_transactions_is_refused(tmp_path: Path) -> None:
    (tmp_path / "READ.hdr").write_text("#[StartTime: 1795430215.940 (seconds since epoch), x]\n")
    with pytest.raises(ycsb.YcsbParseError):
        ycsb.hdr_window(tmp_path)
    with pytest.raises(ycsb.YcsbParseError):
        ycsb.hdr_window(tmp_path / "nothing")
    (tmp_path / "tx.1").write_text("")
    with pytest.raises(pgbench.PgbenchParseError):
        pgbench.log_window([tmp_path / "tx.1"])
    (tmp_path / "tx.2").write_text("0 1 not-a-number\n")
    with pytest.raises(pgbench.PgbenchParseError):
        pgbench.log_window([tmp_path / "tx.2"])


# --- what a trial keeps --------------------------------------------------------------------------------


def test_two_ycsb_clients_of_one_instance_sum_their_throughput_and_merge_their_histograms() -> None:
    results = [ycsb.parse(p.read_text()) for p in YCSB_REPORTS]
    m = ycsb_measured(TWO, results, YCSB_LOGS, many=True)
    ops = {s.job: s.value for s in m.samples if s.metric == "ops"}
    assert ops == {"i0c0": results[0].throughput, "i0c1": results[1].throughput}  # summed over jobs: the total
    p99 = {s.job: s.value for s in m.samples if s.metric == "lat_p99_us" and s.direction == "read"}
    assert set(p99) == {"i0c0", "i0c1", "i0", "all"}
    assert p99["i0"] == p99["all"]  # one instance: its clients are all of them
    assert min(p99["i0c0"], p99["i0c1"]) <= p99["all"] <= max(p99["i0c0"], p99["i0c1"])
    count = {s.job: s.value for s in m.samples if s.metric == "count" and s.direction == "read"}
    assert count["all"] == count["i0c0"] + count["i0c1"]
    assert set(m.latency_hdr) == {"read", "update"}
    check = timing(m.windows, 3.0, ClientsSpec(count=2), "YCSB's logs").check
    assert check.status == "pass" and check.detail.startswith("start spread 14 ms, finish spread 1 ms")


def test_one_client_per_instance_keeps_the_jobs_it_always_had() -> None:
    result = ycsb.parse(YCSB_REPORTS[0].read_text())
    m = ycsb_measured([Client(0, 0, "i0")], [result], YCSB_LOGS[:1], many=False)
    assert {s.job for s in m.samples} == {"i0", "all"} and m.windows == {}


def test_one_client_each_of_several_instances_is_timed_and_judged_as_clients_are() -> None:
    """Several instances (a plan's curve, plan-check's counts) sum their clients' throughput, which holds only if
    their loads overlapped: without ``clients`` they are timed from the same logs and judged at the default share."""
    two = clients_of(2, None)
    results = [ycsb.parse(p.read_text()) for p in YCSB_REPORTS]
    m = ycsb_measured(two, results, YCSB_LOGS, many=False)
    assert {s.job for s in m.samples if s.metric == "ops"} == {"i0", "i1"}  # no per-instance merge: one each
    assert set(m.windows) == {"i0", "i1"}
    t = timing(m.windows, 3.0, None, "YCSB's logs")
    assert t.check.status == "pass" and "within 10% of it" in t.check.detail
    pg = pgbench_measured(two, [pgbench.parse((PGBENCH / f"{r}.txt").read_text()) for r in PG_RUNS], _pg_files(), False)
    assert timing(pg.windows, 2.0, None, "pgbench's logs").check.status == "flag"  # one after the other


def test_pgbench_clients_pool_their_transactions_and_out_of_step_ones_are_flagged() -> None:
    results = [pgbench.parse((PGBENCH / f"{run}.txt").read_text()) for run in PG_RUNS]
    m = pgbench_measured(TWO, results, _pg_files(), many=True)
    tps = {s.job: s.value for s in m.samples if s.metric == "ops"}
    assert tps == {"i0c0": results[0].tps, "i0c1": results[1].tps}
    p99 = {s.job for s in m.samples if s.metric == "lat_p99_us"}
    assert p99 == {"i0c0", "i0c1", "i0", "all"}
    t = timing(m.windows, 2.0, ClientsSpec(count=2), "pgbench's logs")
    assert t.check.status == "flag" and "late: i0c1" in t.check.detail
    assert t.info["clients_timed_by"] == "pgbench's logs" and set(t.info["clients_ran_ms"]) == {"i0c0", "i0c1"}
    assert {s.metric for s in t.samples} == {"start_spread_ms", "finish_spread_ms"}


# --- through the store: show's clients table and the scaling curve -------------------------------------


def test_a_stored_sweep_of_1_and_2_ycsb_clients_gives_a_curve_and_a_row_per_client(
    tmp_path: Path, full_caps: HostCaps
) -> None:
    """Client 1's capture stored as the 1-client cell's trials, both clients' as the 2-client cell's."""
    from layerbench.analysis.plan import curves_of
    from layerbench.records.trial import TrialRecord
    from layerbench.report.view import view
    from layerbench.run.loop import register_cells
    from layerbench.store.db import Store
    from layerbench.store.read import load as load_run

    exp = load.parse(SPEC.replace("[1, 2, 4]", "[1, 2]") + "  - {kind: ycsb, name: B, mix: b, threads: 2}\n")
    matrix = expand(exp, full_caps)
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run(exp.name, exp.model_dump_json(), exp.digest(), {})
    register_cells(store, run_id, matrix)
    results = [ycsb.parse(p.read_text()) for p in YCSB_REPORTS]
    for cell in matrix.cells:
        n = cell.stack.clients.count
        m = ycsb_measured(TWO[:n], results[:n], YCSB_LOGS[:n], many=True)
        t = timing(m.windows, 3.0, ClientsSpec(count=n), "YCSB's logs")
        info = replace(t.info, latency_hdr=m.latency_hdr)
        for rep in range(2):
            record = TrialRecord(cell.id, rep, "ok", None, time.time(), time.time(), [], "", "", info,
                                 [*m.samples, *t.samples])  # fmt: skip
            store.record_trial(run_id, record)
    data = load_run(store, "latest", latency=True)
    v = view(data)
    (curve,) = v.scalings
    assert [p.instances for p in curve.points] == [1, 2] and curve.counted == "client"
    assert curve.points[1].throughput.mean == pytest.approx(results[0].throughput + results[1].throughput)
    assert curve.points[1].p99_us > 0
    rows = v.clients
    two = rows[rows["stack"].str.endswith("/2clients")]
    assert list(two["client"]) == ["i0c0", "i0c1", "all"]
    total = two[two["client"] == "all"].iloc[0]
    assert total["ops"] == pytest.approx(results[0].throughput + results[1].throughput)
    assert total["start_spread_ms"] == pytest.approx(14.0, abs=0.5)
    assert curves_of(data) == []  # the planner counts containers: 2 clients of one server are one container


def test_instances_whose_logs_cannot_time_them_stand_without_the_check(tmp_path: Path) -> None:
    """A client of one of several instances whose log holds no transaction cannot be timed: the trial keeps its
    numbers and goes without clients-in-step (no timing, so no check), where ``clients`` (which asks for it)
    refuses."""
    (tmp_path / "tx.1").write_text("")
    results = [pgbench.parse((PGBENCH / f"{run}.txt").read_text()) for run in PG_RUNS]
    files = [_pg_files()[0], [tmp_path / "tx.1"]]
    m = pgbench_measured(clients_of(2, None), results, files, many=False)
    assert m.windows == {} and {s.job for s in m.samples if s.metric == "ops"} == {"i0", "i1"}
    with pytest.raises(pgbench.PgbenchParseError):
        pgbench_measured(TWO, results, files, many=True)
