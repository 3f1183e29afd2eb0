"""Many fio clients (spec/clients.py, workloads/fio_clients.py): the spec's shape and refusals, and the parser on
fio's real client output (tests/data/fio/3.33/clients/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from layerbench.errors import SpecError
from layerbench.run.kinds.clients import in_step, merged_latency
from layerbench.spec import load
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import Matrix, expand, expand_stacks
from layerbench.spec.models import Experiment, FioWorkload
from layerbench.store.db import Store
from layerbench.workloads import fio, fio_clients

DATA = Path(__file__).parent.parent / "data" / "fio" / "3.33" / "clients"
NATIVE_2 = "native-2-psync-randread.json"
SOCKETS_2 = ["/tmp/fc/s0.sock", "/tmp/fc/s1.sock"]

BASE = """
name: t
device: {kind: loop, size: 1GiB}
workloads:
  - {name: RR, rw: randread, bs: 4k}
stacks:
"""


def _truth(name: str) -> dict:
    text = (DATA / name).read_text()
    return json.loads(text[text.index("\n{") :])


def test_each_client_is_read_by_its_socket_and_fio_s_sum_apart() -> None:
    result = fio_clients.parse((DATA / NATIVE_2).read_text(), SOCKETS_2)
    truth = {s["hostname"]: s for s in _truth(NATIVE_2)["client_stats"] if s["jobname"] != "All clients"}
    assert [c.index for c in result.clients] == [0, 1]
    for c in result.clients:
        assert c.host == SOCKETS_2[c.index]
        assert c.job.directions["read"].iops == truth[c.host]["read"]["iops"]
        assert sum(c.job.directions["read"].clat_bins.values()) == truth[c.host]["read"]["clat_ns"]["N"]
    assert result.aggregate is not None
    summed = sum(c.job.directions["read"].iops for c in result.clients)
    assert summed == pytest.approx(result.aggregate.directions["read"].iops, rel=1e-3)


def test_a_client_not_given_or_missing_is_a_parse_error() -> None:
    text = (DATA / NATIVE_2).read_text()
    with pytest.raises(fio.FioParseError, match="not given"):
        fio_clients.parse(text, ["/elsewhere.sock", SOCKETS_2[1]])
    with pytest.raises(fio.FioParseError, match="no result for client"):
        fio_clients.parse(text, [*SOCKETS_2, "/third.sock"])


def test_samples_sum_to_the_clients_total_and_merge_their_histograms() -> None:
    result = fio_clients.parse((DATA / NATIVE_2).read_text(), SOCKETS_2)
    samples = [*fio_clients.samples(result), *merged_latency(result)]
    iops = [s for s in samples if s.metric == "iops"]
    assert {s.job for s in iops} == {"c0", "c1"}  # one row per client, no aggregate row to count twice
    assert sum(s.value for s in iops) == pytest.approx(result.aggregate.directions["read"].iops, rel=1e-3)
    merged = {s.metric: s.value for s in samples if s.job == "all" and s.direction == "read"}
    # fio's own "All clients" has no percentiles (and no bins): the merged histogram's p99 lies between
    # the clients' own, and counts every completion fio's sum counts.
    stats = _truth(NATIVE_2)["client_stats"]
    own = [s["read"]["clat_ns"]["percentile"]["99.000000"] for s in stats if s["jobname"] != "All clients"]
    assert "percentile" not in stats[-1]["read"]["clat_ns"]
    assert min(own) <= merged["clat_p99"] <= max(own)
    assert merged["lat_p99_us"] == merged["clat_p99"] / 1000
    counted = sum(sum(c.job.directions["read"].clat_bins.values()) for c in result.clients)
    assert counted == stats[-1]["read"]["clat_ns"]["N"]
    ops = next(s for s in samples if s.metric == "ops")
    assert ops.job == "all" and ops.value > 0


def test_the_plain_parser_reads_every_client_but_not_fio_s_sum() -> None:
    """What the read model merges per cell: every client's histogram once."""
    result = fio.parse((DATA / NATIVE_2).read_text())
    assert len(result.jobs) == 2
    assert all(j.name == "w" for j in result.jobs)


def test_a_job_file_carries_the_workload_s_options_and_the_client_s_file() -> None:
    w = FioWorkload(name="rr", rw="randread", iodepth=8, runtime_s=2, ramp_s=0.5, size=64 * 2**20)
    text = fio_clients.job_text(w, "/data/lb-67108864-c3.dat")
    lines = text.splitlines()
    assert lines[0] == "[rr]"
    assert "filename=/data/lb-67108864-c3.dat" in lines and "iodepth=8" in lines and "runtime=2000ms" in lines
    assert not any(ln.startswith(("output-format", "name=")) for ln in lines)
    assert fio_clients.data_file("/data", w, 3, shared=True) == "/data/lb-67108864-c3.dat"
    assert fio_clients.data_file("/data", w, 3, shared=False) == fio.data_file("/data", 64 * 2**20)


def test_client_argv_pairs_each_socket_with_its_job() -> None:
    argv = fio_clients.client_argv(["/a.sock", "/b.sock"], ["/w/a.fio", "/w/b.fio"])
    assert argv == [
        "fio",
        "--output-format=json+",
        "--client=sock:/a.sock",
        "/w/a.fio",
        "--client=sock:/b.sock",
        "/w/b.fio",
    ]
    assert fio_clients.server_argv("/a.sock") == ["fio", "--server=sock:/a.sock"]


# --- the spec ------------------------------------------------------------------------------------------


def test_clients_take_a_count_or_a_mapping_and_a_list_is_an_axis() -> None:
    stacks = expand_stacks(load.parse(BASE + "  - {filesystem: ext4, clients: [1, 2, {count: 4, shared: true}]}\n"))
    assert [(s.clients.count, s.clients.shared) for s in stacks if s.clients] == [(1, False), (2, False), (4, True)]
    assert stacks[2].label().endswith("/4clients(shared)")


def test_a_bad_count_names_the_field() -> None:
    with pytest.raises(SpecError) as err:
        expand_stacks(load.parse(BASE + "  - {filesystem: ext4, clients: {count: 0}}\n"))
    assert "clients.count" in str(err.value)
    with pytest.raises(SpecError) as err:
        expand_stacks(load.parse(BASE + "  - {filesystem: ext4, clients: {count: 2, share: true}}\n"))
    assert "share" in str(err.value)


def test_stacks_without_clients_dump_as_before() -> None:
    """Cell ids are hashes of the dump: a stack without clients must not gain a key."""
    stack = expand_stacks(load.parse(BASE + "  - {filesystem: ext4}\n"))[0]
    assert "clients" not in stack.model_dump(mode="json")


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        (
            "{device: {kind: none}, filesystem: none, engine: {kind: docker-host, node: 'tcp://h:2375'}, "
            "placement: volume, clients: 2}",
            "reached over the network, perhaps on another machine: name it by its unix:// socket",
        ),
        (
            "{device: {kind: none}, filesystem: none, engine: {kind: docker-host, node: 'unix:///d.sock'}, "
            "placement: volume, clients: {count: 2, shared: true}}",
            "clients.shared: not yet on docker-host",
        ),
        (
            "{filesystem: ext4, engine: {kind: swarm, node: n1}, placement: tmpfs, clients: {count: 2, shared: true}}",
            "placement tmpfs cannot be shared",
        ),
        (
            "{filesystem: ext4, engine: 'docker:overlay2', placement: tmpfs, clients: {count: 2, shared: true}}",
            "placement tmpfs cannot be shared",
        ),
        ("{filesystem: none, placement: raw, clients: 2}", "raw device"),
        ("{filesystem: ext4, limits: {cpus: 1}, clients: 2}", "limits on native clients"),
    ],
)
def test_what_clients_cannot_do_is_refused_before_the_run(full_caps: HostCaps, entry: str, reason: str) -> None:
    m = expand(load.parse(BASE + f"  - {entry}\n"), full_caps)
    assert m.refused and reason in m.refused[0].reason
    assert m.refused[0].reason.startswith("clients")


def test_shared_clients_with_a_server_name_the_field() -> None:
    """A server's clients (tests/unit/test_database_clients.py) share it already: shared says nothing there."""
    with pytest.raises(SpecError) as err:
        expand_stacks(load.parse(BASE + "  - {filesystem: ext4, server: redis, clients: {count: 2, shared: true}}\n"))
    assert "clients.shared" in str(err.value)
    assert expand_stacks(load.parse(BASE + "  - {filesystem: ext4, server: redis, clients: 2}\n"))[0].clients


@pytest.mark.parametrize(
    ("clients", "engine", "said"),
    [
        ("{count: 2, nodes: [n1, n1]}", "{kind: swarm, node: n1}", "names a node twice"),
        ("{count: 2, nodes: [n1, n2, n3]}", "{kind: swarm, node: n1}", "3 nodes for 2 clients"),
        ("{count: 2, nodes: [n1, n2], shared: true}", "{kind: swarm, node: n1}", "cannot share one place"),
        ("{count: 2, nodes: [n2, n3]}", "{kind: swarm, node: n1}", "lacks the engine's node 'n1'"),
        ("{count: 2, nodes: [n1, n2]}", "'docker:overlay2'", "for engines kubernetes, swarm, docker-host"),
        ("{count: 2, nodes: [n1]}", "{kind: swarm, node: n1}", "at least 2 items"),
    ],
)
def test_clients_nodes_name_what_is_wrong(clients: str, engine: str, said: str) -> None:
    entry = f"  - {{filesystem: ext4, engine: {engine}, placement: bind, clients: {clients}}}\n"
    with pytest.raises(SpecError) as err:
        expand_stacks(load.parse(BASE + entry))
    assert "clients" in str(err.value) and said in str(err.value), str(err.value)


def test_clients_are_dealt_over_their_nodes_in_turn_and_labelled_so() -> None:
    entry = "  - {filesystem: ext4, engine: {kind: kubernetes, node: b}, placement: bind, clients: %s}\n"
    (stack,) = expand_stacks(load.parse(BASE + entry % "{count: 5, nodes: [a, b]}"))
    assert stack.clients is not None
    assert [stack.clients.node_of(i, "b") for i in range(5)] == ["a", "b", "a", "b", "a"]
    assert stack.label().endswith("/5clients@a+b")
    (alone,) = expand_stacks(load.parse(BASE + entry % "3"))
    assert alone.clients is not None and alone.clients.node_of(2, "b") == "b"
    assert "nodes" not in alone.model_dump(mode="json")["clients"]  # its cell id is as before nodes existed


# --- when each client ran ------------------------------------------------------------------------------


def test_a_client_s_window_ends_at_its_log_s_last_entry_and_spans_its_measured_runtime() -> None:
    """Four servers through layerbench's own job files; fio's client kept each server's IOPS log (its last chunk)."""
    text = (DATA / "clients-native-4.json").read_text()
    result = fio_clients.parse(text, [fio_clients.socket_name(i) for i in range(4)])
    logs = {i: [(DATA / f"clients-native-4.c{i}.iops.log").read_text()] for i in range(4)}
    ends = {i: fio_clients.log_end(t) for i, t in logs.items()}
    assert ends == {0: 1795726516511.0, 1: 1795726516484.0, 2: 1795726516514.0, 3: 1795726516510.0}
    times = fio_clients.client_times(result, ends)
    assert all(end - start == 1001 for start, end in times.values())  # fio's measured runtime of each
    assert fio_clients.spreads(times) == {"start_spread_ms": 30.0, "finish_spread_ms": 30.0}
    assert in_step({fio_clients.client_name(i): t for i, t in times.items()}, 1.0, 0.1).status == "pass"
    samples = fio_clients.samples(result, times)
    assert {s.metric: s.value for s in samples if s.metric.endswith("spread_ms")}["start_spread_ms"] == 30.0
    with pytest.raises(fio.FioParseError):
        fio_clients.log_end([])
    with pytest.raises(fio.FioParseError):
        fio_clients.log_end([""])


def test_the_log_interval_gives_about_200_points_at_any_runtime() -> None:
    assert fio_clients.log_interval_ms(FioWorkload(name="a", runtime_s=1)) == 10
    assert fio_clients.log_interval_ms(FioWorkload(name="a", runtime_s=60)) == 300
    assert fio_clients.log_files(2, 2) == ["lb_iops.1.log.c2.sock", "lb_iops.2.log.c2.sock"]
    text = fio_clients.job_text(FioWorkload(name="a", runtime_s=60), "/data/f")
    assert "write_iops_log=lb" in text and "log_avg_msec=300" in text and "log_unix_epoch=1" in text


def test_clients_out_of_step_are_flagged_with_who_was_late() -> None:
    together = {"c0": (1000.0, 2000.0), "c1": (1010.0, 2015.0)}
    assert in_step(together, 1.0, 0.1).status == "pass"
    late = {"c0": (1000.0, 2000.0), "c1": (1150.0, 2150.0), "c2": (1005.0, 2004.0)}
    check = in_step(late, 1.0, 0.1)
    assert check.status == "flag" and "late: c1" in check.detail and "start spread 150 ms" in check.detail
    assert fio_clients.spreads(late) == {"start_spread_ms": 150.0, "finish_spread_ms": 150.0}


def test_every_client_s_file_counts_against_the_device(full_caps: HostCaps) -> None:
    text = """
name: t
device: {kind: zram, size: 1GiB}
workloads:
  - {name: RR, rw: randread, bs: 4k, size: 256MiB}
stacks:
  - {filesystem: ext4, clients: [2, 4]}
"""
    from layerbench.workloads.footprint import files

    m = expand(load.parse(text), full_caps, files=files)
    assert [c.stack.clients.count for c in m.cells] == [2]
    assert "x4 clients" in m.refused[0].reason


def test_more_clients_are_not_held_to_fewer_clients_bound() -> None:
    """Four clients may beat one honestly: faster-than-physics is not judged across client counts."""
    from layerbench.analysis.checks import not_beneath

    stacks = expand_stacks(
        load.parse(
            BASE + "  - {filesystem: ext4, engine: 'docker:overlay2', placement: volume,"
            " clients: [1, 4]}\n  - {filesystem: ext4, clients: 1}\n"
        )
    )
    one, four, native = stacks
    assert "1 client(s) against 4" in (not_beneath(four, native) or "")
    assert not_beneath(one, native) is None


# --- through the store: show's clients table and the scaling curve -------------------------------------


def _capture() -> tuple[str, fio_clients.ClientsResult, dict[int, float]]:
    """The 4-client capture: fio's client output, parsed, and where each client's IOPS log ends."""
    text = (DATA / "clients-native-4.json").read_text()
    full = fio_clients.parse(text, [fio_clients.socket_name(i) for i in range(4)])
    ends = {i: fio_clients.log_end([(DATA / f"clients-native-4.c{i}.iops.log").read_text()]) for i in range(4)}
    return text, full, ends


def _run_of(exp: Experiment, matrix: Matrix, tmp_path: Path) -> tuple[Store, str]:
    """A new run of ``exp`` in a store of its own, its cells registered."""
    from layerbench.run.loop import register_cells

    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run(exp.name, exp.model_dump_json(), exp.digest(), {})
    register_cells(store, run_id, matrix)
    return store, run_id


def test_a_stored_run_of_1_2_and_4_clients_gives_a_curve_and_a_row_per_client(
    tmp_path: Path, full_caps: HostCaps
) -> None:
    """The 4-client capture stored as each count's trials (its first 1, 2 or 4 clients), read back as `show`."""
    import time

    from layerbench.records.info import TrialInfo
    from layerbench.records.trial import TrialRecord
    from layerbench.report.view import view
    from layerbench.store.read import load as load_run

    exp = load.parse(BASE + "  - {filesystem: ext4, clients: [1, 2, 4]}\n")
    matrix = expand(exp, full_caps)
    store, run_id = _run_of(exp, matrix, tmp_path)
    text, full, ends = _capture()
    for cell in matrix.cells:
        n = cell.stack.clients.count
        part = fio_clients.ClientsResult(full.version, full.clients[:n], None)
        times = {i: t for i, t in fio_clients.client_times(full, ends).items() if i < n}
        samples = [*fio_clients.samples(part, times), *merged_latency(part)]
        for rep in range(2):
            store.record_trial(run_id, TrialRecord(cell.id, rep, "ok", None, time.time(), time.time(), [], text, "",
                                                   TrialInfo(), samples))  # fmt: skip
    v = view(load_run(store, "latest", latency=True))
    (curve,) = v.scalings
    assert [p.instances for p in curve.points] == [1, 2, 4]
    four = sum(c.job.directions["read"].iops for c in full.clients)
    assert curve.points[-1].throughput.mean == pytest.approx(four, rel=0.01)  # ops/s: the clients' IOPS summed
    assert curve.points[-1].p99_us > 0
    rows = v.clients
    assert list(rows[rows["stack"].str.endswith("/4clients")]["client"]) == ["c0", "c1", "c2", "c3", "all"]
    total = rows[(rows["stack"].str.endswith("/4clients")) & (rows["client"] == "all")].iloc[0]
    assert total["iops"] == pytest.approx(four) and total["start_spread_ms"] == 30.0


def test_clients_dealt_over_nodes_are_named_with_their_node_in_show(tmp_path: Path, full_caps: HostCaps) -> None:
    """The 4-client capture stored as a cell whose clients are dealt over two nodes: `show` names each one's."""
    import time

    from layerbench.records.info import TrialInfo
    from layerbench.records.trial import TrialRecord
    from layerbench.report.terminal import clients_table
    from layerbench.report.view import view
    from layerbench.spec.engines import kubernetes
    from layerbench.spec.engines.kubernetes import ClusterNode, KubeCaps
    from layerbench.store.read import load as load_run

    caps = full_caps.with_engine(kubernetes.KIND, KubeCaps({n: ClusterNode(True, True) for n in ("n1", "n2")}))
    entry = "  - {filesystem: ext4, engine: {kind: kubernetes, node: n2}, placement: bind, clients: %s}\n"
    exp = load.parse(BASE + entry % "{count: 4, nodes: [n1, n2]}")
    matrix = expand(exp, caps)
    (cell,) = matrix.cells
    store, run_id = _run_of(exp, matrix, tmp_path)
    text, full, ends = _capture()
    samples = fio_clients.samples(full, fio_clients.client_times(full, ends))
    store.record_trial(run_id, TrialRecord(cell.id, 0, "ok", None, time.time(), time.time(), [], text, "", TrialInfo(),
                                           samples))  # fmt: skip
    rows = view(load_run(store, "latest")).clients
    assert list(zip(rows["client"], rows["node"], strict=True)) == [
        ("c0", "n1"), ("c1", "n2"), ("c2", "n1"), ("c3", "n2"), ("all", ""),
    ]  # fmt: skip
    console = Console(width=200, record=True)
    console.print(clients_table(rows))
    assert "c2 on n1" in console.export_text()


def test_a_run_that_lost_a_client_s_log_runs_again_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """fio's client failed to unpack a server's log (as it once did on three swarm services): the clients run
    again, the trial is the later run's, and its info keeps what the lost run said."""
    from layerbench.proc import Completed
    from layerbench.run.kinds import clients as clients_trial
    from layerbench.run.kinds.single import Outcome
    from layerbench.run.measure.monitor import Monitor
    from layerbench.spec.clients import ClientsSpec
    from layerbench.stack.clients import ClientSet
    from layerbench.stack.target import Device, Target

    text = (DATA / "clients-native-4.json").read_text()
    names = [fio_clients.socket_name(i) for i in range(4)]
    logs = {i: [(DATA / f"clients-native-4.c{i}.iops.log").read_text()] for i in range(4)}
    said = "fio: failed converting IO log\n"
    runs = iter(
        [
            clients_trial.ClientsRun(Completed([], 0, text, said), Monitor([]), {i: [] for i in range(4)}, names),
            clients_trial.ClientsRun(Completed([], 0, text, ""), Monitor([]), logs, names),
        ]
    )
    monkeypatch.setattr(clients_trial, "_run_clients", lambda *args: next(runs))
    device = Device("", "none", 0)
    targets = [Target(print, print, f"/d{i}", False, device, "native", {"placement": "tmpfs"}) for i in range(4)]
    out = Outcome()
    w = FioWorkload(name="rr", rw="randread", runtime_s=1)
    clients_trial._execute(ClientSet(ClientsSpec(count=4), targets, "native"), w, out, None)  # type: ignore[arg-type]
    assert out.status == "ok" and out.info["runs_lost_a_log"] == [said.strip()]
    assert out.info["clients_spread_ms"] == {"start_spread_ms": 30.0, "finish_spread_ms": 30.0}
    assert next(runs, None) is None  # two runs: the lost one and the one that stands


# A user's job file on every client (tools/capture-fio-clients.py ... 2 clients-groups.fio): two jobs side by side,
# one of them cloned, then a third after a stonewall, each client's every job and clone reported apart.
JOB_FILE_2 = "clients-jobfile-2.json"
OWN = Path(__file__).parents[1] / "data" / "jobfiles" / "layerbench" / "own"
SECTIONS = ("rand-read", "seq-read", "rand-write")


def test_a_job_file_on_clients_is_each_client_s_each_job_and_the_clients_merged() -> None:
    text = (DATA / JOB_FILE_2).read_text()
    result = fio_clients.parse(text, [fio_clients.socket_name(i) for i in range(2)])
    assert [[j.name for j in c.jobs] for c in result.clients] == [
        ["rand-read", "seq-read", "seq-read", "rand-write"]
    ] * 2
    phases = fio.group_phases((DATA / "clients-jobfile-2.c0.fio").read_text())
    assert phases == {0: 0, 1: 1}  # the stonewall: rand-write ran after the others
    logs = {i: [(DATA / f"clients-jobfile-2.c{i}.iops.{k}.log").read_text() for k in range(1, 5)] for i in range(2)}
    assert all(logs.values())
    assert fio_clients.log_end(["", "5, 1, 0, 0, 0\n"]) == 5.0  # a job shorter than the log's interval logs nothing
    ends = {i: fio_clients.log_end(texts) for i, texts in logs.items()}
    times = fio_clients.client_times(result, ends, phases)
    truth = [s for s in _truth(JOB_FILE_2)["client_stats"] if s["jobname"] != fio_clients.AGGREGATE]
    for c in result.clients:  # each group's longest runtime, the groups in turn
        mine = [s for s in truth if s["hostname"] == c.host]
        first = max(s["read"]["runtime"] for s in mine if s["groupid"] == 0)
        then = max(s["write"]["runtime"] for s in mine if s["groupid"] == 1)
        assert times[c.index][1] - times[c.index][0] == first + then
    samples = fio_clients.samples(result, times, phases, per_job=True)
    moved: dict[str, float] = {}
    for s in samples:
        if s.metric == "io_bytes":
            moved[s.job] = moved.get(s.job, 0) + s.value
    # the workload's size: given to every job that gave none, clones each their own file
    clones = {"rand-read": 1, "seq-read": 2, "rand-write": 1}
    assert moved == {f"c{i}/{j}": clones[j] * 16 * 2**20 for i in range(2) for j in SECTIONS}
    ios = sum(s["read"]["total_ios"] + s["write"]["total_ios"] for s in truth)
    (ops,) = [s.value for s in samples if s.metric == "ops"]
    walls = [(end - start) / 1000 for start, end in times.values()]
    assert ops == pytest.approx(sum(ios / 2 / wall for wall in walls), rel=0.05)  # each client's own, summed
    merged = {s.direction: s.value for s in merged_latency(result) if s.metric == "clat_p99"}
    assert set(merged) == {"read", "write"} and all(v > 0 for v in merged.values())


def test_a_job_file_runs_on_each_client_with_its_given_fields_and_its_own_file_names(tmp_path: Path) -> None:
    w = FioWorkload(name="own", job_file=str(OWN / "clients-groups.fio"), size="16MiB")
    text = fio_clients.job_file_text(w, "/mnt/place", 1, shared=True)
    assert text.startswith("[global]\nwrite_iops_log=lb\nlog_avg_msec=10\nlog_unix_epoch=1\n")
    assert "filename_format=c1.$jobname.$jobnum.$filenum\ndirectory=/mnt/place\n" in text
    assert text.count("size=16777216") == 3 and "runtime=2" in text
    assert "filename_format" not in fio_clients.job_file_text(w, "/mnt/c1", 1, shared=False)
    assert fio_clients.job_count(w) == 4  # its IOPS logs: a clone logs apart


def test_a_job_file_is_taken_on_a_stack_with_clients_and_a_personality_is_not(full_caps: HostCaps) -> None:
    jobs = f"  - {{name: own, job_file: {OWN / 'clients-groups.fio'}, size: 16MiB}}\n"
    spec = BASE.replace("  - {name: RR, rw: randread, bs: 4k}\n", jobs) + "  - {filesystem: ext4, clients: 2}\n"
    m = expand(load.parse(spec), full_caps)
    assert len(m.cells) == 1 and m.refused == []
    personal = BASE.replace("{name: RR, rw: randread, bs: 4k}", "{name: web, personality: webserver-like}")
    m = expand(load.parse(personal + "  - {filesystem: ext4, clients: 2}\n"), full_caps)
    assert m.refused and m.refused[0].reason.startswith("clients: not yet for a personality")


def test_a_stored_job_file_run_on_two_clients_has_a_row_per_client_summing_its_jobs(
    tmp_path: Path, full_caps: HostCaps
) -> None:
    import time

    from layerbench.records.info import TrialInfo
    from layerbench.records.trial import TrialRecord
    from layerbench.report.view import view
    from layerbench.store.read import load as load_run

    jobs = f"  - {{name: own, job_file: {OWN / 'clients-groups.fio'}, size: 16MiB}}\n"
    spec = BASE.replace("  - {name: RR, rw: randread, bs: 4k}\n", jobs) + "  - {filesystem: ext4, clients: 2}\n"
    exp = load.parse(spec)
    matrix = expand(exp, full_caps)
    store, run_id = _run_of(exp, matrix, tmp_path)
    text = (DATA / JOB_FILE_2).read_text()
    result = fio_clients.parse(text, [fio_clients.socket_name(i) for i in range(2)])
    samples = [*fio_clients.samples(result, None, None, per_job=True), *merged_latency(result)]
    (cell,) = matrix.cells
    now = time.time()
    store.record_trial(run_id, TrialRecord(cell.id, 0, "ok", None, now, now, [], text, "", TrialInfo(), samples))
    rows = view(load_run(store, "latest")).clients
    assert list(rows["client"]) == ["c0", "c1", "all"]
    iops = {c.index: sum(d.iops for j in c.jobs for d in j.directions.values()) for c in result.clients}
    assert list(rows["iops"]) == pytest.approx([iops[0], iops[1], iops[0] + iops[1]])
