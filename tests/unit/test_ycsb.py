"""The YCSB adapter: properties and command lines, and the parser on output of real YCSB 0.17.0 runs.

tests/data/ycsb/0.17.0/README.md says how each fixture was produced.
"""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram

from layerbench.spec.databases import ServerSpec, YcsbMix, YcsbWorkload
from layerbench.workloads import ycsb
from layerbench.workloads.ycsb import YcsbParseError

DATA = Path(__file__).parent.parent / "data" / "ycsb" / "0.17.0"
FIXTURES = sorted(p.name for p in DATA.glob("*.txt"))
PG = ServerSpec(kind="postgres", records=2000)
REDIS = ServerSpec(kind="redis", records=2000, fieldcount=4, fieldlength=50)
ENDPOINT = {"host": "127.0.0.1", "port": "55432"}


def raw(name: str) -> str:
    return (DATA / name).read_text()


def lines_of(name: str) -> dict[tuple[str, str], str]:
    """The fixture read the simplest way: (section, measurement) -> value."""
    out = {}
    for line in raw(name).splitlines():
        if line.startswith("["):
            section, measurement, value = line.split(", ")
            out[(section.strip("[]"), measurement)] = value
    return out


def workload(**kw: typing.Any) -> YcsbWorkload:
    return YcsbWorkload(**{"name": "w", **kw})


# --- command lines -------------------------------------------------------------------------------


def test_argv_is_java_with_the_cache_classpath_and_one_p_per_property() -> None:
    props = {"workload": ycsb.WORKLOAD_CLASS, "postgres.host": "127.0.0.1", "odd": "a value with spaces"}
    args = ycsb.argv("/usr/bin/java", "/var/cache/layerbench/", "postgres", "run", props)
    assert args[:7] == [
        "/usr/bin/java",
        "-cp",
        "/var/cache/layerbench/ycsb/lib/*",
        "site.ycsb.Client",
        "-t",
        "-db",
        "dev.layerbench.ycsb.PostgresDB",
    ]
    assert args[7:] == [
        "-p",
        "workload=site.ycsb.workloads.CoreWorkload",
        "-p",
        "postgres.host=127.0.0.1",
        "-p",
        "odd=a value with spaces",  # one argument: no shell splits it
    ]


def test_argv_phases_and_bindings() -> None:
    assert ycsb.argv("java", "/c", "redis", "load", {})[5:] == ["-load", "-db", "dev.layerbench.ycsb.RedisDB"]
    assert ycsb.argv("java", "/c", "redis", "load", {})[1] == "-XX:TieredStopAtLevel=1"  # a load is not measured
    assert "-XX:TieredStopAtLevel=1" not in ycsb.argv("java", "/c", "redis", "run", {})
    assert ycsb.argv("java", "/c", "redis", "warmup", {})[4] == "-t"  # a warmup is a run whose output is dropped
    assert ycsb.classpath("/c") == "/c/ycsb/lib/*"
    assert set(ycsb.BINDINGS) == {"postgres", "redis", "cql", "mongodb"}
    assert ycsb.argv("java", "/c", "cql", "run", {})[5:] == ["-db", "dev.layerbench.ycsb.CassandraDB"]
    assert ycsb.argv("java", "/c", "mongodb", "run", {})[5:] == ["-db", "dev.layerbench.ycsb.MongoDB"]


def test_a_consistency_level_sets_reads_and_writes_of_the_cql_binding() -> None:
    w = YcsbWorkload(name="a", consistency="quorum")
    props = ycsb.properties(w, ServerSpec(kind="cassandra"), 10, {"host": "h", "port": "9042"}, "run")
    assert props["cassandra.readconsistencylevel"] == props["cassandra.writeconsistencylevel"] == "QUORUM"
    assert (props["cassandra.host"], props["cassandra.port"]) == ("h", "9042")
    unset = ycsb.properties(YcsbWorkload(name="a"), ServerSpec(kind="cassandra"), 10, {}, "run")
    assert not any("consistency" in key for key in unset)  # the binding's default: ONE


@pytest.mark.parametrize("mix", typing.get_args(YcsbMix))
def test_every_mix_sets_all_five_proportions_summing_to_one(mix: str) -> None:
    props = ycsb.properties(workload(mix=mix), PG, 2000, ENDPOINT, "run")
    names = ("readproportion", "updateproportion", "insertproportion", "scanproportion", "readmodifywriteproportion")
    # CoreWorkload fills an unset proportion with its own default (read 0.95, update 0.05): none is left unset.
    assert sum(float(props[n]) for n in names) == pytest.approx(1.0)
    assert props["requestdistribution"] in {"zipfian", "uniform", "latest"}
    assert props["workload"] == "site.ycsb.workloads.CoreWorkload"


def test_the_mixes_are_ycsb_s_core_workloads_and_seed_002_s() -> None:
    assert set(ycsb.MIXES) == set(typing.get_args(YcsbMix))
    m = ycsb.MIXES
    assert (m["a"]["readproportion"], m["a"]["updateproportion"], m["a"]["requestdistribution"]) == (
        "0.5",
        "0.5",
        "zipfian",
    )
    assert (m["b"]["readproportion"], m["b"]["updateproportion"]) == ("0.95", "0.05")
    assert m["c"]["readproportion"] == "1"
    assert (m["d"]["insertproportion"], m["d"]["requestdistribution"]) == ("0.05", "latest")
    assert (m["e"]["scanproportion"], m["e"]["insertproportion"]) == ("0.95", "0.05")
    assert (m["e"]["maxscanlength"], m["e"]["scanlengthdistribution"]) == ("100", "uniform")
    assert (m["f"]["readproportion"], m["f"]["readmodifywriteproportion"]) == ("0.5", "0.5")
    assert m["write-heavy"]["insertproportion"] == "1" and m["write-heavy"]["readproportion"] == "0"
    assert (m["read-heavy"]["readproportion"], m["read-heavy"]["updateproportion"]) == ("0.95", "0.05")


def test_load_inserts_every_record_from_key_zero_without_a_time_bound() -> None:
    props = ycsb.properties(workload(threads=4), PG, 5000, ENDPOINT, "load")
    assert (props["recordcount"], props["insertstart"], props["insertcount"]) == ("5000", "0", "5000")
    assert props["operationcount"] == "5000"  # a zipfian chooser reads it at init, even when loading
    assert props["threadcount"] == "4"
    assert "maxexecutiontime" not in props and "target" not in props and "measurement.interval" not in props
    assert (props["fieldcount"], props["fieldlength"]) == ("10", "100")
    assert (props["measurementtype"], props["hdrhistogram.percentiles"]) == ("hdrhistogram", "50,95,99,99.9")
    assert (props["postgres.host"], props["postgres.port"]) == ("127.0.0.1", "55432")


def test_a_run_is_bounded_by_whole_seconds_and_inserts_above_the_current_records() -> None:
    w = workload(mix="write-heavy", runtime_s=1.5, warmup_s=0.2)
    run = ycsb.properties(w, REDIS, 12345, {"host": "h", "port": "1"}, "run")
    assert run["maxexecutiontime"] == "2"  # YCSB parses an int: 1.5 would fail
    assert (run["recordcount"], run["insertstart"]) == ("12345", "0")  # new keys are 12345, 12346, ...
    assert "insertcount" not in run
    assert run["operationcount"] == str(ycsb.INT_MAX)
    assert (run["redis.host"], run["redis.port"], run["fieldcount"], run["fieldlength"]) == ("h", "1", "4", "50")
    assert ycsb.properties(w, REDIS, 1, {}, "warmup")["maxexecutiontime"] == "1"


def test_a_target_rate_measures_from_the_intended_start_too() -> None:
    props = ycsb.properties(workload(mix="a", threads=8, runtime_s=20, target_ops=500), PG, 100, ENDPOINT, "run")
    assert (props["target"], props["measurement.interval"]) == ("500", "both")
    # The client never runs ahead of its schedule: the time ends the run, not the count.
    assert props["operationcount"] == str(500 * 21 + 8)
    assert "target" not in ycsb.properties(workload(target_ops=500), PG, 100, ENDPOINT, "load")


def test_the_distribution_overrides_the_mix_s() -> None:
    props = ycsb.properties(workload(mix="a", distribution="uniform"), PG, 100, ENDPOINT, "run")
    assert props["requestdistribution"] == "uniform"


def test_hdr_logs_go_to_a_directory_with_its_separator() -> None:
    props = ycsb.properties(workload(), PG, 100, ENDPOINT, "run", hdr_dir="/tmp/x/client-1")
    assert (props["hdrhistogram.fileoutput"], props["hdrhistogram.output.path"]) == ("true", "/tmp/x/client-1/")


def test_endpoint_keys_with_a_dot_are_passed_as_they_are() -> None:
    props = ycsb.properties(workload(), PG, 1, {"user": "bench", "postgres.db": "ycsb"}, "run")
    assert (props["postgres.user"], props["postgres.db"]) == ("bench", "ycsb")


def test_a_zipfian_mix_that_inserts_gets_an_operation_count_sized_to_the_data() -> None:
    # Mix e: the chooser spans records + 2 x 0.05 x operationcount keys; capped at 8 x records of new keys.
    props = ycsb.properties(workload(mix="e"), PG, 2000, ENDPOINT, "run")
    assert props["operationcount"] == "160000"
    assert ycsb.operation_count(workload(mix="e"), props, 2000, 20, expected_ops=1000) == 2000
    # A mix that does not insert is bounded by its time alone, however slow its warm-up was.
    reads = ycsb.properties(workload(mix="b"), PG, 2000, ENDPOINT, "run", expected_ops=1)
    assert reads["operationcount"] == str(ycsb.INT_MAX)
    # Write-heavy chooses no key (every operation inserts), even when told to be zipfian; mix d is "latest".
    heavy = ycsb.properties(workload(mix="write-heavy", distribution="zipfian"), PG, 2000, ENDPOINT, "run")
    assert heavy["operationcount"] == str(ycsb.INT_MAX)
    assert ycsb.properties(workload(mix="d"), PG, 2000, ENDPOINT, "run")["operationcount"] == str(ycsb.INT_MAX)


# --- the report ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_parses_to_what_the_file_says(name: str) -> None:
    result, t = ycsb.parse(raw(name)), lines_of(name)
    assert result.runtime_ms == int(t[("OVERALL", "RunTime(ms)")])
    assert result.throughput == float(t[("OVERALL", "Throughput(ops/sec)")])
    assert result.gc_count == int(t[("TOTAL_GCs", "Count")])
    assert set(result.operations) == {s for s, m in t if m == "Operations"}
    for op_name, op in result.operations.items():
        assert op.count == int(t[(op_name, "Operations")])
        assert op.avg_us == float(t[(op_name, "AverageLatency(us)")])
        assert op.percentiles == {
            "p50": float(t[(op_name, "50thPercentileLatency(us)")]),
            "p95": float(t[(op_name, "95thPercentileLatency(us)")]),
            "p99": float(t[(op_name, "99thPercentileLatency(us)")]),
            "p99.9": float(t[(op_name, "99.9PercentileLatency(us)")]),
        }
        # Successes are timed in the operation's section, failures in <OP>-FAILED.
        if op.returns:
            assert op.count == sum(n for s, n in op.returns.items() if s in ycsb.OK_STATUSES)
            failed = result.operations.get(f"{op_name}-FAILED")
            assert op.errors == (failed.count if failed else 0)


def test_a_run_s_throughput_is_its_operations_over_its_run_time() -> None:
    result = ycsb.parse(raw("postgres-run-a.txt"))
    assert (result.runtime_ms, result.throughput) == (3014, 8888.520238885203)
    read, update = result.operations["READ"], result.operations["UPDATE"]
    assert (read.count, update.count) == (13344, 13446)
    assert read.count + update.count == round(result.throughput * result.runtime_ms / 1000)
    assert (read.min_us, read.max_us, read.percentiles["p99"], read.percentiles["p99.9"]) == (27, 11479, 1116, 3831)
    assert read.returns == {"OK": 13344} and read.errors == 0
    assert result.messages == () and result.exceptions == ()


def test_batched_inserts_of_the_load_are_successes() -> None:
    insert = ycsb.parse(raw("postgres-load.txt")).operations["INSERT"]
    assert insert.returns == {"OK": 20, "BATCHED_OK": 1980}
    assert insert.count == 2000 and insert.errors == 0


def test_a_fixed_rate_run_has_intended_sections_that_dominate_the_measured_ones() -> None:
    ops = ycsb.parse(raw("postgres-run-a-target1000-both.txt")).operations
    assert {"Intended-READ", "Intended-UPDATE", "Intended-CLEANUP"} <= set(ops)
    read, intended = ops["READ"], ops["Intended-READ"]
    assert intended.count == read.count == 1455
    assert (intended.avg_us, intended.percentiles["p99"]) == (537.0357388316152, 8075)
    # Each operation's latency from its intended start is at least its latency from its actual start.
    assert all(intended.percentiles[p] >= read.percentiles[p] for p in read.percentiles)
    assert intended.returns == {} and intended.errors is None  # YCSB counts statuses in READ only


def test_workload_e_scans_and_inserts_new_keys() -> None:
    result = ycsb.parse(raw("redis-run-e-scans.txt"))
    scan = result.operations["SCAN"]
    assert (scan.count, scan.percentiles["p99"], scan.errors) == (13601, 4319, 0)
    assert ycsb.records_after(result, 2000) == 2722  # the next phase's recordcount (README: it was)
    assert ycsb.records_after(ycsb.parse(raw("postgres-run-a.txt")), 2000) == 2000  # no insert


def test_errors_of_a_full_redis_are_counted_and_timed_apart() -> None:
    result = ycsb.parse(raw("redis-run-write-heavy-noeviction-oom.txt"))
    insert, failed = result.operations["INSERT"], result.operations["INSERT-FAILED"]
    assert insert.returns == {"OK": 1493, "ERROR": 41855}
    assert (insert.count, insert.errors, failed.count, failed.errors) == (1493, 41855, 41855, None)
    # A failed insert used up its key number too: the next phase starts above all of them.
    assert ycsb.records_after(result, 38025) == 38025 + 1493 + 41855
    assert "EXECABORT" in (DATA / "redis-run-write-heavy-noeviction-oom.stderr").read_text()


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("redis-run-c-no-server.txt", "site.ycsb.DBException: Redis at 127.0.0.1:56390"),
        # The CQL binding opens its session once for the JVM; each thread's init reports its failure.
        ("cassandra-run-c-no-server.txt", "site.ycsb.DBException: Cassandra at 127.0.0.1:1: AllNodesFailedException"),
    ],
)
def test_a_client_that_could_not_connect_exits_0_and_says_so_only_on_stdout(name: str, said: str) -> None:
    result = ycsb.parse(raw(name))
    assert result.operations == {} and result.throughput == 0.0
    assert len(result.exceptions) == 2  # one per client thread
    assert all(e.startswith(said) for e in result.exceptions)
    assert not any(m.startswith("at ") for m in result.messages)  # stack frames are left out


def test_cql_binding_reports_every_operation_ok_at_quorum_and_scans_in_token_order() -> None:
    d = ycsb.parse(raw("cassandra-run-d-quorum.txt"))
    assert d.operations["READ"].returns == {"OK": d.operations["READ"].count}  # latest keys, inserted or loaded
    assert d.operations["INSERT"].errors == 0 and d.throughput > 0
    e = ycsb.parse(raw("cassandra-run-e-scans.txt"))
    assert e.operations["SCAN"].count > 0 and e.operations["SCAN"].errors == 0


def test_samples_name_each_operation_in_lower_case() -> None:
    result = ycsb.parse(raw("postgres-run-a-target1000-both.txt"))
    got = {(s.metric, s.direction): s for s in ycsb.samples(result, "job-1")}
    assert got[("ops", "")].value == result.throughput and got[("ops", "")].unit == "ops/s"
    assert got[("lat_p99.9_us", "read")].value == result.operations["READ"].percentiles["p99.9"]
    assert got[("lat_avg_us", "intended-read")].value == 537.0357388316152
    assert got[("count", "update")].value == 1380 and got[("errors", "update")].value == 0
    assert ("errors", "intended-read") not in got  # YCSB counts no statuses there: unknown, not zero
    assert not any("cleanup" in d for _, d in got)
    assert {s.job for s in got.values()} == {"job-1"}
    metrics = {m for m, d in got if d == "read"}
    assert metrics == {"lat_avg_us", "lat_min_us", "lat_max_us", "lat_p50_us", "lat_p95_us", "lat_p99_us"} | {
        "lat_p99.9_us",
        "count",
        "errors",
    }


def test_samples_of_failures_and_read_modify_write() -> None:
    result = ycsb.parse(raw("redis-run-write-heavy-noeviction-oom.txt"))
    oom = {(s.metric, s.direction): s.value for s in ycsb.samples(result, "")}
    assert oom[("errors", "insert")] == 41855 and oom[("count", "insert-failed")] == 41855
    rmw = ycsb.YcsbOperation("READ-MODIFY-WRITE", 3, 10.0, 5.0, 20.0, {"p50": 9.0}, {})
    result = ycsb.YcsbResult(1000, 3.0, {rmw.name: rmw}, None, None, ())
    assert {(s.metric, s.direction) for s in ycsb.samples(result, "")} >= {("lat_p50_us", "read-modify-write")}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello\n",
        "Error initializing datastore bindings.\n",
        # A report cut before its [OVERALL] throughput.
        "[OVERALL], RunTime(ms), 3014\n",
    ],
)
def test_output_without_a_report_is_refused(text: str) -> None:
    with pytest.raises(YcsbParseError, match="OVERALL"):
        ycsb.parse(text)


def test_a_report_cut_inside_a_line_or_a_section_is_refused() -> None:
    text = raw("postgres-run-a.txt")
    with pytest.raises(YcsbParseError, match="cut or unknown"):
        ycsb.parse(text[: text.index("[READ], MinLatency") + 12])
    with pytest.raises(YcsbParseError, match=r"\[READ\] section lacks MinLatency\(us\), MaxLatency\(us\)"):
        ycsb.parse(text[: text.index("[READ], MinLatency")])
    with pytest.raises(YcsbParseError, match="not a number"):
        ycsb.parse(text.replace("[READ], AverageLatency(us), 179.5695443645084", "[READ], AverageLatency(us), x"))
    with pytest.raises(YcsbParseError, match="not a whole number"):
        ycsb.parse(text.replace("[READ], Operations, 13344", "[READ], Operations, 13344.5"))


def test_the_jvm_s_own_warnings_before_the_report_are_messages() -> None:
    """As one client printed in the long tier, beside another JVM (its words; the report is a real run's)."""
    said = "[0.001s] Cannot use file /tmp/hsperfdata_root/16681 because it is locked by another process (errno = 11)"
    tagged = "[0.002s][warning][perf,memops] Cannot use file /tmp/hsperfdata_root/16681"
    result = ycsb.parse(f"{said}\n{tagged}\n" + raw("postgres-run-a.txt"))
    assert result.operations["READ"].count == 13344
    assert result.messages[:2] == (said, tagged)


def test_java_doubles_are_read_as_java_prints_them() -> None:
    text = "[OVERALL], RunTime(ms), 0\n[OVERALL], Throughput(ops/sec), NaN\n[X], Operations, 1\n"
    text += "[X], AverageLatency(us), 1.0E7\n[X], MinLatency(us), 1\n[X], MaxLatency(us), Infinity\n"
    result = ycsb.parse(text)
    assert result.throughput != result.throughput  # NaN
    assert (result.operations["X"].avg_us, result.operations["X"].max_us) == (1e7, float("inf"))


# --- latency merged across clients ------------------------------------------------------------------

CLIENTS = [DATA / "hdr-postgres-b-client1", DATA / "hdr-postgres-b-client2"]


def test_one_client_s_log_gives_what_it_printed() -> None:
    merged = ycsb.merge_hdr_logs([CLIENTS[0]])
    printed = ycsb.parse(raw("postgres-run-b-client1.txt")).operations
    assert set(merged) == {"READ", "UPDATE", "CLEANUP"}
    for name in ("READ", "UPDATE"):
        m, p = merged[name], printed[name]
        assert (m.count, m.min_us, m.max_us, m.percentiles, m.clients) == (
            p.count,
            p.min_us,
            p.max_us,
            p.percentiles,
            1,
        )
        assert m.mean_us == pytest.approx(p.avg_us)


def test_two_clients_merge_into_one_histogram_not_an_average_of_percentiles() -> None:
    merged = ycsb.merge_hdr_logs(CLIENTS)
    one, two = (ycsb.parse(raw(f"postgres-run-b-client{i}.txt")).operations["READ"] for i in (1, 2))
    read = merged["READ"]
    assert (one.percentiles["p99"], two.percentiles["p99"]) == (1854, 2117)
    assert read.clients == 2 and read.count == one.count + two.count
    assert (read.min_us, read.max_us) == (min(one.min_us, two.min_us), max(one.max_us, two.max_us))
    # A mixture's percentile lies between its parts' (the mean of the two is not it).
    for p in ycsb.PERCENTILES:
        key = f"p{p}"
        low, high = sorted((one.percentiles[key], two.percentiles[key]))
        assert low <= read.percentiles[key] <= high
    assert read.mean_us == pytest.approx((one.avg_us * one.count + two.avg_us * two.count) / read.count)


def test_merged_samples_use_the_same_names_and_leave_cleanup_out() -> None:
    got = {(s.metric, s.direction): s.value for s in ycsb.merged_samples(ycsb.merge_hdr_logs(CLIENTS), "all")}
    assert got[("count", "read")] == 24901 + 23740
    assert ("lat_p99.9_us", "update") in got and not any(d == "cleanup" for _, d in got)


def test_unreadable_logs_are_refused(tmp_path: Path) -> None:
    good = (CLIENTS[0] / "READ.hdr").read_text().splitlines()
    header_only = tmp_path / "header"
    header_only.mkdir()
    (header_only / "READ.hdr").write_text("\n".join(good[:4]) + "\n")
    with pytest.raises(YcsbParseError, match="no histogram interval"):
        ycsb.merge_hdr_logs([header_only])
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "READ.hdr").write_text("\n".join(good[:4]) + "\n" + good[4][:60] + "\n")
    with pytest.raises(YcsbParseError, match="not a readable HdrHistogram log"):
        ycsb.merge_hdr_logs([cut])
    with pytest.raises(YcsbParseError, match="not a readable"):
        ycsb.read_hdr_log(tmp_path / "missing.hdr")


def test_no_logs_merge_to_nothing(tmp_path: Path) -> None:
    assert ycsb.merge_hdr_logs([tmp_path]) == {}


def test_an_interval_with_more_counts_than_its_header_promises_is_read_whole(tmp_path: Path) -> None:
    # An auto-resizing Java histogram (YCSB's) can carry counts past the header's highest trackable
    # value; hdrh alone fails on it ("Destination array overrun", seen behind Docker's userland proxy).
    wide = HdrHistogram(1, 10**12, 3)
    for value in (120, 350, 10**9):  # a slow outlier: 1,000 s
        wide.record_value(value)
    wide.encoder.payload.payload.highest_trackable_value = 3_600_000  # the header as such a histogram writes it
    payload = wide.encode().decode("ascii")
    with pytest.raises(IndexError, match="Destination array overrun"):
        HdrHistogram.decode(payload)
    head = (CLIENTS[0] / "READ.hdr").read_text().splitlines()[:3]
    log = tmp_path / "UPDATE.hdr"
    log.write_text("\n".join([*head, f"Tag=UPDATE,0.000,1.000,1000000.000,{payload}"]) + "\n")
    read = ycsb.read_hdr_log(log)
    assert read.get_total_count() == 3 and read.get_max_value() == read.get_highest_equivalent_value(10**9)
    assert read.get_min_value() == 120
